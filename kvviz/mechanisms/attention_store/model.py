"""The `attention_store` scenario: workload, model, hardware, serving options, policies.

Sizes are given in GB (10^9 bytes) and bandwidths in GB/s, as the paper states them; the
simulation converts them once to integer bytes and nanoseconds.
"""
from __future__ import annotations

from typing import Literal

from pydantic import ValidationInfo, field_validator, model_validator

from ...scenario import FieldError, ScenarioBase, Section, param, relative_to_source
from .policies import POLICIES
from .presets import PRESETS

GB = 10**9


class Workload(Section):
    trace_file: str = param("", description="CSV or JSONL of (conversation, turn, arrival_s, input_tokens, "
                                            "output_tokens); empty = the synthetic generator below. "
                                            "A relative path is taken from the scenario file's folder")
    seed: int = param(1, ge=0, description="Seed of the synthetic generator (numpy Generator)")

    @field_validator("trace_file")
    @classmethod
    def _beside_the_scenario(cls, v: str, info: ValidationInfo) -> str:
        return str(relative_to_source(v, info.context)) if v else v
    conversations: int = param(9000, ge=1, le=2_000_000, unit="conversations",
                               description="Conversations generated (paper: ~9K ShareGPT conversations)")
    arrival_rate_per_s: float = param(1.0, gt=0, le=1e6, unit="1/s",
                                      description="Poisson arrival rate of new conversations (paper: λ = 1.0)")
    multi_turn_share: float = param(0.73, ge=0, le=1, unit="share",
                                    description="Share of conversations with more than one turn (paper: 73%)")
    mean_turns_multi: float = param(7.6, ge=2, le=1000, unit="turns",
                                    description="Mean turns of a multi-turn conversation; turns = 1 + geometric "
                                                "(shape: our assumption)")
    max_turns: int = param(100, ge=1, le=10_000, unit="turns", description="Cap on turns per conversation")
    input_tokens_mean: float = param(161.0, gt=0, unit="tokens",
                                     description="Mean user tokens per turn (lognormal; assumption)")
    output_tokens_mean: float = param(338.0, gt=0, unit="tokens",
                                      description="Mean reply tokens per turn (lognormal; assumption)")
    tokens_sigma: float = param(1.0, ge=0, le=4, description="Lognormal sigma of both token counts (assumption)")
    max_turn_tokens: int = param(2048, ge=1, unit="tokens",
                                 description="Cap on a turn's input and on its output (assumption)")
    think_time_mean_s: float = param(60.0, ge=0, unit="s",
                                     description="Mean user think time between turns (exponential; assumption)")


class Model(Section):
    preset: Literal["llama-13b", "llama-65b", "llama-70b", "falcon-40b", "custom"] = param(
        "llama-13b", description="Fills the fields below that are not given (see presets.py for sources)")
    kv_bytes_per_token: int = param(ge=1, unit="B", description="KV-cache bytes per token, all layers")
    layers: int = param(ge=1, le=1000, description="Transformer layers (the unit of layer-wise pre-loading)")
    context_window: int = param(ge=2, unit="tokens", description="Context window")
    prefill_us_per_token: float = param(gt=0, unit="µs", description="GPU prefill time per token")
    decode_us_per_token: float = param(ge=0, unit="µs",
                                       description="Amortised GPU time per output token under batching")

    @model_validator(mode="before")
    @classmethod
    def _fill_preset(cls, data):
        # A preset supplies defaults; anything written in the file or by --set wins.
        if isinstance(data, dict):
            preset = data.get("preset", "llama-13b")
            if preset in PRESETS:
                data = {**PRESETS[preset], **data}
        return data


class Hardware(Section):
    hbm_free_gb: float = param(190.0, gt=0, unit="GB",
                               description="HBM free for KV of the running job and buffers (paper §2.4: 190 GB)")
    dram_gb: float = param(128.0, ge=0, unit="GB", description="Host DRAM for AttentionStore (paper: 128 GB)")
    ssd_gb: float = param(10_000.0, ge=0, unit="GB", description="SSD for AttentionStore (paper: 10 TB); 0 = none")
    gpus: int = param(4, ge=1, le=64, unit="GPUs",
                      description="GPUs of the tensor-parallel group (paper: 4×A100-80GB). Each has its own "
                                  "PCIe link and holds 1/gpus of every layer's KV, so a job's HBM↔DRAM loads and "
                                  "saves run on `gpus` links at once: gpus × pcie_gbps. ASSUMPTION: host DRAM "
                                  "bandwidth (and the root complex) is not the bottleneck at that rate")
    pcie_gbps: float = param(26.0, gt=0, unit="GB/s",
                             description="HBM↔DRAM bandwidth of ONE GPU's link, each way (paper §2.4: PCIe Gen4 "
                                         "×16 ≈ 26 GB/s effective); a job uses gpus links in parallel")
    ssds: int = param(1, ge=1, le=64, unit="SSDs",
                      description="SSD devices holding the ssd_gb tier. A session's blocks are striped over "
                                  "all of them, so a read or write runs at ssds × the per-device bandwidth "
                                  "(ASSUMPTION: even striping). The paper gives the capacity (10 TB) and a "
                                  "per-disk bound (< 5 GB/s), not the number of disks")
    ssd_read_gbps: float = param(5.0, gt=0, unit="GB/s",
                                 description="Read bandwidth of ONE SSD (paper: disks deliver < 5 GB/s)")
    ssd_write_gbps: float = param(3.0, gt=0, unit="GB/s", description="Write bandwidth of ONE SSD (assumption)")
    read_buffer_gb: float = param(0.0, ge=0, unit="GB",
                                  description="Read buffer: lets layer-wise pre-loading start before the GPU frees")
    write_buffer_gb: float = param(2.0, ge=0, unit="GB",
                                   description="Write buffer: absorbs KV not yet saved when decoding ends")
    block_tokens: int = param(16, ge=1, unit="tokens",
                              description="Storage block (vLLM-like); a session occupies whole blocks")

    @property
    def host_link_gbps(self) -> float:
        """HBM↔DRAM bandwidth for one job's KV: each GPU moves its 1/gpus shard on its own link."""
        return self.gpus * self.pcie_gbps


class Serving(Section):
    truncation: Literal["decoupled", "coupled"] = param(
        "decoupled", description="On context overflow: decoupled keeps stored KV valid (saved before RoPE); "
                                 "coupled invalidates it (the history is recomputed)")
    truncation_ratio: float = param(0.5, ge=0, lt=1, unit="share",
                                    description="Share of the window dropped on overflow (paper: 0.5)")
    arrivals: Literal["closed_loop", "recorded"] = param(
        "closed_loop", description="closed_loop: a turn arrives a think time after its previous reply ends; "
                                   "recorded: at its recorded time, but never before the previous reply ends")
    compare_truncation: bool = param(True, description="Also run trace_policy with the other truncation mode "
                                                        "(metrics.truncation)")
    detail_job: int = param(-1, ge=-1, description="Turn (row of the workload) whose layers are drawn one by "
                                                   "one; -1 = the turn with the largest S_buf")


class Store(Section):
    ssd_read_priority: bool = param(
        False, description="false: the SSD serves reads and writes in one FIFO queue, in the order issued. "
                           "true: a demand read (a dispatched job waiting on SSD data) is served before "
                           "queued prefetches and eviction writes, and prefetch reads before eviction writes; "
                           "the request in progress is never preempted, and a read of a session never "
                           "overtakes that session's own queued write. The paper does not say how "
                           "AttentionStore orders SSD IO (it names only separate IO threads for DRAM↔SSD), "
                           "so the default keeps the simple FIFO queue")
    ssd_inclusive: bool = param(
        True, description="true: a session's KV, once written to SSD, stays valid there while the session is "
                          "also in DRAM (reading it back does not delete it), so demoting it again writes only "
                          "the tokens not yet on SSD; the copy occupies SSD space until SSD eviction or "
                          "invalidation removes it. false: exclusive tiers, a session lives in DRAM or on SSD, "
                          "never both, and every demotion writes its whole KV")


class AttentionStoreScenario(ScenarioBase):
    kind: Literal["attention_store"]
    policies: list[str] = param(["recompute", "lru", "fifo", "scheduler_aware", "belady"], min_length=1,
                                description=f"Policies to compare on the same workload (of: {', '.join(POLICIES)})")
    trace_policy: str = param("scheduler_aware", description="Whose run the timeline shows (one of `policies`)")
    workload: Workload = Workload()
    model: Model = Model()
    hardware: Hardware = Hardware()
    serving: Serving = Serving()
    store: Store = Store()

    @model_validator(mode="after")
    def _check(self):
        for i, p in enumerate(self.policies):
            if p not in POLICIES:
                raise FieldError(f"policies[{i}]", f"unknown policy {p!r} (one of: {', '.join(POLICIES)})")
            if p in self.policies[:i]:
                raise FieldError(f"policies[{i}]", f"policy {p!r} is listed twice")
        if self.trace_policy not in self.policies:
            raise FieldError("trace_policy", f"{self.trace_policy!r} is not one of policies "
                                             f"({', '.join(self.policies)})")
        # Items are whole sessions: every tier that stores them must hold one full-context session.
        m, h = self.model, self.hardware
        blocks = -(-m.context_window // h.block_tokens)
        ccps = blocks * h.block_tokens * m.kv_bytes_per_token
        need = f"one session at full context needs {ccps / GB:.3g} GB ({m.context_window} tokens × " \
               f"{m.kv_bytes_per_token} B)"
        if h.dram_gb * GB < ccps:
            raise FieldError("hardware.dram_gb", f"{h.dram_gb} GB cannot hold one session: {need}")
        if 0 < h.ssd_gb * GB < ccps:
            raise FieldError("hardware.ssd_gb", f"{h.ssd_gb} GB cannot hold one session (use 0 for no SSD): {need}")
        if h.hbm_free_gb * GB < ccps + (h.read_buffer_gb + h.write_buffer_gb) * GB:
            raise FieldError("hardware.hbm_free_gb", f"{h.hbm_free_gb} GB cannot hold one running session plus "
                                                     f"the read and write buffers: {need}")
        return self
