"""The cluster handshake is bounded whatever the peer does (issue 23): a tiny local listener that
accepts and stays silent, speaks HTTP, sends garbage or drips a byte at a time, and addresses
that are malformed or of another transport, each refused in one line with exit 2 within
KVVIZ_CONNECT_TIMEOUT_S. No Dask cluster is started here (the scheduler lost mid-run is in
test_cluster.py, marked `cluster`)."""
import socket
import threading
import time

import pytest

from kvviz.cli import main
from kvviz.dask_handshake import parse_address
from kvviz.errors import ScenarioError

from .conftest import SCENARIOS

pytest.importorskip("distributed", reason="the cluster extra (pip install 'kvviz[cluster]')")

SEED = str(SCENARIOS / "rope_prefetch_16.toml")
TIMEOUT_S = 1.5


class Peer:
    """A listener on 127.0.0.1 that answers each connection with `behave(conn)` in a thread."""

    def __init__(self, behave):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.behave, self.stop = behave, threading.Event()
        self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn):
        try:
            self.behave(conn, self.stop)
        except OSError:
            pass
        finally:
            self.stop.wait(10)
            conn.close()

    def close(self):
        self.stop.set()
        self.sock.close()


def silent(conn, stop):
    stop.wait(30)


def http(conn, stop):
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


def garbage(conn, stop):
    conn.sendall(bytes(range(256)) * 4)


def drip(conn, stop):
    for b in b"\x3a\x00\x00\x00\x00\x00\x00\x00" + b"\x01" * 58:  # a plausible length, then too slowly
        if stop.wait(0.4):
            return
        conn.sendall(bytes([b]))


def closes(conn, stop):
    conn.close()


def _sweep(address, capsys):
    t = time.monotonic()
    code = main(["sweep", SEED, "--set", "sequence.length=2000", "--param", "cache.slots", "--values", "8,16",
                 "--metric", "speedup", "--executor", address])
    took = time.monotonic() - t
    err = capsys.readouterr().err
    return code, err.strip().splitlines(), took


@pytest.mark.parametrize("behave, says", [(silent, "sent 0 of the 8 bytes"), (http, "does not speak Dask"),
                                          (garbage, "does not speak Dask"), (drip, "bytes a Dask scheduler sends"),
                                          (closes, "closed the connection")])
def test_a_peer_that_is_no_dask_scheduler_fails_in_one_line_within_the_timeout(behave, says, capsys, monkeypatch):
    monkeypatch.setenv("KVVIZ_CONNECT_TIMEOUT_S", str(TIMEOUT_S))
    peer = Peer(behave)
    try:
        code, err, took = _sweep(peer.address, capsys)
    finally:
        peer.close()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: --executor: cannot connect to the Dask scheduler at {peer.address}: ")
    assert says in err[0]
    assert took < TIMEOUT_S + 2


def test_replay_is_bounded_the_same_way(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KVVIZ_CONNECT_TIMEOUT_S", str(TIMEOUT_S))
    trace = tmp_path / "t.csv"
    trace.write_text("time,id,size\n1,1,10\n2,2,10\n")
    peer = Peer(silent)
    t = time.monotonic()
    try:
        code = main(["replay", str(trace), "--capacity", "20", "--executor", peer.address])
    finally:
        peer.close()
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "cannot connect to the Dask scheduler" in err[0], err
    assert time.monotonic() - t < TIMEOUT_S + 2


@pytest.mark.parametrize("address, says", [
    ("tcp://::::", "write an IPv6 host in brackets"), ("ftp://x:1", "unsupported scheme 'ftp'"),
    ("inproc://x", "unsupported scheme 'inproc'"), ("tcp://host:0", "port must be 1 to 65535"),
    ("tcp://host:99999", "port must be 1 to 65535"), ("tcp://[::1", "ends with ]"), ("tcp://[zz]:1", "no IPv6"),
    ("tcp://:8786", "no host name"), ("tcp://a b:1", "no host name"), ("10.0.0.5:8786", "unknown executor"),
])
def test_malformed_or_unsupported_addresses_are_refused_at_once(address, says, capsys):
    code, err, took = _sweep(address, capsys)
    assert code == 2 and len(err) == 1 and says in err[0], err


def test_well_formed_addresses_parse():
    assert parse_address("tcp://10.0.0.5:8786") == ("tcp", "10.0.0.5", 8786)
    assert parse_address("tcp://[::1]:99") == ("tcp", "::1", 99)
    assert parse_address("TLS://sched.example.org") == ("tls", "sched.example.org", 8786)
    with pytest.raises(ScenarioError):
        parse_address("tcp://[::1]x")


def test_a_refused_port_still_says_so(capsys, monkeypatch):
    monkeypatch.setenv("KVVIZ_CONNECT_TIMEOUT_S", str(TIMEOUT_S))
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    code, err, took = _sweep(f"tcp://127.0.0.1:{port}", capsys)
    assert code == 2 and len(err) == 1 and "cannot connect" in err[0] and took < TIMEOUT_S + 2, err
