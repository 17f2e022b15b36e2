"""The Plan view: Run fills the plot with one point per run, draws the front and the best mix,
and a click on a point opens that mix."""
import pytest

from .test_plan import SMALL


@pytest.mark.gui
def test_plan_view_runs_draws_and_opens_a_mix(qtbot, tmp_path):
    from app.views.plan import PlanView
    view = PlanView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.set_scenario(SMALL, "<small>", SMALL["plan"]["targets"], 24)
    with qtbot.waitSignal(view.finished, timeout=300_000) as got:
        view.run()
    rp = got.args[0][0]
    xs, ys = view.scatter.getData()
    assert len(xs) == rp.outcome.runs < 24
    fx, _ = view.front.getData()
    assert len(fx) == len(rp.front()) >= 1
    assert "cheapest meeting" in view.status.text()
    bx, _ = view.best.getData()
    assert list(bx) == [float(rp.grid.cost[rp.outcome.best])]
    point = view.scatter.points()[0]
    with qtbot.waitSignal(view.open_mix) as opened:
        view._clicked(view.scatter, [point])
    assert opened.args[0] == rp.grid.settings[point.data()]
    view.grab().save(str(tmp_path / "plan_view.png"))
    header, rows = view.data_rows()
    assert header[-1] == rp.targets[0].metric and len(rows) == rp.outcome.runs
