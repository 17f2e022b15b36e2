"""tls:// addresses are bounded as tcp:// ones are (issue 23): the TLS handshake is made by
kvviz under KVVIZ_CONNECT_TIMEOUT_S before Dask's connect, so a silent peer or one that speaks
no TLS fails in one line, exit 2; without Dask TLS settings a tls:// address is refused at once.
The handshake here uses a client context that verifies nothing (the peers are no servers)."""
import ssl
import time

import pytest

import kvviz.dask_handshake as handshake

from .test_cluster_handshake import TIMEOUT_S, Peer, _sweep, http, silent

pytest.importorskip("distributed", reason="the cluster extra (pip install 'kvviz[cluster]')")


def _tls(peer: Peer) -> str:
    return peer.address.replace("tcp://", "tls://")


@pytest.fixture
def some_tls_context(monkeypatch):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    monkeypatch.setattr(handshake, "tls_context", lambda: ctx)


def test_without_tls_settings_a_tls_address_is_refused_at_once(capsys, monkeypatch):
    monkeypatch.setattr(handshake, "tls_context", lambda: None)
    peer = Peer(silent)
    try:
        code, err, _ = _sweep(_tls(peer), capsys)
    finally:
        peer.close()
    assert code == 2 and len(err) == 1 and "no TLS settings" in err[0], err


@pytest.mark.parametrize("behave, says", [(silent, "did not answer a TLS handshake"), (http, "TLS handshake failed")])
def test_a_tls_peer_that_does_not_answer_fails_within_the_timeout(behave, says, capsys, monkeypatch, some_tls_context):
    monkeypatch.setenv("KVVIZ_CONNECT_TIMEOUT_S", str(TIMEOUT_S))
    peer = Peer(behave)
    t = time.monotonic()
    try:
        code, err, took = _sweep(_tls(peer), capsys)
    finally:
        peer.close()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: --executor: cannot connect to the Dask scheduler at {_tls(peer)}: ")
    assert says in err[0]
    assert time.monotonic() - t < TIMEOUT_S + 2
