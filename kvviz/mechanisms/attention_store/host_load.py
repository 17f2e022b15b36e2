"""AttentionStore's answer to the batcher's `load` (kvviz/serving/kv_source.py): a prefill iteration's
histories come from DRAM over the host link and from SSD on demand (SSD→DRAM→HBM, streamed at
the slower of the two), layer by layer. The host link is one FIFO queue: an iteration's loads
start when the previous iteration's end (`pcie_load_free`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ...serving.kv_source import LayerSchedule
from ...serving.layerwise_prefill import prefill_end
from ...trace import TraceBuilder
from .model import GB, AttentionStoreScenario


class LoadSpans(Protocol):
    """What the load reads of its run (serving.Run; a protocol: importing it would close an import loop)."""
    def load_span(self, t0: int, t1: int, jobs: list[int], dram: int = 0, ssd: int = 0) -> None: ...


class HostLoad:
    """Mixed into store.Store: the host link's load timing and its state."""

    # the store's, read here (store.Store sets them)
    conv: list[int]
    tb: TraceBuilder | None
    run: LoadSpans
    if TYPE_CHECKING:
        def demand_read(self, nbytes: int, bw: float, earliest: int, c: int) -> int: ...

    def _init_host_load(self, sc: AttentionStoreScenario) -> None:
        h = sc.hardware
        self.pcie = h.host_bw_gbps
        self.ssd_stream = min(h.ssds * h.ssd_read_gbps, self.pcie)  # SSD→DRAM→HBM on demand
        self.buf = int(h.read_buffer_gb * GB)
        self.preload = sc.store.preload == "layerwise"
        self.L = sc.model.layers
        self.pcie_load_free = 0

    def load(self, loads: list[int], dram: int, ssd: int, ready: int, S: int, comp_ns: float) -> tuple[int, int, LayerSchedule]:
        L = self.L
        c_layer = int(comp_ns / L)
        layer_bytes = (dram + ssd) / L
        a = int((dram / self.pcie + ssd / self.ssd_stream) / L)
        # With a read buffer, the first k layers may load before the iteration starts,
        # once the data is in DRAM (the job was admitted: it heads the queue now).
        T0 = max(self.pcie_load_free, ready)
        if ssd:  # read on demand once the job runs
            T0 = self.demand_read(ssd, self.ssd_stream, max(T0, S), self.conv[loads[0]])
        if self.preload:
            k = int(self.buf // layer_bytes)
            pe, le_last = prefill_end(S, T0, a, c_layer, L, k)
            layer: LayerSchedule = (T0, a, c_layer, k, S)
        else:  # no pre-loading: every layer loads from the start, then the compute runs
            T0 = max(T0, S)
            le_last = T0 + L * a
            pe = le_last + L * c_layer
            layer = (T0, a, c_layer, L, le_last)
        wait = pe - S - L * c_layer  # layers waiting on loads: the gaps of Figure 7(a)
        self.pcie_load_free = le_last
        if self.tb is not None:
            self.run.load_span(min(T0, le_last), le_last, loads, dram, ssd)
        return pe, wait, layer
