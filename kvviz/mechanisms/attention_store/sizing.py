"""The paper's §2.4 sizing figures, as this model gives them (metrics.sizing), so each can be
set beside the paper's number (seed 003: a 2K-token LLaMA-65B KV is 5 GB, loads in 192 ms over
PCIe, prefills in 360 ms; KV is generated at ~13.9 GB/s and fills 190 GB of free HBM in 14 s; spilling
to 512 GB of host memory buys < 1 minute).
All follow from the scenario's model and hardware; nothing here is fitted to those numbers.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...serving.roofline import Roofline
    from .model import AttentionStoreScenario

TOKENS = 2048  # the paper's example: a 2K-token context


def sizing(sc: AttentionStoreScenario, gpu: Roofline) -> dict[str, float]:
    """`gpu`: the run's roofline (kvviz.serving.roofline.Roofline)."""
    h, kv = sc.hardware, sc.model.kv_bytes_per_token
    hbm_free_gb = h.hbm_free_gb
    assert hbm_free_gb is not None  # a validated scenario has it (AttentionStoreScenario._check refuses None)
    prefill_s = gpu.prefill_ns(TOKENS) / 1e9
    # KV written per second while the GPU prefills flat out (compute-bound, at the calibrated MFU)
    fill_bps = TOKENS * kv / prefill_s
    return {
        "kv_2k_gb": TOKENS * kv / 1e9,
        # one job's KV over the HBM↔DRAM links the store loads it on (store.Store.load_bw)
        "load_2k_ms": TOKENS * kv / (h.host_bw_gbps * 1e9) * 1e3,
        "prefill_2k_ms": prefill_s * 1e3,
        "kv_fill_gbps": fill_bps / 1e9,
        "hbm_fill_s": hbm_free_gb * 1e9 / fill_bps,
        # The time the same flat-out KV takes to fill host DRAM (hardware.dram_gb) once it spills out of
        # HBM: the paper's "512 GB of host memory buys < 1 minute" is this at dram_gb = 512. Closed form
        # (capacity over rate), not an event of the run: at the run's own arrivals DRAM fills at the
        # rate turns arrive, which is not the paper's figure.
        "dram_fill_s": h.dram_gb * 1e9 / fill_bps,
    }
