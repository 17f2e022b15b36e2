"""The engram_window scenario: model shape, Engram modules, tokens, decode steps and the data
path from the memory pool to the GPU (see the package's docstring for what is simulated)."""
from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import PrivateAttr, ValidationInfo, model_validator

from ...scenario import FieldError, ScenarioBase, Section, param, relative_to_source
from ...units import us_to_ns
from .hashing import MAX_VOCAB, parse_token_file

# --- scenario --------------------------------------------------------------------------

class ModelShape(Section):
    layers: int = param(64, ge=1, le=4096, unit="layers", description="Decoder layers L (numbered 0..L-1)")
    step_time_us: float = param(3600.0, gt=0, le=1e9, unit="µs",
                                description="One decode step at reference_batch; each layer takes "
                                            "step_time_us / layers unless layer_times_us is given")
    layer_times_us: list[float] = param([], unit="µs",
                                        description="Explicit time of each layer at reference_batch "
                                                    "(one per layer); overrides step_time_us if given")
    batch_size: int = param(1, ge=1, le=65_536, unit="sequences",
                            description="Sequences decoding together; each adds one new token per step")
    reference_batch: int = param(1, ge=1, le=65_536, unit="sequences",
                                 description="Batch size at which the layer times hold")
    batch_fixed_share: float = param(1.0, ge=0, le=1, unit="share",
                                     description="Share of a layer's time that does not grow with the batch "
                                                 "(weight reads, launches); the rest grows in proportion to "
                                                 "batch_size / reference_batch")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.layer_times_us:
            if len(self.layer_times_us) != self.layers:
                raise FieldError("layer_times_us", f"needs one time per layer: {self.layers} layers, "
                                                   f"{len(self.layer_times_us)} times")
            for i, t in enumerate(self.layer_times_us):
                if not 0 < t <= 1e9:
                    raise FieldError(f"layer_times_us[{i}]", f"layer time must be > 0 µs (got {t})")
                if us_to_ns(t) < 1:
                    raise FieldError(f"layer_times_us[{i}]", f"{t} µs is below the simulator's 1 ns resolution")
        elif us_to_ns(self.step_time_us / self.layers) < 1:  # every layer would take 0 ns
            raise FieldError("step_time_us", f"{self.step_time_us} µs over {self.layers} layers is under 1 ns "
                                             "per layer, below the simulator's resolution")
        return self


class Engram(Section):
    layer: int | None = param(None, ge=0, le=4095, unit="layer",
                              description="Layer k holding the (single) Engram module; "
                                          "use `layers` instead for several modules")
    layers: list[int] | None = param(None, min_length=1, max_length=64, unit="layer",
                                     description="Layers holding Engram modules, e.g. [2, 15] "
                                                 "(instead of `layer`)")
    window_from_layer: int = param(1, ge=0, le=1, unit="layer",
                                   description="First layer counted in the prefetch window: 1 is the Engram note's "
                                               "convention window = Σ t_exec(i), i = 1..k-1 (layer 0's time "
                                               "goes to CPU hashing and issue; reads leave when layer 1 "
                                               "starts); 0 counts layers 0..k-1 (reads leave as soon as "
                                               "the CPU posts them)")
    compute_us: float = param(0.0, ge=0, le=1e6, unit="µs",
                              description="Extra GPU time of the Engram module in its layer (gate, conv, "
                                          "write-back); 0 = hidden in the layer time")
    orders: list[int] = param([2, 3], min_length=1, max_length=8, unit="tokens",
                              description="N-gram orders hashed (suffix n-grams ending at the new token)")
    heads: int = param(8, ge=1, le=64, unit="heads", description="Hash heads per n-gram order")
    table_rows: int = param(1_000_000, ge=2, le=1 << 31, unit="rows",
                            description="Table size floor: each head's table has a distinct prime "
                                        "number of rows, the smallest primes >= this")
    row_bytes: int = param(160, ge=1, le=1 << 20, unit="B", description="Bytes per embedding row")
    hash_seed: int = param(0, ge=0, le=2**63 - 1, description="Seed of the hash multipliers")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if (self.layer is None) == (self.layers is None):
            both = "both are set" if self.layer is not None else "neither is set"
            raise FieldError("layer", f"set exactly one of engram.layer (one module) or engram.layers "
                                      f"(several); {both}")
        if self.layers is not None and len(set(self.layers)) != len(self.layers):
            raise FieldError("layers", f"layers must be distinct (got {self.layers})")
        for i, n in enumerate(self.orders):
            if not 1 <= n <= 8:
                raise FieldError(f"orders[{i}]", f"n-gram order must be 1..8 (got {n})")
        if len(set(self.orders)) != len(self.orders):
            raise FieldError("orders", f"orders must be distinct (got {self.orders})")
        return self

    @property
    def module_layers(self) -> tuple[int, ...]:
        return (self.layer,) if self.layer is not None else tuple(sorted(self._layers()))

    def field_of(self, layer: int) -> str:
        return "engram.layer" if self.layer is not None else f"engram.layers[{self._layers().index(layer)}]"

    def _layers(self) -> list[int]:
        """`layers` where `layer` is None (the validator sets exactly one of them)."""
        if self.layers is None:
            raise ValueError("engram: neither layer nor layers is set")
        return self.layers


class Tokens(Section):
    source: Literal["zipf", "inline", "file"] = param(
        "zipf", description="Where the token IDs come from: a seeded Zipf draw, `ids`, or `file`")
    ids: list[list[int]] = param([], description="Inline token IDs: one list per sequence of the batch; the "
                                                 "first max(orders)-1 are context, then one per decode step")
    file: str = param("", description="Token file: one sequence per line, integers separated by spaces "
                                      "or commas, `#` comments (relative to the scenario file)", file=True)
    vocab: int = param(151_936, ge=1, le=MAX_VOCAB, unit="tokens", description="Vocabulary size")
    zipf_a: float = param(1.1, gt=1, le=10, description="Zipf exponent of the generated token IDs")
    seed: int = param(0, ge=0, le=2**63 - 1, description="Seed of the generated token IDs")
    _file_ids: list[list[int]] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> Self:
        if self.source == "file":
            if not self.file:
                raise FieldError("file", "source is \"file\" but no file is named")
            try:
                self._file_ids = parse_token_file(str(relative_to_source(self.file, info.context)))
            except ValueError as e:
                raise FieldError("file", str(e)) from None
        elif self.source == "inline" and not self.ids:
            raise FieldError("ids", "source is \"inline\" but ids is empty")
        where = "file" if self.source == "file" else "ids"
        for i, seq in enumerate(self.sequences()):
            for j, t in enumerate(seq):
                if not 0 <= t < self.vocab:
                    path = f"ids[{i}][{j}]" if where == "ids" else "file"
                    raise FieldError(path, f"token ID {t} (sequence {i}, position {j}) is outside "
                                           f"the vocabulary 0..{self.vocab - 1}")
        return self

    def sequences(self) -> list[list[int]]:
        """The given sequences (inline or from the file); empty for the Zipf source."""
        return self._file_ids if self.source == "file" else (self.ids if self.source == "inline" else [])


class Decode(Section):
    steps: int = param(4, ge=1, le=10_000, unit="steps", description="Decode steps simulated in a row")


class Cpu(Section):
    hash_ns: float = param(10.0, ge=0, le=1e6, unit="ns",
                           description="CPU time to hash one token's n-gram for one head (per token per head)")
    issue_ns: float = param(20.0, ge=0, le=1e6, unit="ns", description="CPU time to post one read")


class Pool(Section):
    name: str = param("CXL pool", min_length=1, max_length=40, description="Name of the pool's lane group")
    latency_us: float = param(0.2, ge=0, le=1e6, unit="µs", description="Latency of one small read")
    bandwidth_GBps: float = param(50.0, gt=0, le=1e5, unit="GB/s", description="Pool link bandwidth")
    max_outstanding: int = param(64, ge=1, le=1_000_000, unit="reads",
                                 description="Reads in flight at once; more wait for a free slot")


class Transfer(Section):
    path: Literal["A", "B"] = param(
        "B", description="B: pool -> GPU HBM directly (peer-to-peer); A: pool -> host DRAM bounce "
                         "buffer -> PCIe copy to the GPU")


class Pcie(Section):
    bandwidth_GBps: float = param(50.0, gt=0, le=1e5, unit="GB/s",
                                  description="GPU's PCIe link: caps path B, carries path A's copies")
    copy_latency_us: float = param(2.0, ge=0, le=1e6, unit="µs",
                                   description="Fixed cost of one host-to-GPU copy (path A)")
    copy_rows: int = param(64, ge=1, le=1_000_000, unit="rows",
                           description="Rows gathered per host-to-GPU copy (path A)")


class EngramWindowScenario(ScenarioBase):
    kind: Literal["engram_window"]
    model: ModelShape = ModelShape()
    engram: Engram
    tokens: Tokens = Tokens()
    decode: Decode = Decode()
    cpu: Cpu = Cpu()
    pool: Pool = Pool()
    transfer: Transfer = Transfer()
    pcie: Pcie = Pcie()

    @model_validator(mode="after")
    def _check(self) -> Self:
        L, first = self.model.layers, self.engram.window_from_layer
        for k in self.engram.module_layers:
            field = self.engram.field_of(k)
            if not 0 <= k < L:
                raise FieldError(field, f"layer {k} is outside the model's layers 0..{L - 1}")
            if k <= first:
                raise FieldError(field, f"the window Σ t_exec(i), i = {first}..{k - 1}, holds no layers for "
                                        f"an Engram module at layer {k} (window_from_layer = {first}); "
                                        f"use a layer >= {first + 1}")
        seqs = self.tokens.sequences()
        if self.tokens.source != "zipf":
            where = "tokens.file" if self.tokens.source == "file" else "tokens.ids"
            if len(seqs) != self.model.batch_size:
                raise FieldError(where, f"needs one sequence per batch entry: batch_size is "
                                        f"{self.model.batch_size}, got {len(seqs)} sequences")
            need = max(self.engram.orders) - 1 + self.decode.steps
            for i, seq in enumerate(seqs):
                if len(seq) < need:
                    path = f"{where}[{i}]" if where == "tokens.ids" else where
                    raise FieldError(path, f"sequence {i} has {len(seq)} tokens; {self.decode.steps} steps "
                                           f"with n-grams up to order {max(self.engram.orders)} need {need}")
        return self


def inactive(data: dict[str, Any]) -> dict[str, str]:
    m = data.get("model")
    if isinstance(m, dict) and m.get("layer_times_us"):
        return {"model.step_time_us": "not used: model.layer_times_us gives each layer's time"}
    return {}
