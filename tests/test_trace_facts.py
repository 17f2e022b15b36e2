"""Trace rows carry their facts (bytes, tiers, job/turn/position, flow), every mechanism fills
them, CSV keeps them, and the Perfetto export turns them into args, flows and tier counters."""
import json
from collections import Counter

import numpy as np
import pytest

from kvviz.export.csv import csv_paths, read_trace_csv, trace_csv
from kvviz.export.perfetto import perfetto_events, perfetto_json
from kvviz.palette import tier_label
from kvviz.trace import INSTANT_KINDS, SPAN_DTYPE, SPAN_KINDS, TIERS, TraceBuilder

from .conftest import SCENARIOS

BUNDLED = sorted(p.stem for p in SCENARIOS.glob("*.toml"))


def _small_trace():
    tb = TraceBuilder()
    a, b = tb.lane("pool", "CXL"), tb.lane("gpu", "GPU")
    tb.span(a, 0, 10, "fetch", "rows", bytes=320, items=2, src="CXL", dst="HBM", turn=0, layer=3, flow=7)
    tb.span(a, 20, 30, "fetch", "rows", bytes=320, items=2, src="CXL", dst="HBM", turn=0, layer=3, flow=7)
    tb.span(b, 12, 18, "compute", "L3", turn=0, layer=3, flow=7)
    tb.instant(b, 12, "hit", pos=5)
    block = np.zeros(2, dtype=SPAN_DTYPE)  # a prebuilt block made the usual way says nothing
    block["lane"], block["start"], block["end"], block["kind"], block["label"] = b, [40, 50], [45, 55], 0, -1
    tb.add_block("spans", block)
    return tb.build()


def test_facts_are_a_shared_side_table():
    tr = _small_trace()
    first, second = tr.spans[tr.spans["start"] == 0][0], tr.spans[tr.spans["start"] == 20][0]
    assert tr.facts_of(first) == {"bytes": 320, "items": 2, "src": "CXL", "dst": "HBM", "turn": 0,
                                  "layer": 3, "flow": 7}
    assert first["fact"] == second["fact"]  # equal facts: one row
    assert tr.facts_of(tr.instants[0]) == {"pos": 5}
    assert [tr.facts_of(s) for s in tr.spans[tr.spans["start"] >= 40]] == [{}, {}]
    assert tr.fact_column(tr.spans, "bytes").tolist() == [320, -1, 320, -1, -1]
    assert SPAN_DTYPE.itemsize < 40  # a million spans still fit in tens of MB


def test_csv_carries_facts_and_reads_them_back(tmp_path):
    tr = _small_trace()
    texts = trace_csv(tr)
    head, row = texts["spans"].splitlines()[:2]
    assert head.endswith("bytes,items,src,dst,job,turn,pos,layer,flow")
    assert row.endswith("320,2,CXL,HBM,,0,,3,7")
    for table, p in csv_paths(tmp_path / "t").items():
        p.write_text(texts[table])
    back = read_trace_csv(tmp_path / "t")
    assert np.array_equal(back.spans, tr.spans) and np.array_equal(back.instants, tr.instants)
    assert np.array_equal(back.facts, tr.facts)


def test_rope_facts_follow_the_worked_example(bundled):
    tr = bundled["rope_prefetch_16"].trace
    fetches = tr.spans_of("flash · prefetch + demand", "fetch")
    facts = [tr.facts_of(s) for s in fetches]
    # seed 000: positions 5–11 (7) at t = 0, then 12–15 (4) at 50 µs, flash to the GPU's slots
    assert [(f["pos"], f["items"], f["src"], f["dst"]) for f in facts] == [(5, 7, "flash", "HBM"),
                                                                           (12, 4, "flash", "HBM")]
    hits = tr.instants_of("hit")
    at26 = [tr.facts_of(h) for h in hits if h["t"] == 26_000]
    assert at26 == [{"pos": 7, "flow": facts[0]["flow"]}]  # position 7 came with the first batch
    evicted = sorted(tr.facts_of(e)["pos"] for e in tr.instants_of("evict"))
    assert evicted == [5, 6, 7, 8]  # seed: query 12 "evicts 5-8"


def test_engram_fetch_bytes_add_up_to_the_metric(bundled):
    r = bundled["engram_qwen3_32b_cxl"]
    tr = r.trace
    pool = [i for i, n in enumerate(tr.lanes["name"].tolist()) if n.startswith("CXL pool →")]
    sp = tr.spans[np.isin(tr.spans["lane"], pool) & (tr.spans["kind"] == SPAN_KINDS.index("fetch"))]
    assert int(tr.fact_column(sp, "bytes").sum()) == r.metrics["bytes_fetched"]
    assert set(tr.fact_column(sp, "src").tolist()) == {TIERS.index("CXL")}


def test_attention_store_transfers_name_tiers_and_jobs(bundled_small):
    tr = bundled_small["attention_store_sharegpt"].trace
    loads = tr.spans_of("PCIe · load DRAM→HBM", "load")
    saves = tr.spans_of("PCIe · save HBM→DRAM", "save")
    assert len(loads) and len(saves)
    assert all(tr.facts_of(s)["dst"] == "HBM" and tr.facts_of(s)["bytes"] > 0 for s in loads)
    assert all(tr.facts_of(s)["src"] == "HBM" and tr.facts_of(s)["dst"] == "DRAM" for s in saves)
    # every job's mark names its session (the span's ref) and turn
    for m in tr.instants_of("hit")[:50]:
        f = tr.facts_of(m)
        assert f["job"] == m["ref"] and f["turn"] >= 1


def _flows(ev):
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    return starts, ends


def _starts_flows(r) -> bool:
    """The run moves KV in time to where it is used (a load or fetch: AttentionStore, Engram, RoPE,
    the timed prefix cache, the cluster's instances) or routes requests to instances (the cluster):
    what starts a flow. A rung's bars are modeled shares of accesses (not transfers in time) and an
    untimed prefix replay moves nothing in time: neither has one."""
    kinds = [SPAN_KINDS.index(k) for k in ("load", "fetch")]
    moves = bool(np.isin(r.trace.spans["kind"], kinds).any())
    routes = bool((r.trace.instants["kind"] == INSTANT_KINDS.index("arrive")).any()) and r.scenario.kind == "cluster"
    return r.scenario.kind != "ladder" and (moves or routes)


def _slices(ev):
    """{(pid, tid): [(start, end, cat)]} of the complete events, in µs."""
    xs = {}
    for e in ev:
        if e["ph"] == "X":
            xs.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"], e["cat"]))
    return xs


@pytest.mark.parametrize("name", BUNDLED)
def test_perfetto_has_flows_and_tier_counters(name, bundled_small):
    r = bundled_small[name]
    ev = json.loads(perfetto_json(r))["traceEvents"]
    starts, ends = _flows(ev)
    ids = [e["id"] for e in ev if e["ph"] in ("s", "f")]
    assert all(n == 2 for n in Counter(ids).values())  # each flow id: one start and one end
    assert starts.keys() == ends.keys()
    xs = _slices(ev)
    arrivals = {(e["pid"], e["tid"], e["ts"]) for e in ev if e["ph"] == "i" and e["name"] == "arrive"}
    for s in starts.values():  # each flow leaves from inside a transfer, or a routed arrival, on its own track
        assert (s["pid"], s["tid"], s["ts"]) in arrivals or any(
            a <= s["ts"] <= b and cat in ("fetch", "load", "prefetch", "copy") for a, b, cat in xs[(s["pid"], s["tid"])])
        assert ends[s["id"]]["ts"] >= s["ts"]
    assert bool(starts) == _starts_flows(r), "a transfer to where KV is used without a flow, or the reverse"
    tiers = {e["name"] for e in ev if e["ph"] == "C" and e["name"].startswith("tier ")}
    used = {TIERS[i] for i in np.r_[r.trace.facts["src"], r.trace.facts["dst"]].tolist() if i >= 0}
    assert {t.split(" · ")[0][5:] for t in tiers} == {tier_label(u) for u in used}  # the palette's names
    # every lane's thread sits in its group's process
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    for e in ev:
        if e["ph"] == "M" and e["name"] == "thread_name":
            assert procs[e["pid"]].startswith(e["args"]["name"].split(" / ")[0] + " · ")


def _enclosing(xs, e):
    """The slice a flow event binds to: the latest-starting one on its track that holds its time."""
    return max((x for x in xs[(e["pid"], e["tid"])] if x[0] <= e["ts"] <= x[1]), key=lambda x: x[0])


@pytest.mark.parametrize("name", ["prefix_cache_tiers", "plan_prefix_tiers"])
def test_timed_prefix_cache_flows_run_from_each_load_forward_to_its_prefill(name, bundled_small):
    """Perfetto draws a flow from its source slice's end to its consumer slice's start: each load
    feeds the part of its iteration's prefill that runs once every load of the iteration is in."""
    r = bundled_small[name]
    ev = json.loads(perfetto_json(r))["traceEvents"]
    starts, ends = _flows(ev)
    xs = _slices(ev)
    loads = [e for e in ev if e["ph"] == "X" and e["cat"] == "load"]
    assert loads and len(starts) >= len(loads)
    fed = set()
    for n, s in starts.items():
        src, dst = _enclosing(xs, s), _enclosing(xs, ends[n])
        assert src[2] == "load" and dst[2] == "prefill"
        # in ns: the µs floats' sum ts + dur is off by a rounding
        assert round(dst[0] * 1000) >= round(src[1] * 1000), f"flow {n} points back in time: {src} → {dst}"
        fed.add((s["pid"], s["tid"], src[0]))
    assert fed == {(e["pid"], e["tid"], e["ts"]) for e in loads}  # every load feeds its prefill
    # the two parts of a split iteration tile it: the prefill's time is unchanged
    gpu = r.trace.spans_of("GPU · prefill + decode iterations", "prefill")
    assert (gpu["start"][1:] >= gpu["end"][:-1]).all()


def _ns(us: float) -> int:
    """A µs float of the trace back to its integer ns (exact below 2^51 ns; a sum of two µs floats
    is not: convert ts and dur each, then add)."""
    return round(us * 1000)


def _tracks(ev):
    """{(pid, tid): [(start ns, end ns, event)]}: the complete events, and the instants as the
    zero-length slices Perfetto makes of them."""
    out = {}
    for e in ev:
        if e["ph"] in ("X", "i"):
            start = _ns(e["ts"])
            out.setdefault((e["pid"], e["tid"]), []).append((start, start + _ns(e.get("dur", 0)), e))
    return out


def _deepest(tracks, e, kinds=None):
    """The slice a flow event binds to: the deepest on its track that holds its time (nested
    slices: the latest to start, then the shortest), or None; of `kinds` (cat) only if given."""
    t = _ns(e["ts"])
    held = [x for x in tracks.get((e["pid"], e["tid"]), ())
            if x[0] <= t <= x[1] and (kinds is None or x[2]["cat"] in kinds)]
    return max(held, key=lambda x: (x[0], -x[1]), default=None)


SOURCES = ("fetch", "load", "prefetch", "copy", "arrive")  # what a flow leaves from


@pytest.mark.parametrize("name", BUNDLED)
def test_perfetto_flows_land_after_their_source_slice_ends(name, bundled_small):
    """Perfetto draws a flow from its source slice's end to the start of the slice its "f" binds
    to (the deepest one holding its time on its track): each "f" lies in a slice at or after its
    source's end, even where the consumer starts before its loads are in (the child slice kvviz
    nests in it from then on), and every track's slices nest, a child whole inside its parent."""
    ev = json.loads(perfetto_json(bundled_small[name]))["traceEvents"]
    starts, ends = _flows(ev)
    tracks = _tracks(ev)
    for n, s in starts.items():
        src, dst = _deepest(tracks, s, SOURCES), _deepest(tracks, ends[n])
        assert src is not None and dst is not None, f"flow {n} binds to no slice"
        assert dst[0] == _ns(ends[n]["ts"]) >= src[1], f"flow {n} points back in time: {src[:2]} → {dst[:2]}"
    for track, slices in tracks.items():
        open_ = []  # the slices holding the current one, outermost first
        for a, b, e in sorted((x for x in slices if x[2]["ph"] == "X"), key=lambda x: (x[0], -x[1])):
            while open_ and open_[-1][1] <= a:
                open_.pop()
            if open_:  # whole inside its parent (so it overlaps no sibling of its parent)
                assert b <= open_[-1][1], f"{track}: {e['name']} {a}..{b} overlaps {open_[-1][2]['name']}"
            open_.append((a, b, e))
    # kvviz's child of a consumer follows it: on its track, named after it, of its kind, its end
    # (a zero-length one where the consumer ends as its source lands)
    children = [i for i, e in enumerate(ev) if e["ph"] == "X" and "sources" in e["args"]]
    for i in children:
        parent, child = ev[i - 1], ev[i]
        assert (parent["pid"], parent["tid"], parent["cat"]) == (child["pid"], child["tid"], child["cat"])
        assert child["name"].startswith(parent["name"] + " · ") and child["args"]["sources"] > 0
        assert _ns(parent["ts"]) < _ns(child["ts"])
        assert _ns(parent["ts"]) + _ns(parent["dur"]) == _ns(child["ts"]) + _ns(child["dur"])
    late = [n for n, e in ends.items() if _ns(e["ts"]) > _deepest(tracks, e)[0]]
    assert late == []  # every "f" sits at the start of its slice, none inside one
    assert sum(ev[i]["args"]["sources"] for i in children) <= len(ends)


def test_attention_store_flows_bind_to_each_prefill_once_its_loads_are_in(bundled_small):
    """The layer-wise loads stream in while their prefill runs: each flow binds to the prefill's
    child slice from its last load's end to the prefill's end."""
    r = bundled_small["attention_store_sharegpt"]
    ev = json.loads(perfetto_json(r))["traceEvents"]
    starts, ends = _flows(ev)
    tracks = _tracks(ev)
    assert starts
    children = {}
    for n, f in ends.items():
        a, b, dst = _deepest(tracks, f)
        landed = _deepest(tracks, starts[n], SOURCES)[1]
        if "sources" not in dst["args"]:
            assert a >= landed  # a layer that waited for its load: bound at its start
            continue
        assert dst["name"].endswith(" · loads in") and dst["cat"] == "prefill" and b > a
        children.setdefault((f["pid"], f["tid"], a), []).append(landed)
    assert len(children) > len(ends) / 2  # most prefills start while their loads stream in
    for (pid, tid, a), source_ends in children.items():  # from the latest of its loads' ends
        assert a == max(source_ends)
        child = next(x[2] for x in tracks[(pid, tid)] if x[0] == a and x[2]["ph"] == "X")
        assert child["args"]["sources"] == len(source_ends)


def test_rope_fetch_flows_bind_where_the_stall_on_them_ends(bundled):
    """A query that stalls on its fetch ends as the fetch lands: its flow binds to a zero-length
    child at the stall's end, not back at the stall's start."""
    ev = json.loads(perfetto_json(bundled["rope_prefetch_16"]))["traceEvents"]
    starts, ends = _flows(ev)
    tracks = _tracks(ev)
    stalls = 0
    for n, f in ends.items():
        src, dst = _deepest(tracks, starts[n], SOURCES), _deepest(tracks, f)
        assert dst[0] >= src[1]
        if dst[2]["cat"] == "stall":
            assert dst[2]["name"].endswith(" · fetches in") and dst[0] == dst[1] == src[1]
            stalls += 1
    assert stalls > 0


def test_perfetto_args_carry_the_facts(bundled):
    ev = perfetto_events(bundled["rope_prefetch_16"])
    fetch = next(e for e in ev if e["ph"] == "X" and e["cat"] == "fetch" and e["ts"] == 0)
    assert fetch["args"] == {"ref": 0, "items": 7, "src": "flash", "dst": "HBM", "turn": 0, "pos": 5, "flow": 0}


@pytest.mark.parametrize("name", BUNDLED)
def test_perfetto_loads_in_trace_processor(name, bundled_small, tmp_path):
    tp = pytest.importorskip("perfetto.trace_processor", reason="Perfetto's Python package is not installed")
    path = tmp_path / "t.json"
    path.write_text(perfetto_json(bundled_small[name]))
    with tp.TraceProcessor(trace=str(path)) as proc:
        errors = proc.query("select count(*) as n from stats where severity = 'error' and value > 0")
        assert next(iter(errors)).n == 0
        flows = next(iter(proc.query("select count(*) as n from flow"))).n
        assert (flows > 0) == _starts_flows(bundled_small[name])

