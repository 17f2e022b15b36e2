"""Each tier's defaults, by name: capacity, and read/write latency and bandwidth of moving one
block between it and HBM (the figures the timed engine of issue 21 will use; the untimed replay
reads only the capacities). A value the scenario gives wins.

Where each figure comes from (every one is an ASSUMPTION unless a datasheet is named):
- hbm: bandwidth 2,039 GB/s, the A100-80GB datasheet (as attention_store's hardware.hbm_tbps);
  latency 0 (ours: a hit in HBM moves nothing). Capacity 40 GB (ours: the KV pool left on one
  80 GB GPU beside its share of a tensor-parallel model's weights and activations).
- cxl: a CXL Type-3 memory expander on a PCIe 5.0 ×16 link: 64 GB/s per direction is the link's
  raw rate (PCIe 5.0: 32 GT/s per lane); ours: half of it achieved, 32 GB/s; latency 0.4 µs
  (ours: a few hundred ns of load latency, as CXL memory adds to a DRAM access). 256 GB (ours).
- dram: host DRAM over the GPU's PCIe Gen4 ×16 host link, 26 GB/s effective each way (the
  figure attention_store uses, from CachedAttention §2.4); latency 10 µs (ours: a DMA launch and
  its completion). 512 GB (ours: half of a 1 TB host).
- ssd: one NVMe SSD, 5 GB/s read (CachedAttention: disks deliver < 5 GB/s) and 3 GB/s write (as
  attention_store's defaults); latency 100 µs (ours: the order of a NAND page read). 4 TB (ours).
- remote: a disaggregated pool over one 200 Gb/s RDMA NIC, 25 GB/s (the line rate; ours: no
  protocol loss); latency 20 µs (ours: network round trip and the remote side's DMA). 20 TB (ours).
"""
from __future__ import annotations

from typing import Literal, get_args

TierName = Literal["hbm", "cxl", "dram", "ssd", "remote"]
TIER_NAMES: tuple[TierName, ...] = get_args(TierName)  # top to bottom: the order tiers must be listed in

TIER_DEFAULTS: dict[str, dict[str, float]] = {
    "hbm": {"capacity_gb": 40.0, "read_latency_us": 0.0, "write_latency_us": 0.0,
            "read_gbps": 2039.0, "write_gbps": 2039.0},
    "cxl": {"capacity_gb": 256.0, "read_latency_us": 0.4, "write_latency_us": 0.4,
            "read_gbps": 32.0, "write_gbps": 32.0},
    "dram": {"capacity_gb": 512.0, "read_latency_us": 10.0, "write_latency_us": 10.0,
             "read_gbps": 26.0, "write_gbps": 26.0},
    "ssd": {"capacity_gb": 4000.0, "read_latency_us": 100.0, "write_latency_us": 100.0,
            "read_gbps": 5.0, "write_gbps": 3.0},
    "remote": {"capacity_gb": 20000.0, "read_latency_us": 20.0, "write_latency_us": 20.0,
               "read_gbps": 25.0, "write_gbps": 25.0},
}
