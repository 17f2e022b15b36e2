"""A Dask scheduler address checked before Dask sees it, and its first message read by us
under a deadline. Dask bounds its connect by a timeout, but not what follows: a peer that
accepts and never speaks held `Client(...)` forever, and one speaking HTTP had its first 8
bytes read as a frame length (3 EiB). So the address is parsed here (tcp:// or tls://, a host,
a port), and for tcp:// one bounded read takes the scheduler's greeting, which a Dask scheduler
sends unprompted on accept: an 8-byte length, then msgpack frames holding a dict with its
Python version. For tls:// the TLS handshake is made here first, with Dask's own TLS settings,
under the same deadline (a silent peer, or one speaking no TLS, fails in one line). Anything
else is refused in one line.
"""
from __future__ import annotations

import ipaddress
import os
import re
import socket
import ssl
import struct
import time

from .errors import ScenarioError

SCHEMES = ("tcp", "tls")  # what a remote Dask cluster listens on (inproc: only this process's own)
DEFAULT_PORT = 8786  # Dask's scheduler port
MAX_GREETING_BYTES = 64 * 1024  # a scheduler's greeting is ~60 bytes; a larger length is no Dask
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252})$")


def parse_address(address: str) -> tuple[str, str, int]:
    """(scheme, host, port) of `tcp://HOST:PORT` (host a name, an IPv4 address or [IPv6]), or a
    ScenarioError saying what is wrong with it."""
    example = "give local or a Dask scheduler address such as tcp://10.0.0.5:8786"
    scheme, sep, rest = address.partition("://")
    if not sep:
        raise ScenarioError(f"unknown executor {address!r}: {example}", "--executor")
    if scheme == "inproc" and _this_process(rest):  # a library caller's in-process cluster (tests)
        return scheme, rest, 0
    if scheme.lower() not in SCHEMES:
        raise ScenarioError(f"unsupported scheme {scheme!r} in {address!r}: a Dask scheduler listens on "
                            f"tcp:// (or tls://); {example}", "--executor")
    if rest.startswith("["):  # [IPv6]:port
        host, close, tail = rest[1:].partition("]")
        if not close:
            raise ScenarioError(f"malformed address {address!r}: an IPv6 address ends with ]", "--executor")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ScenarioError(f"malformed address {address!r}: {host!r} is no IPv6 address", "--executor") from None
        port_text = tail[1:] if tail.startswith(":") else None if not tail else "?"
    else:
        if rest.count(":") > 1:
            raise ScenarioError(f"malformed address {address!r}: write an IPv6 host in brackets, "
                                f"tcp://[::1]:8786", "--executor")
        host, colon, port_text = rest.partition(":")
        port_text = port_text if colon else None
        if not _HOST.match(host):
            raise ScenarioError(f"malformed address {address!r}: {host!r} is no host name or address", "--executor")
    if port_text is None:
        return scheme.lower(), host, DEFAULT_PORT
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ScenarioError(f"malformed address {address!r}: the port must be 1 to 65535", "--executor")
    return scheme.lower(), host, int(port_text)


def _this_process(rest: str) -> bool:
    """Dask's in-process addresses read inproc://HOST/PID/N; only this process can reach them."""
    parts = rest.split("/")
    return len(parts) == 3 and parts[1] == str(os.getpid()) and parts[2].isdigit()


def probe(address: str, host: str, port: int, deadline: float) -> None:
    """Connect and read a Dask scheduler's greeting before `deadline` (time.monotonic()), or
    raise ScenarioError saying what the peer did instead."""
    timeout_s = max(deadline - time.monotonic(), 0.001)
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except socket.timeout:
        raise _error(address, f"no connection within {timeout_s:.3g} s") from None
    except OSError as e:
        raise _error(address, f"cannot connect ({e.strerror or type(e).__name__})") from None
    with sock:
        head = _read(sock, 8, address, deadline)
        (total,) = struct.unpack("<Q", head)
        if not 16 <= total <= MAX_GREETING_BYTES:
            raise _error(address, f"the peer does not speak Dask's protocol (its first bytes {_show(head)})")
        body = _read(sock, total, address, deadline)
    if not _is_greeting(body):
        raise _error(address, f"the peer does not speak Dask's protocol (its first bytes {_show(head + body)})")


def _read(sock: socket.socket, n: int, address: str, deadline: float) -> bytes:
    got = bytearray()
    while len(got) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _error(address, f"the peer accepted the connection but sent {len(got)} of the {n} bytes a "
                                  "Dask scheduler sends at once")
        sock.settimeout(left)
        try:
            chunk = sock.recv(n - len(got))
        except socket.timeout:
            continue
        except OSError as e:
            raise _error(address, f"the connection failed ({e.strerror or type(e).__name__})") from None
        if not chunk:
            raise _error(address, "the peer closed the connection without a Dask greeting")
        got += chunk
    return bytes(got)


def _is_greeting(body: bytes) -> bool:
    """Dask's framing: a frame count, each frame's length, the frames; one of them msgpack of a
    dict naming the scheduler's Python."""
    try:
        import msgpack
        (n,) = struct.unpack_from("<Q", body)
        if not 1 <= n <= 8:
            return False
        lengths = struct.unpack_from(f"<{n}Q", body, 8)
        offset = 8 + 8 * n
        if offset + sum(lengths) != len(body):
            return False
        for length in lengths:
            msg = msgpack.unpackb(body[offset:offset + length], raw=False)
            if isinstance(msg, dict) and "python" in msg:
                return True
            offset += length
    except (ImportError, ValueError, struct.error, TypeError) as e:  # msgpack's errors are ValueErrors
        return isinstance(e, ImportError)  # without msgpack Dask cannot run either: let it say so
    return False


def _show(data: bytes) -> str:
    return repr(data[:16]) + ("…" if len(data) > 16 else "")


def _error(address: str, why: str) -> ScenarioError:
    return ScenarioError(f"cannot connect to the Dask scheduler at {address}: {why}", "--executor")


def tls_context() -> ssl.SSLContext | None:
    """The client TLS context Dask's settings give (distributed.comm.tls.*: a CA file, a client
    certificate and key), or None when they give none."""
    from distributed.security import Security
    context: ssl.SSLContext | None = Security().get_connection_args("client").get("ssl_context")
    return context


def probe_tls(address: str, host: str, port: int, deadline: float, context: ssl.SSLContext) -> None:
    """Connect and finish a TLS handshake with `context` before `deadline`, or raise
    ScenarioError: a silent peer, one that speaks no TLS, or a handshake that fails (a
    certificate refused). A peer that ends it with an alert (it wants another certificate) does
    speak TLS: Dask then says what it wants."""
    timeout_s = max(deadline - time.monotonic(), 0.001)
    try:
        raw = socket.create_connection((host, port), timeout=timeout_s)
    except socket.timeout:
        raise _error(address, f"no connection within {timeout_s:.3g} s") from None
    except OSError as e:
        raise _error(address, f"cannot connect ({e.strerror or type(e).__name__})") from None
    with raw:
        try:
            tls = context.wrap_socket(raw, server_hostname=host if context.check_hostname else None,
                                      do_handshake_on_connect=False)
        except (ssl.SSLError, ValueError) as e:
            raise _error(address, f"the TLS settings cannot be used ({e})") from None
        with tls:
            while True:  # the handshake, in steps each bounded by what is left of the deadline
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _error(address, f"the peer accepted the connection but did not answer a TLS "
                                          f"handshake within {timeout_s:.3g} s")
                tls.settimeout(left)
                try:
                    tls.do_handshake()
                    return
                except socket.timeout:
                    continue
                except ssl.SSLError as e:
                    if "ALERT" in (e.reason or "").upper():
                        return  # a TLS peer that wants something else: Dask's connect says what
                    raise _error(address, f"the TLS handshake failed ({e.reason or e})") from None
                except OSError as e:
                    raise _error(address, f"the connection failed during the TLS handshake "
                                          f"({e.strerror or type(e).__name__})") from None
