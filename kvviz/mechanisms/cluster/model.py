"""The `cluster` scenario: a workload (a request trace or llm-d's shared-prefix generator), the
model, what one instance is (its GPUs, its cache tiers), how many instances and how they are
split, the router, and the optional shared pool.

Sizes are tokens of KV (what the papers state: "3M tokens of cache per node") or GB where a
pool of running KV is meant; bandwidths GB/s, latencies µs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import ValidationInfo, field_validator, model_validator

from ...scenario import FieldError, ScenarioBase, Section, existing_file, param
from ...serving.model_presets import MFU_PAPER, with_preset
from . import routers

ROUTERS = routers.names()
DEFAULT_PRESET = "llama-70b"
EVICTIONS = ("lru", "fifo", "leaf_lru")  # online policies (belady needs the whole stream in one cache)
if TYPE_CHECKING:  # a name to the checker; to pydantic (at run time) a choice among the registry's names
    RouterName = str
    Eviction = str
else:
    RouterName = Literal[ROUTERS]
    Eviction = Literal[EVICTIONS]


class Workload(Section):
    trace_file: str = param("", description="Request trace with block hashes: Mooncake, Qwen/Bailian, plain "
                                            "(kvviz.requests.plain) or RAGPulse (0_trace.jsonl with its side files "
                                            "beside it); empty = llm-d's shared-prefix generator below. A relative "
                                            "path is taken from the scenario file's folder", file=True)

    @field_validator("trace_file")
    @classmethod
    def _beside_the_scenario(cls, v: str, info: ValidationInfo) -> str:
        return str(existing_file(v, info.context, "trace file")) if v else v

    max_requests: int = param(0, ge=0, le=100_000_000, unit="requests",
                              description="Read only the trace's first this many requests (in time order); 0 = all")
    output_tokens: int = param(0, ge=0, le=1_000_000, unit="tokens",
                               description="Every request's reply length; 0 = the trace's own (Mooncake Fig. 10 "
                                           "sets 1: prefill only)")
    block_tokens: int = param(16, ge=1, le=1_000_000, unit="tokens",
                              description="Generator only: tokens per cache block (a trace keeps its own: Mooncake "
                                          "512, Qwen/Bailian 16, RAGPulse one block per chunk)")
    groups: int = param(150, ge=1, le=1_000_000, description="Generator: prefix groups, each with its own system "
                                                             "prompt (llm-d precise-routing guide: 150)")
    prompts_per_group: int = param(5, ge=1, le=1_000_000, description="Generator: prompts (users) per group "
                                                                      "(llm-d: 5)")
    system_prompt_tokens: int = param(6000, ge=0, le=10_000_000, unit="tokens",
                                      description="Generator: tokens of each group's system prompt (llm-d: 6,000)")
    question_tokens: int = param(1200, ge=1, le=10_000_000, unit="tokens",
                                 description="Generator: tokens of each question (llm-d: 1,200)")
    generated_output_tokens: int = param(1000, ge=1, le=1_000_000, unit="tokens",
                                         description="Generator: reply tokens (llm-d: 1,000)")
    stages: list[list[float]] = param([[3.0, 60.0]], min_length=1, max_length=1000,
                                      description="Generator: the QPS ladder, [requests per second, seconds] per "
                                                  "stage, in order (Poisson arrivals within each)")
    multi_turn: bool = param(False, description="Generator: users are sessions whose context grows round by round")
    seed: int = param(1, ge=0, description="Generator: seed (numpy Generator)")

    @field_validator("stages")
    @classmethod
    def _stages(cls, v: list[list[float]]) -> list[list[float]]:
        for i, st in enumerate(v):
            if len(st) != 2 or not all(x > 0 for x in st):
                raise FieldError(f"[{i}]", f"expected [requests per second > 0, seconds > 0], got {st!r}")
        return v


class Model(Section):
    preset: Literal["llama-13b", "llama-65b", "llama-70b", "falcon-40b", "mistral-7b", "qwen3-32b", "custom"] = param(
        DEFAULT_PRESET, description="Model (the serving core's presets, kvviz/serving/model_presets.py); "
                                    "llama-70b's KV is LLaMA3-70B's too: 80 layers, 8 KV heads of 128, 320 KB/token")
    kv_bytes_per_token: int = param(ge=1, le=1 << 40, unit="B", description="KV bytes per token, all layers")
    layers: int = param(ge=1, le=1000, description="Transformer layers (hit blocks load layer by layer)")
    params_b: float = param(gt=0, le=10_000, unit="B params", description="Parameters: prefill and decode times")
    d_model: int = param(0, ge=0, le=1_000_000, description="Query heads × head dim: prefill's attention term")

    @model_validator(mode="before")
    @classmethod
    def _fill_preset(cls, data: Any) -> Any:
        return with_preset(data, DEFAULT_PRESET, ("kv_bytes_per_token", "layers", "params_b", "d_model"))


class Instance(Section):
    """One serving instance: a tensor-parallel GPU group with its own batcher, HBM block cache and
    optional local DRAM tier."""
    gpus: int = param(8, ge=1, le=64, unit="GPUs", description="GPUs of the group (Mooncake: 8×A800)")
    gpu_peak_tflops: float = param(312.0, gt=0, le=1e6, unit="TFLOP/s",
                                   description="Peak dense FP16 of ONE GPU (A800 = A100: 312)")
    mfu: float = param(MFU_PAPER, gt=0, le=1, unit="share",
                       description="Prefill FLOP utilisation (the serving core's calibration; ASSUMPTION)")
    hbm_tbps: float = param(2.039, gt=0, le=1000, unit="TB/s", description="HBM bandwidth of ONE GPU")
    hbm_efficiency: float = param(0.7, gt=0, le=1, unit="share", description="Share of HBM bandwidth decode achieves")
    max_batch: int = param(256, ge=1, le=4096, unit="requests", description="Most requests in the running batch")
    running_kv_gb: float = param(200.0, gt=0, le=1e6, unit="GB",
                                 description="HBM for the running requests' KV, apart from the cached blocks")
    hbm_pool: Literal["split", "shared"] = param(
        "split", description="split: running KV (instance.running_kv_gb) and cached blocks "
                             "(instance.hbm_cache_tokens) in two fixed HBM pools. shared: one pool of "
                             "instance.hbm_cache_tokens as vLLM's: running requests' blocks are held, "
                             "cached blocks fill what is free and give way to running ones")
    hbm_cache_tokens: int = param(100_000, ge=1, le=1 << 40, unit="tokens",
                                  description="HBM block cache, tokens of KV (rounded down to whole blocks); with "
                                              "hbm_pool = shared, the whole HBM KV pool")
    dram_cache_tokens: int = param(0, ge=0, le=1 << 40, unit="tokens",
                                   description="Local DRAM tier under HBM, tokens of KV; 0 = none (Mooncake: 3M)")
    dram_read_gbps: float = param(25.0, gt=0, le=1e6, unit="GB/s", description="DRAM→HBM bandwidth (PCIe)")
    dram_write_gbps: float = param(25.0, gt=0, le=1e6, unit="GB/s", description="HBM→DRAM bandwidth (PCIe)")
    eviction: Eviction = param("lru", description="Every tier's eviction policy")
    load_if_faster: bool = param(True, description="A request whose hit reaches below HBM uses only the leading "
                                                   "hit blocks that end its prefill soonest and recomputes the rest "
                                                   "(the serving core's choice, as the prefix cache's "
                                                   "store.load_if_faster)")
    resume_from_cache: bool = param(
        True, description="A request preempted while decoding (the running pool full) prefills its context again "
                          "when re-admitted. true: it uses the leading blocks of its prompt the instance's tiers "
                          "still hold and recomputes only the rest (the prefix cache's serving.resume_from_cache, "
                          "as vLLM's re-prefill hits its prefix cache). false: it recomputes all of it. A decode "
                          "instance (P/D split) holds no cache: it always recomputes")


class Cluster(Section):
    instances: int = param(1, ge=1, le=1024, unit="instances", description="Serving instances")
    prefill_instances: int = param(0, ge=0, le=1024, unit="instances",
                                   description="0: every instance prefills and decodes. P > 0: the first P only "
                                               "prefill (the router picks among them), the rest only decode; the "
                                               "KV moves over the peer link (Mooncake's disaggregation)")
    peer_gbps: float = param(25.0, gt=0, le=1e6, unit="GB/s",
                             description="Each instance's RDMA NIC towards the others (one link each way; a "
                                         "transfer takes both ends: ASSUMPTION, ours).")
    peer_latency_us: float = param(10.0, ge=0, le=1e9, unit="µs", description="Latency of one peer transfer")

    @model_validator(mode="after")
    def _split(self) -> Self:
        if self.prefill_instances >= self.instances and self.prefill_instances:
            raise FieldError("prefill_instances", f"{self.prefill_instances} leaves no decode instance of "
                                                  f"{self.instances} (0 = every instance does both)")
        return self


class Routing(Section):
    policy: RouterName = param("prefix_affinity", description="The router (kvviz/mechanisms/cluster/routers/,"
                                                                    " one file each)")
    seed: int = param(1, ge=0, description="random: its seed")
    balancing_threshold: float = param(1.5, ge=1, le=1e6,
                                       description="global_cache_aware: fetch the longest prefix from a peer when "
                                                   "best match / own match exceeds this (Mooncake's "
                                                   "kvcache_balancing_threshold; value not published: ASSUMPTION)")
    prefix_weight: float = param(3.0, ge=0, le=1e6, description="precise/approximate_prefix: prefix-match scorer "
                                                                "weight (ASSUMPTION: llm-d's example profile)")
    kv_weight: float = param(2.0, ge=0, le=1e6, description="precise/approximate_prefix: KV-utilisation scorer weight")
    queue_weight: float = param(2.0, ge=0, le=1e6, description="precise/approximate_prefix: queue scorer weight")
    approx_index_blocks: int = param(100_000, ge=1, le=1 << 40, unit="blocks",
                                     description="approximate_prefix: blocks the router remembers per instance (LRU)")
    ttft_slo_s: float = param(0.0, ge=0, le=1e6, unit="s",
                              description="Admission: reject a request whose estimated TTFT (queue + prefill of "
                                          "the unmatched part + fetch) exceeds this; 0 = admit all")


class Pool(Section):
    shared: bool = param(False, description="false: each instance caches in its own tiers only (Mooncake's local "
                                            "cache). true: the instances' DRAM tiers are one pool shared by all "
                                            "(Mooncake Store's global cache): a block any instance wrote is a hit "
                                            "for every instance")
    read_gbps: float = param(25.0, gt=0, le=1e6, unit="GB/s",
                             description="Shared pool: each instance's link to it, towards HBM")
    write_gbps: float = param(25.0, gt=0, le=1e6, unit="GB/s", description="Shared pool: each instance's link into it")
    latency_us: float = param(10.0, ge=0, le=1e9, unit="µs", description="Shared pool: latency of one transfer")


class ClusterScenario(ScenarioBase):
    kind: Literal["cluster"]
    workload: Workload = Workload()
    model: Model = Model()
    instance: Instance = Instance()
    cluster: Cluster = Cluster()
    routing: Routing = Routing()
    pool: Pool = Pool()

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.pool.shared and not self.instance.dram_cache_tokens:
            raise FieldError("pool.shared", "a shared pool is the instances' DRAM tiers pooled: set "
                                            "instance.dram_cache_tokens")
        return self
