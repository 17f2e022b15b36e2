"""Model presets for 4×A100-80GB serving (the paper's testbed, §4.1).

The paper evaluates LLaMA-13B and LLaMA-65B (the original LLaMA-1 models, 2,048-token
window), LLaMA-70B (LLaMA-2; Meta released no LLaMA-1 70B) and Falcon-40B.

Which numbers are the paper's and which are ours:
- kv_bytes_per_token = 2 (K and V) × layers × KV heads × head dim × 2 bytes (FP16), from each
  model's published architecture:
  - LLaMA-13B (LLaMA-1): 40 layers, d_model 5120 = 40 heads × 128, full multi-head attention
    (Touvron et al. 2023, "LLaMA: Open and Efficient Foundation Language Models", Table 2):
    2 × 40 × 5120 × 2 = 819,200 B.
  - LLaMA-65B (LLaMA-1): 80 layers, d_model 8192 = 64 heads × 128 (same Table 2):
    2 × 80 × 8192 × 2 = 2,621,440 B = 2.5 MiB, which is also the paper's figure (§2.4).
  - LLaMA-70B (LLaMA-2): 80 layers, 64 query heads but grouped-query attention with 8 KV
    heads of dim 128 (Touvron et al. 2023, "Llama 2", §2.2 and Table 1; HF config
    meta-llama/Llama-2-70b-hf: num_key_value_heads = 8): 2 × 80 × 8 × 128 × 2 = 327,680 B.
  - Falcon-40B: 60 layers, d_model 8192 = 128 query heads × 64, "multigroup" attention with
    8 KV heads of dim 64 (HF config tiiuae/falcon-40b: num_kv_heads = 8,
    new_decoder_architecture = true): 2 × 60 × 8 × 64 × 2 = 122,880 B.
- context_window: LLaMA-1 13B and 65B were trained with a 2,048-token context (LLaMA paper
  §2: "context length 2048"; the seed states LLaMA-65B's 2K window); LLaMA-2 70B 4,096
  (Llama 2 paper, Table 1); Falcon-40B 2,048 (HF config max_position_embeddings / model card).
- params_b: LLaMA-1 Table 2 gives 13.0B and 65.2B; LLaMA-2 70B has ≈ 69.0B; Falcon-40B ≈ 41.8B
  (its HF model card). They set prefill time (2·params FLOPs per token, gpu.py) and the weight
  bytes read by every decode iteration.
- d_model (the attention term of prefill, gpu.py: 4·layers·d_model FLOPs per new token and context
  position) = query heads × head dim, the width of QK^T and AV: LLaMA-13B 5,120 and LLaMA-65B
  8,192 (LLaMA-1 Table 2, "dimension"); LLaMA-2 70B 8,192 (HF config meta-llama/Llama-2-70b-hf:
  hidden_size = 8192, 64 heads × 128; grouped-query attention shares K/V heads but every query
  head still attends); Falcon-40B 8,192 (HF config tiiuae/falcon-40b: hidden_size = 8192,
  128 heads × 64).
- MFU_PAPER: the one timing the paper states (§2.4: 2K tokens of LLaMA-65B prefill in ≈ 360 ms
  on 4×A100 at 312 TFLOP/s each) turned into a utilisation, counting the matmuls and the causal
  attention term of those 2,048 tokens, used for every model (ASSUMPTION).
"""
from __future__ import annotations

from .gpu import calibrated_mfu

MFU_PAPER = round(calibrated_mfu(params=65.2e9, tokens=2048, seconds=0.360, gpus=4, peak_flops=312e12,
                                 layers=80, d_model=8192), 4)

PRESETS: dict[str, dict] = {
    # LLaMA-1 13B: 40 layers × 5120 (40 MHA heads × 128), 2K window.
    "llama-13b": {"kv_bytes_per_token": 2 * 40 * 5120 * 2, "layers": 40, "context_window": 2048,
                  "d_model": 5120, "params_b": 13.0},
    # LLaMA-1 65B: 80 layers × 8192 (64 MHA heads × 128), 2K window; 2.5 MiB/token (paper §2.4).
    "llama-65b": {"kv_bytes_per_token": 2 * 80 * 8192 * 2, "layers": 80, "context_window": 2048,
                  "d_model": 8192, "params_b": 65.2},
    # LLaMA-2 70B: 80 layers, GQA with 8 KV heads × 128, 4K window.
    "llama-70b": {"kv_bytes_per_token": 2 * 80 * 8 * 128 * 2, "layers": 80, "context_window": 4096,
                  "d_model": 8192, "params_b": 69.0},
    # Falcon-40B: 60 layers, multigroup attention with 8 KV heads × 64, 2K window.
    "falcon-40b": {"kv_bytes_per_token": 2 * 60 * 8 * 64 * 2, "layers": 60, "context_window": 2048,
                  "d_model": 8192, "params_b": 41.8},
}
