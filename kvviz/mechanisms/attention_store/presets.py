"""Model presets for 4×A100-80GB serving (the paper's testbed, §4.1).

Which numbers are the paper's and which are ours:
- kv_bytes_per_token: 2 (K and V) × layers × KV width × 2 bytes (FP16), from each model's
  published architecture. LLaMA-65B's 2,621,440 B (2.5 MiB) is the paper's figure (§2.4);
  the others are our arithmetic from the architectures (LLaMA-2-70B and Falcon-40B use
  grouped-query attention with 8 KV heads, hence their small KV).
- context_window: LLaMA-65B 2K is the paper's; LLaMA-13B 4K assumes the LLaMA-2 13B model
  (ASSUMPTION); LLaMA-2-70B 4K and Falcon-40B 2K are the models' published windows.
- prefill_us_per_token: LLaMA-65B 176 µs is the paper's "2K tokens prefill in ≈360 ms"
  (§2.4). The others are ASSUMPTIONS: scaled by parameter count (prefill FLOPs ≈ 2·params
  per token, same utilisation).
- decode_us_per_token: ASSUMPTION (ours): amortised GPU time per output token under
  continuous batching = one decode step (weights read once from HBM at 4 × 2.0 TB/s × 60%
  efficiency ≈ 4.9 TB/s) divided by an assumed running batch of 32 sequences.
"""
from __future__ import annotations

PRESETS: dict[str, dict] = {
    "llama-13b": {"kv_bytes_per_token": 2 * 40 * 5120 * 2, "layers": 40, "context_window": 4096,
                  "prefill_us_per_token": 35.2,   # 176 × 13/65
                  "decode_us_per_token": 166.0},  # 26 GB / 4.9 TB/s / 32
    "llama-65b": {"kv_bytes_per_token": 2 * 80 * 8192 * 2, "layers": 80, "context_window": 2048,
                  "prefill_us_per_token": 176.0,  # paper §2.4: 2K tokens ≈ 360 ms
                  "decode_us_per_token": 829.0},  # 130 GB / 4.9 TB/s / 32
    "llama-70b": {"kv_bytes_per_token": 2 * 80 * 1024 * 2, "layers": 80, "context_window": 4096,
                  "prefill_us_per_token": 189.5,  # 176 × 70/65
                  "decode_us_per_token": 893.0},  # 140 GB / 4.9 TB/s / 32
    "falcon-40b": {"kv_bytes_per_token": 2 * 60 * 512 * 2, "layers": 60, "context_window": 2048,
                   "prefill_us_per_token": 108.3,  # 176 × 40/65
                   "decode_us_per_token": 510.0},  # 80 GB / 4.9 TB/s / 32
}
