"""Hostile edits of every bundled scenario end in a run or in one-line refusals, never another
exception (issue 12). A few hundred fixed cases here; benchmarks/bench_fuzz_input.py runs thousands
of fresh ones, and prints how they ended."""
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings

from .conftest import ROOT
from .input_mutations import KNOWN_VALIDATOR_BUGS, cases, mutate, outcome, source_of


@settings(max_examples=int(os.environ.get("KVVIZ_FUZZ_EXAMPLES", 300)), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
@pytest.mark.slow  # hundreds of runs and a child process
def test_every_mutation_runs_or_is_refused_in_one_line(case):
    name, path, op, value, data = case
    result = outcome(data, source_of(name))
    assert result in ("ran", "refused") or result.removeprefix("validator bug in ") in KNOWN_VALIDATOR_BUGS, result


def test_the_mutations_do_reach_both_outcomes():
    # a fuzz that only ever hit one branch would test nothing
    from .input_mutations import bases
    base = bases()["rope_prefetch_16"]
    assert outcome(mutate(base, ("cache", "slots"), "set", 4)) == "ran"
    base = bases()["rope_prefetch_16"]
    assert outcome(mutate(base, ("cache", "slots"), "set", float("nan"))) == "refused"


@pytest.mark.parametrize("text", ['kind = "rope_window"\n[cache]\nslots = nan\n',
                                  'kind = "engram_window"\n[model]\nstep_time_us = 1e400\n',
                                  'kind = ["ladder"]\n'])
def test_the_command_line_prints_one_error_line_for_them(tmp_path, text):
    f = tmp_path / "fuzz.toml"
    f.write_text(text)
    p = subprocess.run([sys.executable, "-m", "kvviz", "run", str(f)], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    err = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(err) >= 1 and all(e.startswith("error: ") for e in err), p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("surface", ["trace", "flags", "output", "sizes", "prefix"])
def test_a_fixed_sample_of_each_surface_runs_or_is_refused(surface, tmp_path):
    """Issue 23: traces, flags, output paths and sizes; benchmarks/bench_fuzz_input.py draws thousands."""
    import random

    from .input_surfaces import SURFACES, run_case
    rng = random.Random(23)
    seen = set()
    for i in range(12):
        case_dir = tmp_path / str(i)
        case_dir.mkdir()
        argv = SURFACES[surface](rng, case_dir)
        result = run_case(argv)
        assert result in ("ran", "refused"), (argv, result)
        seen.add(result)
    assert seen == {"ran", "refused"} or surface not in ("output", "sizes", "prefix")  # these samples reach both ends
