"""Package list and the compiled engine for the wheel; the rest of the build is declared in
pyproject.toml.

resources/ and scenarios/ stay at the top of the repository (the project's layout) and are
mapped into the wheel as kvviz.resources and kvviz.scenarios (pyproject's package-dir), which a
search of kvviz/ cannot find: they are added here, so a new package under kvviz/ or app/ is found
without a line anywhere.

Every `.pyx` under kvviz/ is compiled (Cython, then the platform's C compiler). A build that cannot
compile (no compiler, no Cython) still installs: kvviz then runs its pure-Python reference engine
and says so in one line (kvviz/mechanisms/attention_store/native/__init__.py).
"""
import runpy
import sys
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
DATA = ["kvviz.scenarios", "kvviz.resources"] + [
    f"kvviz.resources.{d.name}" for d in sorted((HERE / "resources").iterdir())
    if d.is_dir() and d.name != "screenshots"]  # README figures stay out of the wheel


def extensions():
    sources = sorted(str(p.relative_to(HERE)) for p in (HERE / "kvviz").rglob("*.pyx"))
    if not sources:
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("warning: Cython is not installed: the compiled engine is not built", file=sys.stderr)
        return []
    # language_level 3; bounds and wraparound stay checked (an engine bug raises, never corrupts)
    exts = cythonize(sources, quiet=True, compiler_directives={"language_level": 3})
    for ext in exts:  # the sources' hash, compiled in: the loader runs no build of other sources
        ext.define_macros.append(("KVVIZ_SOURCE_HASH", f'"{source_hash(HERE / Path(ext.sources[0]).parent)}"'))
    return exts


def source_hash(folder: Path) -> str:
    """kvviz/serving/native/sources.py's hash (run as a file: kvviz cannot be imported here)."""
    return runpy.run_path(str(HERE / "kvviz/serving/native/sources.py"))["source_hash"](folder)


class OptionalBuildExt(build_ext):
    """A failed compile is a warning, not a failed install: the reference engine runs instead."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # no compiler, missing headers: setuptools raises several kinds
            print(f"warning: the compiled engine was not built ({e}); kvviz runs its Python engine",
                  file=sys.stderr)

    def build_extension(self, ext):
        target = Path(self.get_ext_fullpath(ext.name))
        want = dict(ext.define_macros).get("KVVIZ_SOURCE_HASH", "").strip('"').encode()
        if want and target.exists() and want not in target.read_bytes():
            target.unlink()  # built from other sources (copied in, older): newer than them, yet not current
        try:
            super().build_extension(ext)
        except Exception as e:
            print(f"warning: {ext.name} was not built ({e}); kvviz runs its Python engine", file=sys.stderr)


setup(packages=find_packages(include=["kvviz", "kvviz.*", "app", "app.*"]) + DATA,
      ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
