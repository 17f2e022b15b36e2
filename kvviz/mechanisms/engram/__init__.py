"""Engram decode-step prefetch window (seed 001): pool reads issued by the CPU at step start,
hidden behind the GPU's layers before the Engram layer k.

One decode step, as simulated:
- CPU: hash the suffix n-grams of every sequence's newest token (all Engram layers), then
  post one read per distinct row. Rows needed twice in one step are read once (coalesced).
- The prefetch window opens at the start of layer `window_from_layer`. The seed's convention
  (window_from_layer = 1) is  window = sum of t_exec(i), i = 1..k-1 : layer 0's time is
  budgeted for the CPU's hashing and issue, so the reads are released to the pool when
  layer 1 starts. With window_from_layer = 0 the window is layers 0..k-1 and each read
  leaves as soon as the CPU posts it (CPU time then eats into the window).
- Pool: every read waits for one of `max_outstanding` slots, then takes the pool latency,
  then its transfer over a link shared FIFO with the other reads (engram.queue.fifo_link).
  Path B lands it straight in the GPU's HBM staging buffer (peer-to-peer; the link runs at
  the lower of pool and PCIe bandwidth). Path A lands it in a host-DRAM bounce buffer; rows
  are then copied to the GPU in chunks of `copy_rows`, one copy after another on one stream,
  each paying a fixed copy latency plus bytes / PCIe bandwidth.
- GPU: layers run back to back; layer k waits (a stall span) until its last row is staged,
  then consumes the staging rows. Several steps run in a row, each with new tokens.
- MoE baseline, same reads and data path: a router needs layer k-1's hidden state, so the
  reads are released only when layer k-1 ends, and the GPU waits for all of them.

Metrics (µs; for several Engram layers each one is under `layers`, and the worst, the one
with the least slack, is copied to the top level):
  window_us   sum of layer times window_from_layer..k-1 (the seed's formula; stalls excluded)
  fetch_us    window opening -> last row of layer k staged (worst step)
  slack_us    window_us - fetch_us; feasible = slack_us >= 0 (rows arrive in time)
  stall_us    GPU wait at layer k on the timeline (worst step)
  moe_stall_us  the same wait in the MoE baseline (worst step)
  step_time_us  mean decode step; overhead_pct: vs the same steps without Engram
  reads_issued, reads_coalesced, bytes_fetched: summed over all steps (and, at the top
  level, over all Engram layers)
"""
from .. import Mechanism
from .model import EngramWindowScenario, inactive
from .window import estimate, initial_range, simulate

MECHANISM = Mechanism("engram_window", EngramWindowScenario, simulate, estimate, initial_range=initial_range,
                      inactive=inactive)
