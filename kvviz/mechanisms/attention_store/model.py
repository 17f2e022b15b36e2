"""The `attention_store` scenario: workload, model, hardware, serving options, policies.

Sizes are given in GB (10^9 bytes) and bandwidths in GB/s, as the paper states them; the
simulation converts them once to integer bytes and nanoseconds.
"""
from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import ValidationError, ValidationInfo, field_validator, model_validator

from ...scenario import FieldError, ScenarioBase, Section, existing_file, param
from ...serving.model_presets import DEFAULT_PRESET, HARDWARE, MFU_PAPER, fp16_weights_gb, free_hbm_gb, with_preset
from .placement import PLACEMENTS

GB = 10**9
# The longest context window of 2025 is 10M tokens (Llama 4 Scout): 10x that bounds every token
# count here, so a typo (1e30) is refused at its field rather than sized or run
MAX_CONTEXT = 100_000_000


class Workload(Section):
    trace_file: str = param("", description="CSV or JSONL of (conversation, turn, arrival_s, input_tokens, "
                                            "output_tokens); empty = the synthetic generator below. "
                                            "A relative path is taken from the scenario file's folder",
                       file=True)
    seed: int = param(1, ge=0, description="Seed of the synthetic generator (numpy Generator)")

    @field_validator("trace_file")
    @classmethod
    def _beside_the_scenario(cls, v: str, info: ValidationInfo) -> str:
        if not v:
            return v
        return str(existing_file(v, info.context, "trace file"))
    conversations: int = param(9000, ge=1, le=2_000_000, unit="conversations",
                               description="Conversations generated (paper: ~9K ShareGPT conversations)")
    arrival_rate_per_s: float = param(1.0, gt=0, le=1e6, unit="1/s",
                                      description="Poisson rate (paper: λ = 1.0). serving.arrivals = closed_loop: "
                                                  "new conversations per second; interleaved and "
                                                  "conversation_poisson: turns per second (our reading of the "
                                                  "paper's λ); saturated: not used")
    multi_turn_share: float = param(0.73, ge=0, le=1, unit="share",
                                    description="Share of conversations with more than one turn (paper: 73%)")
    mean_turns_multi: float = param(7.6, ge=2, le=1000, unit="turns",
                                    description="Mean turns of a multi-turn conversation; turns = 1 + geometric "
                                                "(shape: our assumption)")
    max_turns: int = param(100, ge=1, le=10_000, unit="turns", description="Cap on turns per conversation")
    # token counts at most MAX_CONTEXT (below): a turn longer than any context window is no turn
    input_tokens_mean: float = param(161.0, gt=0, le=MAX_CONTEXT, unit="tokens",
                                     description="Mean user tokens per turn (lognormal; assumption)")
    output_tokens_mean: float = param(338.0, gt=0, le=MAX_CONTEXT, unit="tokens",
                                      description="Mean reply tokens per turn (lognormal; assumption)")
    tokens_sigma: float = param(1.0, ge=0, le=4, description="Lognormal sigma of both token counts (assumption)")
    max_turn_tokens: int = param(2048, ge=1, le=MAX_CONTEXT, unit="tokens",
                                 description="Cap on a turn's input and on its output (assumption)")
    think_time_mean_s: float = param(60.0, ge=0, le=1e7, unit="s",
                                     description="Mean user think time between turns (exponential; assumption)")
    think_time_median_s: float = param(
        30.0, gt=0, le=1e6, unit="s",
        description="serving.arrivals = conversation_poisson only: median gap between a conversation's "
                    "consecutive turns (lognormal; ASSUMPTION, ours: the paper gives no think times)")
    think_time_sigma: float = param(
        1.5, ge=0, le=4, description="serving.arrivals = conversation_poisson only: lognormal sigma of that gap "
                                     "(ASSUMPTION, ours: 1.5 makes a heavy tail, mean = median · e^(σ²/2) ≈ 3.1 × "
                                     "the median, p99 ≈ 33 × the median)")


class Model(Section):
    preset: Literal["llama-13b", "llama-65b", "llama-70b", "falcon-40b", "mistral-7b", "qwen3-32b", "custom"] = param(
        DEFAULT_PRESET, description="Fills the fields below that are not given, and the GPU count and MFU of "
                                    "[hardware] (see kvviz/serving/model_presets.py for sources)")
    kv_bytes_per_token: int = param(ge=1, unit="B", description="KV-cache bytes per token, all layers")
    layers: int = param(ge=1, le=1000, description="Transformer layers (the unit of layer-wise pre-loading)")
    context_window: int = param(ge=2, le=MAX_CONTEXT, unit="tokens", description="Context window")
    params_b: float = param(gt=0, le=10_000, unit="B params",
                            description="Parameters, in billions: 2·params FLOPs per token computed, and "
                                        "2·params bytes of FP16 weights read per decode iteration")
    d_model: int = param(0, ge=0, le=1_000_000,
                         description="Query heads × head dim: prefill's attention term, 4·layers·d_model FLOPs "
                                     "per new token and context position it attends to (causal; kvviz/serving/roofline.py). "
                                     "0 = leave the attention term out (matmuls only)")

    @model_validator(mode="before")
    @classmethod
    def _fill_preset(cls, data: Any) -> Any:
        return with_preset(data)

    @property
    def weights_gb(self) -> float:
        """FP16 weights: 2 bytes per parameter."""
        return fp16_weights_gb(self.params_b)


class Hardware(Section):
    hbm_gb_per_gpu: float = param(80.0, gt=0, le=100_000, unit="GB",
                                  description="HBM of ONE GPU (A100-80GB: 80)")
    hbm_reserve_gb_per_gpu: float = param(
        0.0, ge=0, le=100_000, unit="GB",
        description="HBM of each GPU kept for activations and the runtime, not for KV. ASSUMPTION (the "
                    "paper's arithmetic): §2.4's 190 GB free for LLaMA-65B is 4 × 80 − 130 GB of weights, no "
                    "reserve. vLLM's default (gpu_memory_utilization 0.9) would keep 8 GB per A100-80GB")
    hbm_free_gb: float | None = param(
        None, gt=0, unit="GB",
        description="HBM free for KV after the weights: the running batch's KV blocks, the read and write "
                    "buffers, and (store.tiers with hbm) finished sessions. Not set: computed as gpus × "
                    "(hbm_gb_per_gpu − hbm_reserve_gb_per_gpu) − the model's FP16 weights (LLaMA-65B "
                    "on 4×A100-80GB: 320 − 130.4 = 189.6 GB; paper §2.4: 190 GB)")
    # 1e300 made a FLOP rate of inf and a prefill of 0 ns (a division by zero, no field named). The
    # bound keeps the arithmetic finite, not the hardware real (B200's dense FP16 is ~2,250): toy
    # worlds in the tests take 500,000 for a prefill of 1 µs per token of a 1,000B model
    gpu_peak_tflops: float = param(312.0, gt=0, le=1e9, unit="TFLOP/s",
                                   description="Peak dense FP16 tensor throughput of ONE GPU (A100 datasheet: 312)")
    mfu: float = param(MFU_PAPER, gt=0, le=1, unit="share",
                       description="Model FLOP utilisation of prefill (each model preset sets it). Calibrated on "
                                   "the paper's one figure, a 2K-token LLaMA-65B prefill on 4×A100 in ≈ 360 ms "
                                   "(§2.4); the same utilisation is ASSUMED for every model (kvviz/serving/model_presets.py says why)")
    hbm_tbps: float = param(2.039, gt=0, unit="TB/s", description="HBM bandwidth of ONE GPU (A100-80GB datasheet: 2,039 GB/s)")
    hbm_efficiency: float = param(0.7, gt=0, le=1, unit="share",
                                  description="Share of HBM bandwidth a decode iteration achieves (ASSUMPTION)")
    dram_gb: float = param(128.0, ge=0, unit="GB", description="Host DRAM for AttentionStore (paper: 128 GB)")
    ssd_gb: float = param(10_000.0, ge=0, unit="GB", description="SSD for AttentionStore (paper: 10 TB); 0 = none")
    gpus: int = param(4, ge=1, le=64, unit="GPUs",
                      description="GPUs of the tensor-parallel group (paper: 4×A100-80GB; the model preset sets "
                                  "it: 1 for mistral-7b). Each holds 1/gpus of every layer's KV, so a job's "
                                  "HBM↔DRAM loads and saves are spread over all the group's host links")
    host_link_gbps: float = param(26.0, gt=0, unit="GB/s",
                                  description="HBM↔DRAM bandwidth of ONE host link, each way (paper §2.4: PCIe "
                                              "Gen4 ×16 ≈ 26 GB/s effective)")
    gpus_per_host_link: int = param(
        1, ge=1, le=64, unit="GPUs",
        description="GPUs sharing one host link; must divide gpus. 1: every GPU has its own ×16 link, a job "
                    "moves KV at gpus × host_link_gbps (4×A100: 104 GB/s). 4: the four GPUs share one uplink "
                    "(a PCIe switch), 26 GB/s in all, the paper's own arithmetic (§2.4: a 2K-token 65B KV, "
                    "5 GB, loads in 192 ms). ASSUMPTION: host DRAM and the root complex keep up")
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
    block_tokens: int = param(16, ge=1, le=MAX_CONTEXT, unit="tokens",
                              description="Storage block (vLLM-like); a session occupies whole blocks")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.hbm_reserve_gb_per_gpu >= self.hbm_gb_per_gpu:
            raise FieldError("hbm_reserve_gb_per_gpu", f"{self.hbm_reserve_gb_per_gpu:g} GB leaves "
                                                              f"nothing of hbm_gb_per_gpu ({self.hbm_gb_per_gpu:g} GB)")
        if self.gpus % self.gpus_per_host_link:
            raise FieldError("gpus_per_host_link", f"{self.gpus_per_host_link} does not divide hardware.gpus "
                                                   f"({self.gpus}): every host link serves as many GPUs")
        return self

    @property
    def host_links(self) -> int:
        return self.gpus // self.gpus_per_host_link

    @property
    def host_bw_gbps(self) -> float:
        """HBM↔DRAM bandwidth for one job's KV: each GPU moves its 1/gpus shard, all the links at once."""
        return self.host_links * self.host_link_gbps

    def free_hbm_computed_gb(self, model: Model) -> float:
        """Free HBM as computed from the GPUs and the model's weights (hbm_free_gb not set)."""
        return free_hbm_gb(self.gpus, self.hbm_gb_per_gpu, model.params_b, self.hbm_reserve_gb_per_gpu)


class Serving(Section):
    truncation: Literal["decoupled", "coupled"] = param(
        "decoupled", description="On context overflow: decoupled keeps stored KV valid (saved before RoPE); "
                                 "coupled invalidates it (the history is recomputed)")
    truncation_ratio: float = param(0.5, ge=0, lt=1, unit="share",
                                    description="Share of the window dropped on overflow (paper: 0.5)")
    arrivals: Literal["closed_loop", "recorded", "interleaved", "saturated", "conversation_poisson"] = param(
        "closed_loop", description="When turns are released (each an ASSUMPTION about users). closed_loop: a "
                                   "think time after the previous reply ends. recorded: at the trace's time. "
                                   "interleaved: all turns of all conversations in one random order (order kept "
                                   "within a conversation), Poisson at workload.arrival_rate_per_s turns/s. "
                                   "saturated: every first turn at t = 0, each later turn the moment the "
                                   "previous reply ends (no think time; the rate is not used): the engine runs "
                                   "flat out and makespan_s is the work. conversation_poisson: conversations "
                                   "start as a Poisson process at arrival_rate_per_s / (mean turns per "
                                   "conversation of the workload), a lognormal gap (workload.think_time_median_s, "
                                   "think_time_sigma) between a conversation's turns. recorded, interleaved and "
                                   "conversation_poisson never release a turn before its previous reply ends")
    max_batch: int = param(256, ge=1, le=4096, unit="jobs",
                           description="Most jobs in the running batch (ASSUMPTION: vLLM's default max_num_seqs)")
    compare_truncation: bool = param(True, description="Also run trace_policy with the other truncation mode "
                                                        "(metrics.truncation)")
    detail_job: int = param(-1, ge=-1, description="Turn (row of the workload) whose layers are drawn one by "
                                                   "one; -1 = the turn with the largest S_buf")


class Store(Section):
    lookahead: Literal["waiting_queue", "job_list"] = param(
        "waiting_queue", description="What scheduler-aware prefetch (next L_pw jobs) and eviction (next L_ew "
                                     "jobs) look at. waiting_queue: jobs that have arrived and wait. job_list: "
                                     "the job list in arrival order, including jobs not yet released (our reading "
                                     "of the paper, whose L_ew is thousands of jobs); needs arrivals recorded or "
                                     "interleaved, where release times are known ahead")
    tiers: Literal["dram_ssd", "hbm", "hbm_dram", "hbm_dram_ssd"] = param(
        "dram_ssd", description="Where finished sessions' KV is kept. dram_ssd: host DRAM and SSD (the store; "
                                "a finished session leaves HBM). With hbm, it may also stay in free HBM blocks "
                                "(evicted least recently used first when the batch needs room), and a hit there "
                                "loads nothing. hbm, hbm_dram: the paper's Figure 24 configurations without the "
                                "tiers not named (their capacities are then ignored)")
    ssd_read_priority: bool = param(
        False, description="false: the SSD serves reads and writes in one FIFO queue, in the order issued. "
                           "true: a demand read (a dispatched job waiting on SSD data) is served before "
                           "queued prefetches and eviction writes, and prefetch reads before eviction writes; "
                           "the request in progress is never preempted, and a read of a session never "
                           "overtakes that session's own queued write. The paper does not say how "
                           "AttentionStore orders SSD IO (it names only separate IO threads for DRAM↔SSD), "
                           "so the default keeps the simple FIFO queue")
    save: Literal["async", "sync"] = param(
        "async", description="async (paper §3.2.2): a job's new KV streams to DRAM from the end of its prefill, "
                             "overlapping its decode; what is not saved when it ends waits in the write "
                             "buffer. sync (the ablation of async saving; the paper's gain: 13–15%): when a job's last token is out, its whole "
                             "new KV is written HBM→DRAM on the GPU's critical path (a save stall): its HBM "
                             "blocks are released, and the engine's next iteration boundary, where the "
                             "scheduler admits the next waiting job and the running jobs go on decoding, "
                             "comes only when the write ends. Policies that store nothing save nothing")
    preload: Literal["layerwise", "none"] = param(
        "layerwise", description="layerwise (paper §3.2.1): a prefill iteration's history loads layer by layer "
                                 "while the layers before compute; hardware.read_buffer_gb lets the first "
                                 "layers load before the iteration starts. none (NO-PL, Figure 19): the whole "
                                 "history loads from the iteration's start, and compute begins once it is in")
    load_if_faster: bool = param(
        True, description="true: a job whose history is on SSD (a demand read, or a prefetch still in flight) "
                          "loads it only if that is faster than recomputing it: the rule compares the load "
                          "time (the wait for the SSD's queued IO, as the SSD would serve the read, plus "
                          "the history's bytes streamed SSD→DRAM→HBM at min(SSD read, host link); for a "
                          "prefetch in flight, until it lands plus the host-link load) with the prefill "
                          "time of the history tokens alone under the roofline. Else it recomputes "
                          "(outcome recompute_faster: a miss). false: every SSD hit loads")
    ssd_inclusive: bool = param(
        True, description="true: a session's KV, once written to SSD, stays valid there while the session is "
                          "also in DRAM (reading it back does not delete it), so demoting it again writes only "
                          "the tokens not yet on SSD; the copy occupies SSD space until SSD eviction or "
                          "invalidation removes it. false: exclusive tiers, a session lives in DRAM or on SSD, "
                          "never both, and every demotion writes its whole KV")
    lookahead_horizon_s: float = param(
        3600.0, ge=0, le=1e7, unit="s",
        description="lookahead = job_list with serving.arrivals = conversation_poisson: the job list holds the "
                    "turns whose release time is at most this far ahead of now (ASSUMPTION, ours: an hour, the "
                    "order of the paper's L_ew at 1 turn/s). The other release rules ignore it: under "
                    "recorded and interleaved job_list holds the whole job list; waiting_queue holds only "
                    "jobs that have arrived")


class Cost(Section):
    """Prices for `cost_per_turn` (economics.py). The paper gives no prices, so all are ours."""
    gpu_usd_per_gpu_hour: float = param(
        4.096, ge=0, le=1e4, unit="USD/GPU·h",
        description="One GPU for an hour (ASSUMPTION: AWS EC2 p4d.24xlarge, 8×A100, on-demand US East "
                    "$32.77/h as listed in 2024, divided by 8; the paper gives no prices)")
    dram_usd_per_gb_hour: float = param(
        0.004237, ge=0, le=1e4, unit="USD/GB·h",
        description="One GB of host DRAM for an hour (ASSUMPTION: Google Compute Engine's N1 memory SKU, "
                    "us-central1, on-demand list price 2023-24)")
    ssd_usd_per_gb_hour: float = param(
        0.0001096, ge=0, le=1e4, unit="USD/GB·h",
        description="One GB of SSD for an hour (ASSUMPTION: Google Compute Engine Local SSD at about "
                    "$0.08 per GB-month, US list price, over 730 hours a month, rounded)")


class AttentionStoreScenario(ScenarioBase):
    kind: Literal["attention_store"]
    policies: list[str] = param(["recompute", "lru", "fifo", "scheduler_aware", "belady"], min_length=1,
                                description=f"Policies to compare on the same workload (of: {', '.join(PLACEMENTS)})")
    trace_policy: str = param("scheduler_aware", description="Whose run the timeline shows (one of `policies`)")
    workload: Workload = Workload()
    model: Model = Model()
    hardware: Hardware = Hardware()
    serving: Serving = Serving()
    store: Store = Store()
    cost: Cost = Cost()

    @model_validator(mode="before")
    @classmethod
    def _hardware_of_the_model(cls, data: Any) -> Any:
        # The model preset supplies [hardware] defaults (gpus, mfu), and free HBM not given is
        # computed from the GPUs and the weights; anything written in the file or by --set wins.
        if not isinstance(data, dict) or not isinstance(data.get("model", {}), dict) \
                or not isinstance(data.get("hardware", {}), dict):
            return data
        model = data.get("model", {})
        hw = {**HARDWARE.get(model.get("preset", DEFAULT_PRESET), {}), **data.get("hardware", {})}
        if hw.get("hbm_free_gb") is None:
            try:
                free = Hardware.model_validate(hw).free_hbm_computed_gb(Model.model_validate(model))
            except ValidationError:  # the sections' own validation reports it
                free = None
            hw.pop("hbm_free_gb", None)
            if free is not None and free > 0:  # else _check says why
                hw["hbm_free_gb"] = free
        return {**data, "hardware": hw}

    @model_validator(mode="after")
    def _check(self) -> Self:
        for i, p in enumerate(self.policies):
            if p not in PLACEMENTS:
                raise FieldError(f"policies[{i}]", f"unknown policy {p!r} (one of: {', '.join(PLACEMENTS)})")
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
        if 0 < h.dram_gb * GB < ccps:
            raise FieldError("hardware.dram_gb", f"{h.dram_gb} GB cannot hold one session (use 0 for no DRAM "
                                                 f"tier): {need}")
        if 0 < h.ssd_gb * GB < ccps:
            raise FieldError("hardware.ssd_gb", f"{h.ssd_gb} GB cannot hold one session (use 0 for no SSD): {need}")
        if h.ssd_gb > 0 and h.dram_gb == 0 and "dram" in self.store.tiers:
            raise FieldError("hardware.ssd_gb", "an SSD tier needs DRAM (sessions reach the SSD through DRAM): "
                                                "set hardware.dram_gb or ssd_gb = 0")
        if self.store.lookahead == "job_list" and self.serving.arrivals in ("closed_loop", "saturated"):
            raise FieldError("store.lookahead", f"job_list needs serving.arrivals = recorded, interleaved or "
                                                f"conversation_poisson: with {self.serving.arrivals} no turn's "
                                                f"release time is known before the previous reply ends")
        if h.hbm_free_gb is None:
            raise FieldError("hardware.gpus", f"the weights ({m.weights_gb:.4g} GB) leave no HBM for KV on "
                                              f"{h.gpus} × ({h.hbm_gb_per_gpu:g} − {h.hbm_reserve_gb_per_gpu:g}"
                                              f" reserved) GB: add GPUs or set hardware.hbm_free_gb")
        if h.hbm_free_gb * GB < ccps + (h.read_buffer_gb + h.write_buffer_gb) * GB:
            raise FieldError("hardware.hbm_free_gb", f"{h.hbm_free_gb:.4g} GB cannot hold one running session "
                                                     f"plus the read and write buffers: {need}")
        return self
