"""Reading and writing files: a failure never leaves a half-written one behind; big scratch
files go to memory where there is room, and what a killed process left there is removed."""
from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator, Sequence


def read_text(path: str | Path, what: str = "file", limit: int | None = None) -> str:
    """A UTF-8 text file, or a ScenarioError naming it (`what` says which input it is). A
    byte-order mark, which some Windows editors write, is dropped. At most `limit` bytes
    (default: the cap limits.py names for `what`)."""
    return decode_text(read_capped(path, what, limit), path, what)


def decode_text(data: bytes, path: str | Path, what: str = "file") -> str:
    """Bytes read_capped gave as read_text reads them (UTF-8, a byte-order mark dropped)."""
    from .errors import ScenarioError
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"cannot read {what}: not UTF-8 text (byte {e.start})", str(path)) from None


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def open_regular(path: str | Path, what: str = "file", limit: int | None = None) -> BinaryIO:
    """A binary file object for `path` if it is a regular file of at most `limit` bytes, else a
    ScenarioError naming it. Opened without blocking, then checked on the open descriptor: a
    FIFO, a device (/dev/zero) or a folder is refused at once, whatever the path's name says."""
    from .errors import ScenarioError
    from .limits import read_cap
    limit = read_cap(what) if limit is None else limit
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise ScenarioError(f"{what} not found", str(path)) from None
    except OSError as e:
        raise ScenarioError(f"cannot read {what}: {e.strerror or e}", str(path)) from None
    try:
        st = os.fstat(fd)
        kind = next((name for test, name in _KINDS if test(st.st_mode)), None)
        if kind or not stat.S_ISREG(st.st_mode):
            raise ScenarioError(f"is {kind or 'not a regular file'}: kvviz reads a {what} only from a regular file",
                                str(path))
        if st.st_size > limit:
            raise ScenarioError(f"{what} of {st.st_size:,} bytes: kvviz reads at most {limit:,}", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: str | Path, what: str = "file", limit: int | None = None) -> bytes:
    """All bytes of a regular file of at most `limit` bytes (see open_regular); a file that grew
    past the cap while being read is refused too. Read as one block of the size the file has
    when opened (no chunks to join: a copy of 34 MB saved), then in chunks if it grew, so memory
    follows the file, not the cap (one read of cap + 1 bytes allocated gigabytes for a file of
    ten)."""
    from .errors import ScenarioError
    from .limits import read_cap
    limit = read_cap(what) if limit is None else limit
    with open_regular(path, what, limit) as f:
        try:
            whole = f.read(min(os.fstat(f.fileno()).st_size, limit) + 1)  # + 1: a file grown since shows it
            chunks, total = [whole], len(whole)
            while total <= limit:
                chunk = f.read(min(READ_CHUNK, limit + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        except OSError as e:
            raise ScenarioError(f"cannot read {what}: {e.strerror or e}", str(path)) from None
    if total > limit:
        raise ScenarioError(f"{what} is longer than kvviz reads ({limit:,} bytes)", str(path))
    return b"".join(chunks)


READ_CHUNK = 1 << 20


# --- writing: every file kvviz writes goes through atomic_write_set ----------------------------
# A save goes to a temporary beside its target, named `.NAME.kvviz-XXXXXXXX.part` (a pattern no
# user's file has), and is renamed over the target only when complete. A killed save leaves
# such a partial; the next save of that target removes it, and nothing else.

PART_PREFIX, PART_SUFFIX = ".kvviz-", ".part"


class UnsafeTarget(OSError):
    """A target kvviz will not replace: not a regular file, read-only, or a dangling link."""

    def __init__(self, why: str, path: str | Path):
        super().__init__(errno.EPERM, why, str(path))


def write_target(path: str | Path) -> Path:
    """The regular file a save of `path` replaces: `path` itself, or the file a symlink names
    (the link stays a link). UnsafeTarget when that is not a regular file kvviz may replace."""
    path = Path(path)
    real = Path(os.path.realpath(path))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        if path.is_symlink():
            raise UnsafeTarget("is a link to a file that does not exist", path) from None
        return real
    kind = next((name for test, name in _KINDS if test(st.st_mode)), None)
    if kind or not stat.S_ISREG(st.st_mode):
        raise UnsafeTarget(f"is {kind or 'not a regular file'}: kvviz writes only regular files", path)
    if not st.st_mode & 0o222 or not os.access(real, os.W_OK):  # root may write anything: the mode says no
        raise UnsafeTarget("is read-only: kvviz does not replace it", path)
    return real


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, data: str | bytes) -> Path:
    """Write one file atomically (atomic_write_set); returns the file written."""
    return atomic_write_set([(path, data)])[0]


def atomic_write_set(items: Sequence[tuple[str | Path, str | bytes]]) -> list[Path]:
    """Write several files as one: every one to a temporary first (a full disk or a kill leaves
    each target as it was), then all renamed over their targets; should a rename fail, the ones
    already renamed are put back, so the set is the old one or the new one. The renames take
    microseconds: a kill inside them is the one way to mix the sets. Existing files keep their
    permissions; a symlink's target is written, not the link."""
    targets = [write_target(p) for p, _ in items]
    staged: list[tuple[str, Path, str | None]] = []  # (temporary, target, backup of the old file)
    locks: list[int] = []
    try:
        for real, (path, data) in zip(targets, items):
            try:
                tmp, lock = _stage(real, data.encode("utf-8") if isinstance(data, str) else data)
            except OSError as e:  # named as the caller named it, not by the partial's name
                raise OSError(e.errno, e.strerror or str(e), str(path)) from None
            locks += [lock] if lock is not None else []
            staged.append((tmp, real, None))
        staged = [(tmp, real, _backup(real)) for tmp, real, _ in staged]
        done: list[tuple[str, Path, str | None]] = []
        try:
            for (path, _), entry in zip(items, staged):
                try:
                    os.replace(entry[0], entry[1])
                except OSError as e:
                    raise OSError(e.errno, e.strerror or str(e), str(path)) from None
                done.append(entry)
        except BaseException:
            for _, real, backup in reversed(done):  # the old set back, whole
                os.replace(backup, real) if backup else real.unlink(missing_ok=True)
            raise
        for parent in {real.parent for _, real, _ in staged}:
            _fsync_dir(parent)
        return targets
    finally:
        for tmp, _, backup in staged:
            for leftover in (tmp, backup):
                if leftover:
                    Path(leftover).unlink(missing_ok=True)
        for lock in locks:
            os.close(lock)


def _stage(real: Path, data: bytes) -> tuple[str, int | None]:
    """`data` in a fresh partial beside `real`, flushed to disk, with `real`'s permissions."""
    try:
        mode = real.stat().st_mode & 0o777
    except OSError:
        mode = 0o666 & ~_umask()  # mkstemp makes 0600; a new file should read like any file
    remove_stale_partials(real)
    fd, tmp = tempfile.mkstemp(prefix=f".{real.name}{PART_PREFIX}", suffix=PART_SUFFIX, dir=real.parent)
    lock = _lock(tmp)  # held while the set is written: a concurrent save leaves a live partial alone
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        if lock is not None:
            os.close(lock)
        raise
    return tmp, lock


def _backup(real: Path) -> str | None:
    """A second name for the file `real` holds now (a hard link, a partial's name), so a set
    whose later rename fails can put it back; None when there is none or links are not had."""
    if not real.exists():
        return None
    name = str(real.parent / f".{real.name}{PART_PREFIX}{os.urandom(4).hex()}{PART_SUFFIX}")
    try:  # an existing name (a clash of 32 random bits) fails the link: no backup, as on a FAT disk
        os.link(real, name)
        return name
    except OSError:
        return None


def _fsync_dir(folder: Path) -> None:
    """The renames themselves on disk (a power cut after a save keeps the new name)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def partial_names(path: Path) -> re.Pattern[str]:
    """The names of the partials a save of `path` writes beside it, and only those."""
    return re.compile(rf"\.{re.escape(path.name)}{re.escape(PART_PREFIX)}[a-z0-9_]{{8}}{re.escape(PART_SUFFIX)}")


def remove_stale_partials(path: Path) -> list[str]:
    """Remove the partials a killed save of `path` left beside it (none that a live save holds
    locked; none that merely resembles one). Returns the removed paths."""
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(path.parent) if partial_names(path).fullmatch(n)]
    except OSError:
        return removed
    for name in names:
        p = os.path.join(path.parent, name)
        try:
            if not stat.S_ISREG(os.lstat(p).st_mode):
                continue
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            if FLOCK:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.unlink(p)
            removed.append(p)
        except OSError:  # a live save holds it, or it is not ours to remove
            pass
        finally:
            os.close(fd)
    return removed


def scratch_dir(nbytes: int) -> str | None:
    """Where a big temporary file goes (a trace file for libCacheSim, say): /dev/shm (memory) while
    it has ample room, else the default temporary directory. Writing 10M requests (240 MB) took
    1.13 s to the disk-backed /tmp here against 0.19 s to /dev/shm, in a fresh process each."""
    try:
        st = os.statvfs("/dev/shm")
        if os.access("/dev/shm", os.W_OK) and st.f_bavail * st.f_frsize > 4 * nbytes:
            return "/dev/shm"
    except OSError:
        pass
    return None


# --- scratch files that outlive no one ----------------------------------------------------------
# A scratch file or directory is named SCRATCH_PREFIX… and its owner holds a shared flock on it.
# The kernel drops the lock however the owner dies (SIGKILL, the OOM killer), so a later kvviz
# process that can take the lock exclusively knows the owner is gone and removes the leftover:
# in /dev/shm that is memory, held until reboot otherwise. A lock, not a pid, since pids are
# reused and differ between containers that share a directory.

SCRATCH_PREFIX = "kvviz-scratch-"
ORPHAN_AFTER_S = 60.0  # younger entries are skipped: their owner may not have locked them yet


try:
    import fcntl
    FLOCK = True
except ImportError:  # Windows: no flock, so nothing is locked and nothing swept
    FLOCK = False


def _lock(path: str) -> int | None:
    if not FLOCK:
        return None
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def scratch_file(nbytes: int, suffix: str = "", directory: str | None = None) -> tuple[str, int | None]:
    """A new empty file for `nbytes` of temporary data (in `directory`, else scratch_dir) and the
    descriptor that holds its lock: pass both to remove_scratch when done."""
    where = directory or scratch_dir(nbytes)
    sweep_orphans(where)
    fd, path = tempfile.mkstemp(prefix=SCRATCH_PREFIX, suffix=suffix, dir=where)
    os.close(fd)
    return path, _lock(path)


def remove_scratch(path: str, lock_fd: int | None) -> None:
    try:
        shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
    except FileNotFoundError:
        pass
    finally:
        if lock_fd is not None:
            os.close(lock_fd)


@contextmanager
def scratch_tree(nbytes: int | None) -> Iterator[str]:
    """A temporary directory, in memory when `nbytes` (None: unknown) fits there, removed on exit."""
    where = scratch_dir(nbytes) if nbytes is not None else None
    sweep_orphans(where)
    path = tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=where)
    fd = _lock(path)
    try:
        yield path
    finally:
        remove_scratch(path, fd)


def sweep_orphans(directory: str | None) -> list[str]:
    """Remove the scratch entries in `directory` (None: the default temporary directory) whose
    owner has died; returns their paths."""
    directory = directory or tempfile.gettempdir()
    removed: list[str] = []
    if not FLOCK:
        return removed
    try:
        names = [n for n in os.listdir(directory) if n.startswith(SCRATCH_PREFIX)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(directory, name)
        try:
            if time.time() - os.stat(path).st_mtime < ORPHAN_AFTER_S:
                continue
            fd = os.open(path, os.O_RDONLY)
        except OSError:  # gone already, or another user's
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its owner is alive
            os.close(fd)
            continue
        try:
            remove_scratch(path, fd)
            removed.append(path)
        except OSError:
            pass
    return removed
