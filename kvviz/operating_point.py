"""One operating point per model, or why none (issue 31 item 6): `kvviz operating-point`.

The paper (seed 003) gives, per model, a TTFT cut, a prefill speedup P and an end-to-end GPU-time
speedup S against recompute, all "at λ = 1". Under this model they come from different loads: the
TTFT cut from a stable queue, the GPU-time speedup only near saturation. This module runs each
model's headline claims (the scenario's `[[claim]]` rows on those three metrics whose `set` is
only a `model.preset`) at every arrival rate of RATES and flat out (`serving.arrivals =
saturated`, where the look-ahead is the waiting queue: the job list needs release times), judges
each row at each load by the one rule of kvviz.claims, and says at which loads all three hold
together (reproduced or same_shape) with the queue steady.

Why they may not: the paper's pair (S, P) fixes the share p of recompute's GPU time that is
prefill, S = 1 / (1 − p·(1 − 1/P)), so p = (1 − 1/S)/(1 − 1/P). The roofline puts a floor under
decode whatever the batch (kvviz.serving.roofline): each decode iteration emits one token per
running job for at least 2·params FLOPs (the compute floor), and reads every running job's KV plus
the weights, shared by at most `serving.max_batch` jobs (the memory floor). So recompute's prefill
share can be at most

    p_max = Σ prefill(history + new) / (Σ prefill(history + new) + Σ decode floor)

over the workload's turns (`prefill_share_bound`, closed form on the run's inputs; preemptions,
which add recompute prefill under overload, are left out). Where p_max is below the p a claim's
same_shape band needs (S's effect at half the paper's), no load can give the paper's GPU-time
figure under this model, whatever it gives for TTFT.
"""
from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .claims import JUDGED, RunOutcome, run_group, verdict
from .errors import ScenarioError
from .metric_paths import finite_number, metric_value

if TYPE_CHECKING:  # pydantic is imported by the scenario's loading, not here
    from .scenario import Claim, ScenarioBase

RATES = (0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0)
SATURATED: Literal["saturated"] = "saturated"
Rate = float | Literal["saturated"]  # turns/s, or SATURATED
TTFT = "policies.scheduler_aware.ttft_reduction_vs_recompute"
PREFILL = "policies.scheduler_aware.prefill_speedup_vs_recompute"
GPU = "policies.scheduler_aware.gpu_time_speedup_vs_recompute"
HEADLINE = (TTFT, PREFILL, GPU)
SHORT = {TTFT: "TTFT cut", PREFILL: "prefill speedup", GPU: "GPU-time speedup"}
# A load is steady when recompute's queue (the baseline's: it grows first) does not build up: at most
# STEADY_QUEUE jobs at half the run and at its end (the flagship's own steady-state check, [[expect]]
# queue_len_end ≤ 20) and a mean wait of at most STEADY_WAIT_S (ours: a queue that was long for a while
# and drained again, as LLaMA-70B at λ = 2.5 with 221 s of mean TTFT, is not an operating point).
STEADY_QUEUE = 20
STEADY_WAIT_S = 1.0
COMMON = ('policies=["recompute","scheduler_aware"]', "serving.compare_truncation=false")
MARKER = re.compile(r"<!-- operating-point:begin(?P<names>[^>]*?)-->\n(?P<body>.*?)<!-- operating-point:end -->", re.S)


@dataclass
class Point:
    rate: Rate
    overrides: tuple[str, ...]
    values: dict[str, Any] = field(default_factory=dict)  # metric -> model value
    verdicts: dict[str, str] = field(default_factory=dict)  # metric -> verdict
    recompute_prefill_share: float | None = None
    recompute_ttft_s: float | None = None
    queue_len_mid: int | None = None
    queue_len_end: int | None = None
    queue_wait_s: float | None = None
    mean_batch: float | None = None
    error: str = ""

    @property
    def steady(self) -> bool:
        """Recompute's queue does not build up (STEADY_QUEUE, STEADY_WAIT_S); flat out it always does."""
        return (self.rate != SATURATED and self.queue_len_mid is not None and self.queue_len_mid <= STEADY_QUEUE
                and (self.queue_len_end or 0) <= STEADY_QUEUE and (self.queue_wait_s or 0.0) <= STEADY_WAIT_S)

    @property
    def all_pass(self) -> bool:
        """All of the model's headline rows reproduced or same_shape at this load."""
        return bool(self.verdicts) and all(v in JUDGED for v in self.verdicts.values())

    @property
    def holds(self) -> bool:
        """All pass, and the queue is steady: an operating point."""
        return self.steady and self.all_pass


@dataclass
class ModelPoints:
    preset: str
    claims: dict[str, Claim]     # metric -> Claim (the paper's figure)
    points: list[Point]
    bound: float = float("nan")  # p_max, the prefill-share bound (module docstring)

    def paper(self, metric: str) -> float | None:
        c = self.claims.get(metric)
        return c.paper if c is not None and finite_number(c.paper) else None

    @property
    def implied_share(self) -> float | None:
        """The share of recompute's GPU time in prefill that the paper's S and P imply."""
        S, P = self.paper(GPU), self.paper(PREFILL)
        if S is None or P is None or S <= 1 or P <= 1:
            return None
        return (1 - 1 / S) / (1 - 1 / P)

    @property
    def needed_share(self) -> float | None:
        """The share the GPU-time row's same_shape band needs at least: S at half the paper's effect."""
        S, P = self.paper(GPU), self.paper(PREFILL)
        if S is None or P is None or P <= 1:
            return None
        s_low = 1 + (S - 1) / 2
        return (1 - 1 / s_low) / (1 - 1 / P)

    def holding(self) -> list[Point]:
        return [p for p in self.points if p.holds]


def point_overrides(preset: str, rate: Rate) -> tuple[str, ...]:
    if rate == SATURATED:
        load = ("serving.arrivals=saturated", "store.lookahead=waiting_queue")
    else:
        load = ("serving.arrivals=interleaved", f"workload.arrival_rate_per_s={rate!r}")
    return (*COMMON, f"model.preset={preset}", *load)


def headline_claims(scenario: ScenarioBase, data: dict[str, Any]) -> dict[str, dict[str, Claim]]:
    """{preset: {metric: claim}}: the file's simulated claims on HEADLINE whose set names only a
    model preset (none: the file's own preset), in the file's order."""
    own = (data.get("model") or {}).get("preset")
    out: dict[str, dict[str, Claim]] = {}
    for c in scenario.claim:
        if c.metric not in HEADLINE or c.basis != "simulated" or c.relative_to_set is not None:
            continue
        presets = [s.split("=", 1)[1].strip() for s in c.set if s.split("=", 1)[0].strip() == "model.preset"]
        if len(presets) != len(c.set) or c.than_set is not None:
            continue
        preset = presets[-1] if presets else own
        if isinstance(preset, str):
            out.setdefault(preset, {}).setdefault(c.metric, c)
    return out


def prefill_share_bound(data: dict[str, Any], source: str, overrides: tuple[str, ...]) -> float:
    """p_max of the module docstring for the run with these overrides (recompute: every turn
    prefills its kept history and its new tokens)."""
    import numpy as np

    from .loading import parse_scenario
    from .mechanisms.attention_store.model import AttentionStoreScenario
    from .mechanisms.attention_store.serving import Prepared
    from .mechanisms.attention_store.workload import workload_of
    from .scenario_data import apply_override
    for o in overrides:
        data = apply_override(data, o, source)
    sc = parse_scenario(data, source)
    if not isinstance(sc, AttentionStoreScenario):
        raise ScenarioError("operating points are AttentionStore's (kind = \"attention_store\")", source, "kind")
    prep = Prepared(sc, workload_of(sc))
    g = prep.gpu
    ctx = (prep.keep + prep.inn).astype(float)
    k = np.maximum(prep.out - 1, 0).astype(float)  # decode iterations: the prefill emits the first token
    prefill = g.prefill_ns(ctx).sum()
    # decode iteration i of a job reads its context ctx + i (+1: the token just emitted) and 1/B of the weights
    memory = g.kv_ns_per_token * (k * ctx + k * (k + 1) / 2) + g.weights_ns * k / sc.serving.max_batch
    compute = k * g.prefill_ns_per_token  # 2·params FLOPs per token, at the prefill's MFU
    decode = np.maximum(memory, compute).sum()
    return float(prefill / (prefill + decode)) if prefill + decode else float("nan")


def _fill(point: Point, claims: dict[str, Claim], run: RunOutcome) -> Point:
    if not isinstance(run, dict):
        point.error = str(run)
        return point
    rec = run.get("policies", {}).get("recompute", {})
    point.recompute_prefill_share = (rec.get("phase_share") or {}).get("prefill")
    point.recompute_ttft_s = rec["mean_ttft_ms"] / 1e3 if finite_number(rec.get("mean_ttft_ms")) else None
    point.queue_len_mid = rec.get("queue_len_mid")
    point.queue_len_end = rec.get("queue_len_end")
    point.queue_wait_s = rec["mean_queue_wait_ms"] / 1e3 if finite_number(rec.get("mean_queue_wait_ms")) else None
    point.mean_batch = rec.get("mean_batch")
    for metric in HEADLINE:
        try:
            v = metric_value(run, metric)
        except KeyError:
            continue
        point.values[metric] = v
        c = claims.get(metric)
        if c is not None:
            others: dict[str, Any] = {}
            for p in c.shape_paths().values():
                try:
                    others[p] = metric_value(run, p)
                except KeyError:
                    others[p] = None
            point.verdicts[metric] = verdict(c, v, others)[0]
    return point


def evaluate(file: str, sets: tuple[str, ...] = (), rates: Sequence[Rate] = (*RATES, SATURATED),
             models: Sequence[str] | None = None, progress: Callable[[int, int], object] | None = None
             ) -> list[ModelPoints]:
    """Each model's headline rows at every load (one run per model and load; `sets`: overrides of
    every run, e.g. a reduced workload)."""
    from .scenario_data import read_toml
    return evaluate_data(read_toml(file), file, sets, rates, models, progress)


def evaluate_data(data: dict[str, Any], file: str, sets: tuple[str, ...] = (), rates: Sequence[Rate] = (*RATES, SATURATED),
                  models: Sequence[str] | None = None, progress: Callable[[int, int], object] | None = None
                  ) -> list[ModelPoints]:
    """`evaluate` on a scenario's data as read (or as edited in the app); `file` names it in errors."""
    from .executor import map_indexed
    from .loading import parse_scenario
    from .scenario_data import apply_override

    for o in sets:
        data = apply_override(data, o, f"{file}: --set")
    scenario = parse_scenario(data, file)
    if scenario.kind != "attention_store":
        raise ScenarioError("operating points are AttentionStore's (kind = \"attention_store\")", file, "kind")
    by_model = headline_claims(scenario, data)
    if models:
        unknown = [m for m in models if m not in by_model]
        if unknown:
            raise ScenarioError(f"no headline claims for {', '.join(unknown)} (have: {', '.join(by_model) or 'none'})",
                                file, "claim")
        by_model = {m: by_model[m] for m in models}
    if not by_model:
        raise ScenarioError("no [[claim]] rows on the TTFT cut, prefill or GPU-time speedup with only a "
                            "model.preset in their set", file, "claim")
    out = [ModelPoints(m, claims, [Point(r, point_overrides(m, r)) for r in rates]) for m, claims in by_model.items()]
    points = [p for mp in out for p in mp.points]
    done = [0]

    def tick(_i: int, _v: RunOutcome) -> None:
        done[0] += 1
        if progress:
            progress(done[0], len(points))
    runs = map_indexed(run_group, [(data, file, p.overrides) for p in points], on_result=tick)
    it = iter(runs)
    for mp in out:
        for p in mp.points:
            _fill(p, mp.claims, next(it))
        mp.bound = prefill_share_bound(data, file, point_overrides(mp.preset, SATURATED))
    return out


def command_line(file: str, models: Iterable[str] = (), sets: Iterable[str] = (), svg_dir: str | None = None) -> str:
    """The `kvviz operating-point` line that computes these figures (a bundled scenario by its name)."""
    import shlex

    from .bundled import scenario_arg
    parts = ["kvviz", "operating-point", scenario_arg(file)]
    for s in sets:
        parts += ["--set", s]
    for m in models:
        parts += ["--model", m]
    if svg_dir:
        parts += ["--svg-dir", svg_dir]
    return " ".join(shlex.quote(p) for p in parts)


# --- text, Markdown, SVG ---------------------------------------------------------------------------

def _rate_text(r: Rate) -> str:
    return "saturated" if r == SATURATED else f"{r:g}"


def _num(v: object, pct: bool = False) -> str:
    if not finite_number(v):
        return "—"
    return f"{v * 100:.1f}%" if pct else f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _rates(points: Iterable[Point]) -> str:
    return ", ".join(_rate_text(p.rate) for p in points)


def conclusion(mp: ModelPoints) -> str:
    """One sentence: where the model's figures hold together, or why nowhere."""
    held = mp.holding()
    if held:
        return f"hold together at λ = {_rates(held)} turns/s"
    need, bound = mp.needed_share, mp.bound
    if need is not None and finite_number(bound) and bound < need:
        return (f"no load: the paper's GPU-time speedup needs recompute's prefill to be at least {_num(need, True)} "
                f"of its GPU time (S at half the paper's effect; {_num(mp.implied_share, True)} for its own S) and "
                f"the decode floor caps it at {_num(bound, True)}, whatever the load")
    gpu_ok = [p for p in mp.points if p.verdicts.get(GPU) in JUDGED]
    if not gpu_ok:
        best = max((p for p in mp.points if finite_number(p.values.get(GPU))), key=lambda p: p.values[GPU],
                   default=None)
        said = f" (at most {_num(best.values[GPU])}× at λ = {_rate_text(best.rate)})" if best else ""
        return f"no load: the GPU-time speedup stays below the paper's band at every load{said}"
    loaded = [p for p in mp.points if p.all_pass]
    if loaded:
        return (f"no steady load: all three pass only at λ = {_rates(loaded)}, where recompute's queue builds up "
                f"(mean TTFT {', '.join(_num(p.recompute_ttft_s) + ' s' for p in loaded)}); at every steady load "
                f"the GPU-time speedup is out of the paper's band")
    return (f"no load: the GPU-time speedup is in the paper's band only at λ = {_rates(gpu_ok)}, where the other "
            f"figures are not")


def as_markdown(models: list[ModelPoints], file: str) -> str:
    name = Path(file).stem
    out = [f"Generated by `kvviz operating-point {name} --readme PAGE.md` (`make operating-point`; one run per model and load; "
           f"policies recompute and scheduler_aware; λ in turns/s, interleaved release; saturated: every turn "
           f"released as its previous reply ends, look-ahead the waiting queue). A verdict is the claims table's "
           f"rule applied at that load; *steady*: recompute's queue at half the run and at its end ≤ {STEADY_QUEUE} "
           f"jobs and its mean wait ≤ {STEADY_WAIT_S:g} s. "
           f"p: recompute's prefill share of its GPU time; the paper's (S, P) imply p = (1 − 1/S)/(1 − 1/P); "
           f"p_max: the decode floor's bound (kvviz/operating_point.py).", ""]
    out += ["| model | paper TTFT cut / P / S | p implied (needed for S at ½ effect) | p_max | conclusion |",
            "| --- | --- | --- | --- | --- |"]
    for mp in models:
        paper = " / ".join(_num(mp.paper(m), m == TTFT) for m in HEADLINE)
        out.append(f"| {mp.preset} | {paper} | {_num(mp.implied_share, True)} ({_num(mp.needed_share, True)}) | "
                   f"{_num(mp.bound, True)} | {conclusion(mp)} |")
    for mp in models:
        out += ["", f"**{mp.preset}** (figure: `{name}_{mp.preset}.svg`)", "",
                "| λ | steady | queue (mid) | recompute batch | recompute TTFT | p | TTFT cut | prefill speedup | "
                "GPU-time speedup | together |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for p in mp.points:
            if p.error:
                out.append(f"| {_rate_text(p.rate)} | | | | | | | | | error: {p.error} |")
                continue
            cells = [f"{_num(p.values.get(m), m == TTFT)} ({p.verdicts.get(m, '—')})" for m in HEADLINE]
            out.append(f"| {_rate_text(p.rate)} | {'yes' if p.steady else 'no'} | {p.queue_len_mid} | "
                       f"{_num(p.mean_batch)} | {_num(p.recompute_ttft_s)} s | {_num(p.recompute_prefill_share, True)} | "
                       f"{' | '.join(cells)} | {'**yes**' if p.holds else 'no'} |")
    return "\n".join(out)


def as_text(models: list[ModelPoints], file: str) -> str:
    return as_markdown(models, file)


def paste(readme: str | Path, models: list[ModelPoints], file: str) -> bool:
    """Fill the README's `<!-- operating-point:begin NAME -->` block of this scenario; False if none."""
    from .io import read_text
    from .outputs import write_text
    text = read_text(Path(readme))
    name = Path(file).stem
    hit = [False]

    def fill(m: re.Match[str]) -> str:
        block: str = m.group(0)
        if m.group("names").split() not in ([], [name]):
            return block
        hit[0] = True
        begin = block[: m.start("body") - m.start()]
        return f"{begin}{as_markdown(models, file)}\n<!-- operating-point:end -->"
    new = MARKER.sub(fill, text)
    if hit[0]:
        write_text(str(readme), new)
    return hit[0]


def _pale(colour: str, amount: float = 0.14) -> str:
    """`colour` mixed into white (an opaque tint: every SVG renderer draws it the same)."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(255 - (255 - c) * amount):02x}" for c in (r, g, b))


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + ([line] if line else [])


def figure_svg(mp: ModelPoints, title: str = "") -> str:
    """Three panels against the load: the TTFT cut, the speedups (GPU time, prefill) and
    recompute's prefill share, each with the paper's figure (dashed) and its same_shape band
    (½–2× its effect, tinted); a load where the queue grows is labelled in red on the axis."""
    esc = html.escape
    said = _wrap(conclusion(mp), 150)
    W, left_pad, gap, bottom = 1080, 56, 40, 92
    top = 58 + 16 * len(said)
    H = top + 270 + bottom
    panel_w = (W - 2 * left_pad - 2 * gap) / 3
    n = len(mp.points)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W / 96:.2f}in" height="{H / 96:.2f}in" '
             f'viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">',
             f'<rect width="{W}" height="{H}" fill="white"/>',
             f'<text x="{left_pad}" y="20" font-size="15">{esc(title or mp.preset)}</text>']
    parts += [f'<text x="{left_pad}" y="{38 + 16 * i}" font-size="12">{esc(line)}</text>' for i, line in enumerate(said)]

    def xpos(x0: float, i: int) -> float:
        return x0 + panel_w * (i + 0.5) / n

    S, P, T = mp.paper(GPU), mp.paper(PREFILL), mp.paper(TTFT)
    highest = [v for v in (S, P) if v] + [p.values.get(m) or 1 for p in mp.points for m in (GPU, PREFILL)
                                          if finite_number(p.values.get(m))]
    panels = [
        ("TTFT cut vs recompute", [(TTFT, "#1f77b4", "scheduler-aware")], 0.0, 1.0, [(T, "#1f77b4")], True, 0.0),
        ("speedup vs recompute (×)", [(GPU, "#d62728", "GPU time"), (PREFILL, "#2ca02c", "prefill")], 1.0,
         max(highest) * 1.1, [(P, "#2ca02c"), (S, "#d62728")], False, 1.0),
        ("recompute: prefill share of GPU time", [("share", "#9467bd", "p (model)")], 0.0, 1.0, [], True, 0.0),
    ]
    for k, (name, series, lo, hi, papers, pct, base) in enumerate(panels):
        x0 = left_pad + k * (panel_w + gap)
        y0, y1 = top, top + 270

        def ypos(v: float, lo: float = lo, hi: float = hi, y0: float = y0, y1: float = y1) -> float:
            return y1 - (min(max(v, lo), hi) - lo) / (hi - lo) * (y1 - y0)
        parts.append(f'<text x="{x0 + panel_w / 2:.1f}" y="{top - 8}" text-anchor="middle">{esc(name)}</text>')
        for v, colour in papers:  # the same_shape band first, under everything
            if finite_number(v):
                b_lo, b_hi = base + (v - base) / 2, base + 2 * (v - base)
                parts.append(f'<rect x="{x0}" y="{ypos(b_hi):.1f}" width="{panel_w:.1f}" '
                             f'height="{ypos(b_lo) - ypos(b_hi):.1f}" fill="{_pale(colour)}" stroke="none"/>')
        parts.append(f'<rect x="{x0}" y="{y0}" width="{panel_w:.1f}" height="{y1 - y0}" fill="none" stroke="#444"/>')
        for t in range(5):
            v = lo + (hi - lo) * t / 4
            label = f"{v * 100:.0f}%" if pct else f"{v:.1f}"
            parts.append(f'<text x="{x0 - 4}" y="{ypos(v) + 4:.1f}" text-anchor="end" font-size="10">{label}</text>')
        for i, p in enumerate(mp.points):
            label = "sat." if p.rate == SATURATED else f"{p.rate:g}"
            colour = "#000" if p.steady else "#c00"
            parts.append(f'<text x="{xpos(x0, i):.1f}" y="{y1 + 14}" text-anchor="middle" font-size="10" '
                         f'fill="{colour}">{label}</text>')
        parts.append(f'<text x="{x0 + panel_w / 2:.1f}" y="{y1 + 30}" text-anchor="middle" font-size="11">'
                     f'λ (turns/s; red: the queue grows)</text>')
        for v, colour in papers:
            if finite_number(v):
                parts.append(f'<line x1="{x0}" x2="{x0 + panel_w:.1f}" y1="{ypos(v):.1f}" y2="{ypos(v):.1f}" '
                             f'stroke="{colour}" stroke-dasharray="6 4"/>')
        for v, label, dash in ((mp.implied_share, "the paper's S and P imply", "6 4"),
                               (mp.needed_share, "needed for S at ½ the paper's effect", "8 3 2 3")):
            if k == 2 and finite_number(v):
                parts.append(f'<line x1="{x0}" x2="{x0 + panel_w:.1f}" y1="{ypos(v):.1f}" y2="{ypos(v):.1f}" '
                             f'stroke="#9467bd" stroke-dasharray="{dash}"/>')
                parts.append(f'<text x="{x0 + panel_w - 4:.1f}" y="{ypos(v) - 4:.1f}" text-anchor="end" '
                             f'font-size="10" fill="#9467bd">{esc(label)}: {v * 100:.0f}%</text>')
        if k == 2 and finite_number(mp.bound):
            parts.append(f'<line x1="{x0}" x2="{x0 + panel_w:.1f}" y1="{ypos(mp.bound):.1f}" '
                         f'y2="{ypos(mp.bound):.1f}" stroke="#000" stroke-dasharray="2 3"/>')
            ly = y1 + 62  # in the legend: the paper's lines above may lie close to it
            parts.append(f'<line x1="{x0}" x2="{x0 + 18}" y1="{ly - 4}" y2="{ly - 4}" stroke="#000" '
                         f'stroke-dasharray="2 3"/><text x="{x0 + 22}" y="{ly}" font-size="10">p_max, the decode '
                         f'floor: {mp.bound * 100:.0f}%</text>')
        for s_i, (metric, colour, label) in enumerate(series):
            pts: list[tuple[float, float, Point]] = []
            for i, p in enumerate(mp.points):
                v = p.recompute_prefill_share if metric == "share" else p.values.get(metric)
                if finite_number(v):
                    pts.append((xpos(x0, i), ypos(v), p))
            if pts:
                parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="'
                             + " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in pts) + '"/>')
            for x, y, p in pts:
                ok = metric == "share" or p.verdicts.get(metric) in JUDGED
                parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" stroke="{colour}" stroke-width="1.5" '
                             f'fill="{colour if ok else "white"}"/>')
            ly = y1 + 48 + 14 * s_i
            parts.append(f'<line x1="{x0}" x2="{x0 + 18}" y1="{ly - 4}" y2="{ly - 4}" stroke="{colour}" '
                         f'stroke-width="2"/><text x="{x0 + 22}" y="{ly}" font-size="10">{esc(label)}</text>')
    parts.append(f'<text x="{left_pad}" y="{H - 8}" font-size="10" fill="#444">dashed: the paper\'s figure (the '
                 f'share its S and P imply, right); tint: ½–2× its effect (same_shape); a filled dot is reproduced '
                 f'or same_shape at that load, a hollow one not</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
