"""What `kvviz plan`'s search relies on, held on the bundled scenario: along each axis of
scenarios/plan_prefix_tiers.toml's [plan] (every one marked monotone), from the bundled mix,
more capacity never raises LRU's TTFT p99 by more than the plan's tolerance."""
import pytest

from kvviz import load_scenario, simulate
from kvviz.plan.grid import with_settings
from kvviz.scenario_data import read_toml

FILE = "scenarios/plan_prefix_tiers.toml"
P99 = "ttft_p99_ms"


@pytest.mark.slow
@pytest.mark.parametrize("k", range(4))
def test_ttft_p99_does_not_rise_along_each_axis(k):
    base = load_scenario(FILE)
    axis = base.plan.axes[k]
    assert axis.monotone
    data = read_toml(FILE)
    from kvviz.loading import parse_scenario
    p99 = []
    for v in axis.values:
        sc = parse_scenario(with_settings(data, axis.settings(v), FILE), FILE)
        p99.append(simulate(sc).metrics_dict()["policies"]["lru"][P99])
    tol = base.plan.tolerance
    for a, b in zip(p99, p99[1:]):
        assert b <= a * (1 + tol), (axis.label, p99)
    assert p99[-1] < p99[0]  # and the axis matters: the most of it is faster than the least
