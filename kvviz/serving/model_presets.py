"""Model presets: each model's architecture and the GPU setup it is served on (AttentionStore's
`[model]` and `[hardware]` defaults; prefix_cache's `[model]`).

The AttentionStore paper (CachedAttention, USENIX ATC 2024: "the paper" below) evaluates LLaMA-13B and LLaMA-65B (the original LLaMA-1 models, 2,048-token
window), LLaMA-70B (LLaMA-2; Meta released no LLaMA-1 70B) and Falcon-40B on 4×A100-80GB
(§4.1); its Figure 4 (history vs new tokens) runs Mistral-7B on one A100.

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
  - Mistral-7B (v0.1): 32 layers, dim 4096 = 32 query heads × 128, grouped-query attention
    with 8 KV heads × 128 (Jiang et al. 2023, "Mistral 7B", Table 1; HF config
    mistralai/Mistral-7B-v0.1: num_key_value_heads = 8): 2 × 32 × 8 × 128 × 2 = 131,072 B.
- context_window: LLaMA-1 13B and 65B were trained with a 2,048-token context (LLaMA paper
  §2: "context length 2048"; the seed states LLaMA-65B's 2K window); LLaMA-2 70B 4,096
  (Llama 2 paper, Table 1); Falcon-40B 2,048 (HF config max_position_embeddings / model card);
  Mistral-7B 8,192 (Mistral paper Table 1, context_len; the HF config's 32,768 is the RoPE
  table, not a trained length). ASSUMPTION (ours): Mistral's 4,096-token sliding window is
  ignored: the whole context's KV is kept and stored (a rolling buffer would cap it at 4,096).
- params_b: LLaMA-1 Table 2 gives 13.0B and 65.2B; LLaMA-2 70B has ≈ 69.0B; Falcon-40B ≈ 41.8B
  (its HF model card); Mistral-7B 7.24B (its HF model card). They set prefill time (2·params
  FLOPs per token, roofline.py), the weight bytes every decode iteration reads, and the weights'
  share of HBM (FP16: 2 bytes per parameter, `fp16_weights_gb`).
- d_model (the attention term of prefill, roofline.py: 4·layers·d_model FLOPs per new token and context
  position) = query heads × head dim, the width of QK^T and AV: LLaMA-13B 5,120 and LLaMA-65B
  8,192 (LLaMA-1 Table 2, "dimension"); LLaMA-2 70B 8,192 (HF config meta-llama/Llama-2-70b-hf:
  hidden_size = 8192, 64 heads × 128; grouped-query attention shares K/V heads but every query
  head still attends); Falcon-40B 8,192 (HF config tiiuae/falcon-40b: hidden_size = 8192,
  128 heads × 64); Mistral-7B 4,096 (its paper's Table 1: dim 4096 = 32 heads × 128).

HARDWARE holds each preset's defaults for the `[hardware]` section (a value the file gives
wins): the GPUs it is served on and its prefill MFU.
- gpus: 4 for the paper's four models (§4.1: 4×A100-80GB), 1 for Mistral-7B (Figure 4: "on 1
  A100").
- mfu: the one timing the paper states (§2.4: 2K tokens of LLaMA-65B prefill in ≈ 360 ms on
  4×A100 at 312 TFLOP/s each) turned into a utilisation, MFU_PAPER, counting the matmuls and the
  causal attention term of those 2,048 tokens. ASSUMPTION (ours): the same utilisation for every
  model. The paper gives no other timing to calibrate on, and any scaling rule (smaller GEMMs per
  GPU at 13B, no tensor-parallel all-reduce on one GPU for Mistral) would be a guess whose
  direction is not even clear; one shared figure at least keeps the models comparable and is one
  `--set hardware.mfu=...` away from another reading.
"""
from __future__ import annotations

from typing import Any

from .roofline import calibrated_mfu

MFU_PAPER = round(calibrated_mfu(params=65.2e9, tokens=2048, seconds=0.360, gpus=4, peak_flops=312e12,
                                 layers=80, d_model=8192), 4)

BYTES_PER_PARAM = 2  # FP16 weights (the paper serves FP16)

DEFAULT_PRESET = "llama-13b"

PRESETS: dict[str, dict[str, float]] = {
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
    # Mistral-7B v0.1: 32 layers × 4096 (32 heads × 128), GQA with 8 KV heads × 128, 8K context
    # (sliding window ignored).
    "mistral-7b": {"kv_bytes_per_token": 2 * 32 * 8 * 128 * 2, "layers": 32, "context_window": 8192,
                   "d_model": 4096, "params_b": 7.24},
    # Qwen3-32B (Hugging Face Qwen/Qwen3-32B config.json and model card): 64 layers, 64 query
    # heads and 8 KV heads of 128 (GQA), 32.8B parameters, 32,768-token native context:
    # 2 × 64 × 8 × 128 × 2 B = 256 KiB of KV per token. llm-d's guides serve it on 2 × H100.
    "qwen3-32b": {"kv_bytes_per_token": 2 * 64 * 8 * 128 * 2, "layers": 64, "context_window": 32768,
                  "d_model": 64 * 128, "params_b": 32.8},
}

HARDWARE: dict[str, dict[str, float]] = {
    "llama-13b": {"gpus": 4, "mfu": MFU_PAPER},
    "llama-65b": {"gpus": 4, "mfu": MFU_PAPER},
    "llama-70b": {"gpus": 4, "mfu": MFU_PAPER},
    "falcon-40b": {"gpus": 4, "mfu": MFU_PAPER},
    "mistral-7b": {"gpus": 1, "mfu": MFU_PAPER},
    "qwen3-32b": {"gpus": 2, "mfu": MFU_PAPER},
}


def with_preset(data: Any, default: str = DEFAULT_PRESET, fields: tuple[str, ...] | None = None) -> Any:
    """A model section's data with its preset's values (or only `fields` of them) as defaults:
    anything written in the file or by --set wins; an unknown preset is left to the Literal."""
    if isinstance(data, dict):
        preset = data.get("preset", default)
        if isinstance(preset, str) and preset in PRESETS:
            values = PRESETS[preset]
            data = {**(values if fields is None else {f: values[f] for f in fields}), **data}
    return data


def fp16_weights_gb(params_b: float) -> float:
    """GB (10^9 B) of FP16 weights: 2 bytes per parameter."""
    return params_b * BYTES_PER_PARAM


def free_hbm_gb(gpus: int, hbm_gb_per_gpu: float, params_b: float, reserve_gb_per_gpu: float) -> float:
    """HBM left for KV: the group's HBM less the weights (split over the GPUs) and a reserve per
    GPU for activations and the runtime. LLaMA-65B on 4×80 GB with no reserve: 320 − 130.4 =
    189.6 GB, the paper's "190 GB" (§2.4)."""
    return gpus * (hbm_gb_per_gpu - reserve_gb_per_gpu) - fp16_weights_gb(params_b)
