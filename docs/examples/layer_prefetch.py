"""A toy mechanism, `layer_prefetch`: a GPU runs its layers one after another, and each layer's
weights (or KV) come over one link; the loader may run `depth` layers ahead of the compute.
Saved as kvviz/mechanisms/layer_prefetch/__init__.py with the line "layer_prefetch", in
PACKAGES, `kvviz run`, `kvviz sweep`, the app's panel and its timeline take the new kind."""
from __future__ import annotations

from typing import Literal

from kvviz.result import Result
from kvviz.scenario import ScenarioBase, Section, param
from kvviz.size_guard import Estimate
from kvviz.trace import TraceBuilder
from kvviz.units import ns_to_us, us_to_ns

from .. import Mechanism


class Pipeline(Section):
    layers: int = param(8, description="Layers in one forward pass", ge=1, le=100_000)
    compute_us: float = param(50.0, unit="us", description="Compute time of one layer", gt=0)
    fetch_us: float = param(80.0, unit="us", description="Time to bring one layer's data over the link", gt=0)
    depth: int = param(1, description="How many layers the loader may run ahead of the compute "
                                       "(0: fetch on demand)", ge=0)


class LayerPrefetchScenario(ScenarioBase):
    kind: Literal["layer_prefetch"]
    pipeline: Pipeline = Pipeline()


def estimate(sc: LayerPrefetchScenario) -> Estimate:
    rows = 3 * sc.pipeline.layers  # a fetch, a compute and at most one stall per layer
    return Estimate(bytes=rows * 200, seconds=rows * 2e-6, field="pipeline.layers")


def simulate(sc: LayerPrefetchScenario) -> Result:
    p = sc.pipeline
    fetch, compute = us_to_ns(p.fetch_us), us_to_ns(p.compute_us)
    tb = TraceBuilder()
    gpu, link = tb.lane("GPU", "GPU"), tb.lane("link", "pool")
    landed, started, ended = [], [], []
    link_free = 0
    for i in range(p.layers):
        # depth + 1 buffers: the loader starts layer i once layer i - depth - 1 has finished
        ready = ended[i - p.depth - 1] if i - p.depth - 1 >= 0 else 0
        start_fetch = max(link_free, ready)
        link_free = start_fetch + fetch
        landed.append(link_free)
        tb.span(link, start_fetch, link_free, "fetch", f"layer {i}", layer=i, src="CXL", dst="HBM")
        begin = max(landed[i], ended[-1] if ended else 0)
        if begin > (ended[-1] if ended else 0):
            tb.span(gpu, ended[-1] if ended else 0, begin, "stall", f"wait for layer {i}", layer=i)
        started.append(begin)
        ended.append(begin + compute)
        tb.span(gpu, begin, ended[-1], "compute", f"layer {i}", layer=i)
    stall = ended[-1] - p.layers * compute
    metrics = {"makespan_us": ns_to_us(ended[-1]), "stall_us": ns_to_us(stall),
               "compute_share": p.layers * compute / ended[-1]}
    return Result(sc, tb.build(), metrics)


MECHANISM = Mechanism("layer_prefetch", LayerPrefetchScenario, simulate, estimate)
