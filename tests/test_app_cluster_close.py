"""The window closes at once after a failed cluster connection (issue 23): a Test connection or a
sweep run on a listener that accepts and never answers (or sends a Dask greeting and then goes
silent) fails in one line within KVVIZ_CONNECT_TIMEOUT_S and leaves no work behind that closing
would wait for: no running job, no connection thread."""
import struct
import sys
import threading

import pytest
from PySide6.QtCore import QThread

from .test_cluster_handshake import Peer, silent

pytestmark = pytest.mark.gui
pytest.importorskip("distributed", reason="the cluster extra (pip install 'kvviz[cluster]')")


def greets_then_silent(conn, stop):
    """A Dask scheduler's greeting (what kvviz's probe reads, and Dask's handshake accepts), then
    nothing: Dask waits for the scheduler's reply, and must give up by the deadline."""
    import msgpack
    msg = msgpack.packb({"compression": None, "python": list(sys.version_info[:3]), "pickle-protocol": 5})
    body = struct.pack("<QQ", 1, len(msg)) + msg
    conn.sendall(struct.pack("<Q", len(body)) + body)
    stop.wait(30)


@pytest.fixture
def no_blocking_waits(monkeypatch):
    """QThread.wait on a thread still running is what would hold the window's close."""
    waited = []
    real = QThread.wait

    def wait(self, *args):
        if self.isRunning():
            waited.append(self)
        return real(self, *args)
    monkeypatch.setattr(QThread, "wait", wait)
    return waited


def _left_behind() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("kvviz-dask")]


@pytest.mark.parametrize("behave", [silent, greets_then_silent])
def test_test_connection_then_close(window, qtbot, monkeypatch, no_blocking_waits, behave):
    monkeypatch.setenv("KVVIZ_CONNECT_TIMEOUT_S", "2")
    peer = Peer(behave)
    try:
        sweep = window.view("sweep")
        sweep.run_on.setCurrentText(peer.address)
        sweep.run_on.test_connection()
        qtbot.waitUntil(lambda: not sweep.run_on.testing, timeout=10_000)
        assert sweep.status.text().startswith(f"⚠ --executor: cannot connect to the Dask scheduler at {peer.address}")
        assert _left_behind() == []  # the connect thread ended with the failure, not after
        window.close()
        assert not window.isVisible() and no_blocking_waits == []
    finally:
        peer.close()


def test_a_sweep_run_on_a_silent_listener_then_close(window, qtbot, monkeypatch, no_blocking_waits):
    monkeypatch.setenv("KVVIZ_CONNECT_TIMEOUT_S", "2")
    peer = Peer(greets_then_silent)
    try:
        window.show_view("sweep")
        sweep = window.view("sweep")
        sweep.configure([("cache.slots", "8,16")], "speedup")
        sweep.run_on.setCurrentText(peer.address)
        sweep.run()
        qtbot.waitUntil(lambda: sweep.job is None, timeout=10_000)
        assert "did not finish Dask's handshake" in sweep.status.text()
        assert _left_behind() == []
        window.close()
        assert not window.isVisible() and no_blocking_waits == []
    finally:
        peer.close()
