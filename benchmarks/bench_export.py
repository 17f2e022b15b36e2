"""Export speed: SVG, PNG, Perfetto JSON and CSV of a 100,000-span timeline.

Run: make bench   (or .venv/bin/python benchmarks/bench_export.py)
"""
from __future__ import annotations

import os
import time

from kvviz import parse_scenario, simulate
from kvviz.export.csv import trace_csv
from kvviz.export.perfetto import perfetto_json
from kvviz.export.raster import render
from kvviz.export.svg import timeline_svg


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main():
    from machine import describe
    print(describe())
    # The naive path of a 99,990-token sequence is one serial fetch span per position.
    sc = parse_scenario({"kind": "rope_window", "name": "bench: 100,000 spans",
                         "sequence": {"length": 99_990, "queries": [50_000, 60_000],
                                      "query_times_us": [0, 50]},
                         "cache": {"slots": 64}, "prefetch": {"window": 16}})
    r = simulate(sc)
    n = len(r.trace.spans)
    secs, svg = timed(lambda: timeline_svg(r))
    print(f"SVG of {n:,} spans: {secs * 1000:.0f} ms, {len(svg) / 1e6:.1f} MB")
    # render() gives the bytes (the output guard writes them): their length is the file's size
    secs, png = timed(lambda: render(svg, "png", 150))
    print(f"PNG of the same (10 in × 150 dpi, child process incl. start-up): {secs * 1000:.0f} ms, "
          f"{len(png) / 1e3:.0f} kB")
    secs, pdf = timed(lambda: render(svg, "pdf", 300))
    print(f"PDF of the same: {secs * 1000:.0f} ms, {len(pdf) / 1e6:.1f} MB")
    secs, js = timed(lambda: perfetto_json(r))
    print(f"Perfetto JSON: {secs * 1000:.0f} ms, {len(js) / 1e6:.1f} MB")
    secs, tables = timed(lambda: trace_csv(r.trace))
    print(f"CSV: {secs * 1000:.0f} ms, {sum(len(t) for t in tables.values()) / 1e6:.1f} MB")
    flagship()


def flagship():
    """The bundled AttentionStore run: its figures against the time to simulate it."""
    from kvviz import load_scenario
    os.environ.setdefault("KVVIZ_WORKERS", str(os.cpu_count() or 1))
    sim, r = timed(lambda: simulate(load_scenario("scenarios/attention_store_sharegpt.toml")))
    print(f"attention_store_sharegpt ({len(r.trace.spans):,} spans, {len(r.trace.instants):,} instants): "
          f"simulated in {sim:.2f} s")
    secs, svg = timed(lambda: timeline_svg(r))
    secs_png, png = timed(lambda: render(svg, "png", 300))
    print(f"  SVG {secs:.2f} s ({len(svg) / 1e6:.2f} MB); PNG at 300 dpi {secs_png:.2f} s "
          f"({len(png) / 1e3:.0f} kB): figure ÷ simulation = {(secs + secs_png) / sim:.2f}")
    secs, js = timed(lambda: perfetto_json(r))
    print(f"  Perfetto JSON {secs:.2f} s, {len(js) / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
