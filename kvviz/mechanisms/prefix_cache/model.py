"""The `prefix_cache` scenario: a workload of requests with chained block hashes (a trace or the
generator), the model's KV bytes per token, an ordered list of tiers, the cache's semantics, and
the eviction policies compared on the identical workload.

Sizes are GB (10^9 bytes), bandwidths GB/s, latencies µs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import ValidationInfo, field_validator, model_validator

from ...plan_spec import PlanSpec
from ...scenario import FieldError, ScenarioBase, Section, existing_file, param
from ...serving.model_presets import MFU_PAPER, with_preset
from . import evictors
from .tiers import TIER_DEFAULTS, TIER_NAMES, TierName

# the policies registered when the scenario schema is built (lru, leaf_lru, fifo, belady): a tier's
# `eviction` names one of these; `policies` is checked against the registry as it is at load time
EVICTIONS = evictors.names()
if TYPE_CHECKING:  # a name of the registry: a str to the checker, which cannot read the registry
    Eviction = str
else:  # to pydantic (and the scenario reference): one of the names registered now
    Eviction = Literal[("policy",) + EVICTIONS]
DEFAULT_PRESET = "llama-70b"


class Workload(Section):
    trace_file: str = param("", description="Mooncake, Qwen/Bailian or plain (kvviz.requests.plain) request "
                                            "trace, uncompressed (hash_ids of chained prompt blocks); empty = the "
                                            "generator below. A relative path is taken from the scenario file's "
                                            "folder", file=True)

    @field_validator("trace_file")
    @classmethod
    def _beside_the_scenario(cls, v: str, info: ValidationInfo) -> str:
        if not v:
            return v
        p = existing_file(v, info.context, "trace file")
        if p.suffix == ".zst":  # read as JSONL it was "not a Mooncake trace", which misled
            raise ValueError(f"a zstd-compressed trace: decompress it first (zstd -d {p.name}); a scenario reads "
                             f"its trace uncompressed (kvviz replay --prefix reads .zst)")
        return str(p)

    block_tokens: int = param(0, ge=0, le=1_000_000, unit="tokens",
                              description="Tokens per cache block. 0 = the trace's own (Mooncake 512, Qwen/Bailian "
                                          "16), or 16 for the generator (vLLM's default block size). With a trace, "
                                          "a multiple of its own: m consecutive hash_ids make one block (the last "
                                          "id of the group names it, the ids being chained)")
    max_requests: int = param(0, ge=0, le=100_000_000, unit="requests",
                              description="Read only the trace's first this many requests; 0 = all")
    seed: int = param(1, ge=0, description="Seed of the generator (numpy Generator)")
    requests: int = param(1000, ge=1, le=5_000_000, unit="requests", description="Requests generated")
    session_rate_per_s: float = param(2.0, gt=0, le=1e6, unit="1/s",
                                      description="Sessions starting per second (Poisson; ASSUMPTION, ours)")
    system_prompts: int = param(8, ge=1, le=100_000, description="Distinct system prompts; each session uses "
                                                                 "one, picked with Zipf popularity (system_zipf)")
    system_prompt_tokens: int = param(1024, ge=0, le=1_000_000, unit="tokens",
                                      description="Tokens of every system prompt (ASSUMPTION, ours)")
    system_zipf: float = param(1.0, ge=0, le=5, description="Zipf exponent of system-prompt popularity "
                                                            "(0 = uniform; ASSUMPTION, ours)")
    documents: int = param(200, ge=1, le=10_000_000, description="Distinct documents sessions may carry after "
                                                                 "the system prompt (shared across users)")
    document_tokens: float = param(4000.0, gt=0, le=1e6, unit="tokens",
                                   description="Mean document length (lognormal, tokens_sigma; fixed per document)")
    document_share: float = param(0.4, ge=0, le=1, unit="share",
                                  description="Share of sessions that carry a document")
    document_zipf: float = param(1.1, ge=0, le=5, description="Zipf exponent of document popularity (0 = uniform; "
                                                              "ASSUMPTION, ours)")
    multi_turn_share: float = param(0.4, ge=0, le=1, unit="share",
                                    description="Share of non-agent sessions that are multi-turn chats (the rest "
                                                "ask once)")
    mean_turns: float = param(4.0, ge=2, le=1000, unit="turns",
                              description="Mean turns of a multi-turn chat (1 + geometric; ASSUMPTION, ours)")
    user_tokens_mean: float = param(200.0, gt=0, le=1e6, unit="tokens",
                                    description="Mean new user tokens per turn (lognormal)")
    output_tokens_mean: float = param(300.0, gt=0, le=1e6, unit="tokens",
                                      description="Mean reply tokens per turn (lognormal); the reply joins the "
                                                  "next turn's prompt")
    think_time_s: float = param(30.0, ge=0, le=1e6, unit="s",
                                description="Mean gap between a chat's turns (exponential; ASSUMPTION, ours)")
    agent_share: float = param(0.2, ge=0, le=1, unit="share",
                               description="Share of sessions that are agent loops: each step re-sends the whole "
                                           "growing context with the last reply and a tool result appended")
    agent_steps_mean: float = param(8.0, ge=2, le=1000, unit="steps",
                                    description="Mean steps of an agent loop (1 + geometric)")
    agent_step_tokens: float = param(500.0, gt=0, le=1e6, unit="tokens",
                                     description="Mean tool-result tokens appended per agent step (lognormal)")
    agent_gap_s: float = param(2.0, ge=0, le=1e6, unit="s",
                               description="Mean gap between an agent's steps (exponential; ASSUMPTION, ours)")
    tokens_sigma: float = param(0.8, ge=0, le=4, description="Lognormal sigma of every generated length "
                                                             "(ASSUMPTION, ours)")


class Model(Section):
    preset: Literal["llama-13b", "llama-65b", "llama-70b", "falcon-40b", "mistral-7b", "custom"] = param(
        DEFAULT_PRESET, description="Model whose KV bytes per token size a block (the serving core's presets: "
                                    "see kvviz/serving/model_presets.py for the sources)")
    kv_bytes_per_token: int = param(ge=1, le=1 << 40, unit="B",
                                    description="KV-cache bytes per token, all layers (the preset fills it)")
    layers: int = param(ge=1, le=1000, description="Transformer layers: the unit hit blocks load in during a "
                                                  "prefill (timed engine; the preset fills it)")
    params_b: float = param(gt=0, le=10_000, unit="B params", description="Parameters: prefill and decode times "
                                                                          "(timed engine; the preset fills it)")
    d_model: int = param(0, ge=0, le=1_000_000, description="Query heads × head dim: prefill's attention term "
                                                            "(timed engine; the preset fills it)")

    @model_validator(mode="before")
    @classmethod
    def _fill_preset(cls, data: Any) -> Any:
        return with_preset(data, DEFAULT_PRESET, ("kv_bytes_per_token", "layers", "params_b", "d_model"))


class Tier(Section):
    name: TierName = param(description="hbm, cxl, dram, ssd or remote; tiers are listed top "
                                                  "(nearest the GPU) to bottom in that order")
    capacity_gb: float | None = param(None, ge=0, unit="GB",
                                      description="Capacity for cached blocks (tiers.py names each default); "
                                                  "give this or capacity_blocks")
    capacity_blocks: int | None = param(None, ge=1, le=1 << 40, unit="blocks",
                                        description="Capacity in blocks (instead of capacity_gb)")
    read_latency_us: float = param(0.0, ge=0, le=1e9, unit="µs", description="Latency of one transfer "
                                                                              "reading this tier (timed engine: a "
                                                                              "batched transfer pays it once)")
    write_latency_us: float = param(0.0, ge=0, le=1e9, unit="µs", description="Latency of one transfer "
                                                                               "writing this tier (timed engine: a "
                                                                               "batched transfer pays it once)")
    read_gbps: float = param(1.0, gt=0, le=1e6, unit="GB/s", description="Read bandwidth towards HBM")
    write_gbps: float = param(1.0, gt=0, le=1e6, unit="GB/s", description="Write bandwidth into this tier")
    eviction: Eviction = param(
        "policy", description="This tier's eviction; policy = the run's policy (each of `policies` in turn). "
                              "lru, fifo; leaf_lru evicts only blocks with no child resident here, as a radix "
                              "tree does; belady evicts the block used furthest in the future, the entering one "
                              "included, pinned or not (offline: the reference)")

    @model_validator(mode="before")
    @classmethod
    def _defaults_of_the_tier(cls, data: Any) -> Any:
        # The tier's name supplies defaults (tiers.py); anything written in the file or by --set wins.
        if isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"] in TIER_DEFAULTS:
            defaults = dict(TIER_DEFAULTS[data["name"]])
            if data.get("capacity_blocks") is not None:
                defaults.pop("capacity_gb")
            data = {**defaults, **data}
        return data

    @model_validator(mode="after")
    def _one_capacity(self) -> Self:
        if self.capacity_gb is not None and self.capacity_blocks is not None:
            raise FieldError("capacity_blocks", "give capacity_gb or capacity_blocks, not both")
        if self.capacity_gb is None and self.capacity_blocks is None:
            raise FieldError("capacity_gb", "give capacity_gb or capacity_blocks")
        return self

    def blocks(self, block_bytes: int) -> int:
        """Capacity in whole blocks of `block_bytes`."""
        if self.capacity_blocks is not None:
            return self.capacity_blocks
        gb = self.capacity_gb
        assert gb is not None  # _one_capacity: one of the two is given
        return int(gb * 1e9 // block_bytes)


class Cache(Section):
    promote: Literal["copy", "move"] = param(
        "copy", description="A hit below HBM is brought up to HBM. copy: the lower copy stays (and is refreshed "
                            "as used); move: it leaves the lower tier")
    write_policy: Literal["back", "through"] = param(
        "back", description="back: a block enters HBM only and goes down one tier when evicted, unless a lower "
                            "tier holds it already (then it is dropped). through: a block entering HBM is "
                            "written to every lower tier at once (one that holds it counts the write as a use); "
                            "evictions drop it")
    admission: Literal["always", "second_hit", "min_reuse"] = param(
        "always", description="Which computed (missed) blocks enter the cache. always; second_hit: only a block "
                              "some earlier request asked for (an unbounded history of ids: ASSUMPTION, ours); "
                              "min_reuse: only a block the trace asks for at least min_reuse_count more times "
                              "later (offline, clairvoyant like belady: a bound for admission filters)")
    min_reuse_count: int = param(1, ge=1, le=1_000_000, description="admission = min_reuse: later requests a "
                                                                    "block needs to be admitted")
    pin_running: bool = param(
        True, description="true: a running request holds the blocks it has reached in HBM, so no eviction takes "
                          "them (vLLM keeps a reference on every block a running request was allocated; SGLang "
                          "locks its radix nodes): a request longer than HBM keeps its first blocks and the rest "
                          "pass down. false: nothing is held, as a plain cache on the stream of blocks (what "
                          "libCacheSim replays): a request's own insertions may evict its earlier blocks. The "
                          "default is the serving engines' rule, which this mechanism models; it changes LRU "
                          "only for a request with more distinct blocks than HBM holds. `kvviz replay --prefix "
                          "--pin-running / --no-pin-running` is the same setting with the same default. belady "
                          "ignores it (the reference; on hash-chained traces it never picks a pinned block)")
    partial_block: bool = param(
        False, description="false: a prompt's last, partial block is never cached nor looked up (as vLLM); "
                           "true: every hash id counts, the last too (as `kvviz replay --prefix`)")


class Serving(Section):
    timing: bool = param(False, description="false: replay the requests in time order for hits only (no "
                                            "serving times). true: the timed engine: attention_store's "
                                            "continuous batching and roofline serve the requests, hit blocks "
                                            "load over shared tier links (links.rule) (timed.py says each rule)")
    gpus: int = param(4, ge=1, le=64, unit="GPUs", description="GPUs of the tensor-parallel group (as "
                                                               "attention_store's default: 4×A100-80GB)")
    gpu_peak_tflops: float = param(312.0, gt=0, le=1e6, unit="TFLOP/s",
                                   description="Peak dense FP16 of ONE GPU (A100 datasheet: 312)")
    mfu: float = param(MFU_PAPER, gt=0, le=1, unit="share",
                       description="Prefill FLOP utilisation (attention_store's calibration on CachedAttention "
                                   "§2.4; ASSUMPTION: the same for every model)")
    hbm_tbps: float = param(2.039, gt=0, le=1000, unit="TB/s", description="HBM bandwidth of ONE GPU (A100-80GB "
                                                                           "datasheet)")
    hbm_efficiency: float = param(0.7, gt=0, le=1, unit="share",
                                  description="Share of HBM bandwidth a decode iteration achieves (ASSUMPTION, "
                                              "as attention_store)")
    max_batch: int = param(256, ge=1, le=4096, unit="requests", description="Most requests in the running batch")
    running_kv_gb: float = param(100.0, gt=0, le=1e6, unit="GB",
                                 description="HBM for the running requests' KV (prompt and decode), apart from "
                                             "the hbm tier's cached blocks (ASSUMPTION, ours: two fixed pools; "
                                             "vLLM shares one). A request waits while its prompt does not fit")
    resume_from_cache: bool = param(
        True, description="A request preempted while decoding (the running pool full) is re-admitted later and "
                          "prefills its context again. true: it attends over the leading blocks of its prompt "
                          "that the hbm tier still holds for it (pinned there since its admission) and recomputes "
                          "only the rest, as vLLM's re-prefill after a recompute-preemption hits its prefix cache. "
                          "false: it recomputes all of it, cache or not (before this setting existed; a preemption "
                          "then costs its whole prompt again, so a larger cache that admits more requests sooner "
                          "could raise TTFT: docs/mechanisms/plan.md). Timed engine only")


class Store(Section):
    prefetch: bool = param(False, description="Also run every policy with scheduler-aware block prefetch (as "
                                              "`<policy>_prefetch`): while requests wait in the queue, their "
                                              "prefix blocks below prefetch_tier are fetched up into it, and the "
                                              "blocks of the queued requests are protected from eviction. Timed "
                                              "engine only")
    prefetch_lookahead: int = param(8, ge=1, le=100_000, unit="requests",
                                    description="How many queued requests (from the head) prefetch looks at")
    prefetch_tier: TierName = param("dram", description="Where prefetched blocks go (one of the "
                                                                   "tiers; hbm or dram as the issue names)")
    load_if_faster: bool = param(
        True, description="true: a request whose hit includes blocks below HBM uses only the leading hit blocks "
                          "that make its prefill iteration end soonest, and recomputes the rest of its hit: the "
                          "rule compares, for each cut, the iteration's end as the engine would time it now (the "
                          "loads queued behind each link's booked transfers, layer by layer against the "
                          "iteration's compute) with the roofline's prefill of the recomputed tokens given the "
                          "context before them (timed_store.py says the rule). Recomputed hit blocks count as "
                          "hits of their tier and again as its recomputed_hit_blocks. false: every hit block "
                          "below HBM loads over its link. Timed engine only")


class Links(Section):
    rule: Literal["fifo", "demand_first"] = param(
        "fifo", description="How a tier link shares itself between transfers (timed engine; kvviz/serving/links.py says "
                            "each rule). fifo: demand loads, writes and prefetches one after another in "
                            "booking order, so a prefetch booked first delays a demand load by all of its "
                            "length. demand_first: demand loads and writes first (FIFO among themselves); "
                            "prefetches use the link's idle time a block at a time, so a demand load waits "
                            "for at most the one prefetch block in flight (ASSUMPTION, ours: the device can "
                            "stop a prefetch between blocks)")


# One link unit of each tier below HBM, amortised: ASSUMPTION (ours) = a street price over three
# years of continuous use (26,280 hours); no list price per hour exists for these parts.
AMORTISED_HOURS = 3 * 365 * 24


class Cost(Section):
    """Prices for `cost_per_hour` and `cost_per_million_tokens` (pricing.py says how they add up).
    Each default names its source, or says it is ours and why."""
    gpu_usd_per_gpu_hour: float = param(
        4.096, ge=0, le=1e4, unit="USD/GPU·h",
        description="One GPU for an hour, with its HBM for weights and the running pool (AWS EC2 "
                    "p4d.24xlarge, 8×A100, on-demand US East $32.77/h as listed in 2024, divided by 8: "
                    "attention_store's figure)")
    hbm_usd_per_gb_hour: float = param(
        0.0512, ge=0, le=1e4, unit="USD/GB·h",
        description="One GB of HBM holding cached blocks (the hbm tier) for an hour (ASSUMPTION, ours: the "
                    "GPU-hour price over its 80 GB, 4.096 / 80: HBM is bought only with GPUs)")
    cxl_usd_per_gb_hour: float = param(
        0.005084, ge=0, le=1e4, unit="USD/GB·h",
        description="One GB of CXL-attached memory for an hour (ASSUMPTION, ours: host DRAM's price × 1.2; "
                    "an expander holds ordinary DDR DIMMs; no cloud lists CXL memory)")
    dram_usd_per_gb_hour: float = param(
        0.004237, ge=0, le=1e4, unit="USD/GB·h",
        description="One GB of host DRAM for an hour (Google Compute Engine N1 memory SKU, us-central1, "
                    "on-demand list price 2023-24: attention_store's figure)")
    ssd_usd_per_gb_hour: float = param(
        0.0001096, ge=0, le=1e4, unit="USD/GB·h",
        description="One GB of NVMe SSD for an hour (Google Compute Engine Local SSD at about $0.08 per "
                    "GB-month, US list price, over 730 hours: attention_store's figure)")
    remote_usd_per_gb_hour: float = param(
        0.004237, ge=0, le=1e4, unit="USD/GB·h",
        description="One GB of the remote pool for an hour (ASSUMPTION, ours: host DRAM's price; "
                    "Mooncake's pool is other hosts' DRAM)")
    cxl_link_usd_per_hour: float = param(
        round(1300 / AMORTISED_HOURS, 6), ge=0, le=1e4, unit="USD/link·h",
        description="One CXL link (a PCIe 5.0 ×16 expander card, 32 GB/s: tiers.py) for an hour "
                    "(ASSUMPTION, ours: ~$1,300 for the card over three years; capacity is priced apart)")
    dram_link_usd_per_hour: float = param(
        0.0, ge=0, le=1e4, unit="USD/link·h",
        description="One host link (PCIe 4.0 ×16, 26 GB/s: tiers.py) for an hour (ASSUMPTION, ours: 0, "
                    "it comes with the instance)")
    ssd_link_usd_per_hour: float = param(
        0.0, ge=0, le=1e4, unit="USD/link·h",
        description="One NVMe drive's bandwidth (5 GB/s read: tiers.py) for an hour (ASSUMPTION, ours: 0, "
                    "the GB-hour price is the drive's: Local SSD is sold by capacity with its bandwidth)")
    remote_link_usd_per_hour: float = param(
        round(2000 / AMORTISED_HOURS, 6), ge=0, le=1e4, unit="USD/link·h",
        description="One 200 Gb/s RDMA NIC and its switch port (25 GB/s: tiers.py) for an hour "
                    "(ASSUMPTION, ours: ~$2,000 over three years)")


class PrefixCacheScenario(ScenarioBase):
    kind: Literal["prefix_cache"]
    policies: list[str] = param(["lru"], min_length=1,
                                description=f"Eviction policies compared on the same workload, each a run "
                                            f"applied to every tier whose eviction is `policy` (of: "
                                            f"{', '.join(EVICTIONS)})")
    trace_policy: str = param("", description="Whose run the timeline shows (one of `policies`; empty = the "
                                              "first)")
    workload: Workload = Workload()
    model: Model = Model()
    tiers: list[Tier] = param([Tier(name="hbm"), Tier(name="dram"), Tier(name="ssd")], min_length=1, max_length=5,
                              description="The tiers, top (HBM side) to bottom, any subset of hbm, cxl, dram, "
                                          "ssd, remote in that order")
    cache: Cache = Cache()
    serving: Serving = Serving()
    store: Store = Store()
    links: Links = Links()
    cost: Cost = Cost()
    plan: PlanSpec = param(PlanSpec(), description="What `kvviz plan` searches: targets, decision variables, "
                                                   "rates (kvviz/plan_spec.py); never an input of a run")

    @model_validator(mode="after")
    def _check(self) -> Self:
        for i, p in enumerate(self.policies):
            if p not in evictors.names():
                raise FieldError(f"policies[{i}]", f"unknown policy {p!r} (one of: {', '.join(evictors.names())})")
            if p in self.policies[:i]:
                raise FieldError(f"policies[{i}]", f"policy {p!r} is listed twice")
        if self.trace_policy and self.trace_policy not in self.policies:
            raise FieldError("trace_policy", f"{self.trace_policy!r} is not one of policies "
                                             f"({', '.join(self.policies)})")
        ranks = [TIER_NAMES.index(t.name) for t in self.tiers]
        for i in range(1, len(ranks)):
            if ranks[i] <= ranks[i - 1]:
                what = "is listed twice" if ranks[i] == ranks[i - 1] else f"cannot sit below {self.tiers[i - 1].name}"
                raise FieldError(f"tiers[{i}].name", f"{self.tiers[i].name} {what} (order, top to bottom: "
                                                     f"{', '.join(TIER_NAMES)})")
        if self.store.prefetch:
            if not self.serving.timing:
                raise FieldError("store.prefetch", "prefetch works from the serving queue: set serving.timing "
                                                   "= true")
            names = [t.name for t in self.tiers]
            if self.store.prefetch_tier not in names[:-1]:
                raise FieldError("store.prefetch_tier", f"{self.store.prefetch_tier} is not a tier with one "
                                                        f"below it (tiers: {', '.join(names)})")
        return self

    @property
    def run_names(self) -> list[str]:
        """Each run's name: the policies, then (store.prefetch) each again with prefetch."""
        return self.policies + [f"{p}_prefetch" for p in self.policies] * self.store.prefetch

    @property
    def shown_policy(self) -> str:
        return self.trace_policy or self.policies[0]
