"""The Plan view: Run fills the plot with one point per run and redraws the front as runs end
(it fills in during the search), draws the best mix; a click makes a point A, a Shift-click
another B (their settings and metrics side by side), a double-click opens a mix."""
import pytest

from .test_plan import SMALL


class Click:
    """What pyqtgraph hands sigClicked: the modifiers held and whether it was a double click."""
    def __init__(self, shift=False, double=False):
        self._shift, self._double = shift, double

    def modifiers(self):
        from PySide6.QtCore import Qt
        return Qt.ShiftModifier if self._shift else Qt.NoModifier

    def double(self):
        return self._double


def test_the_live_front_is_the_cheapest_first_improving_points():
    from app.views.plan import front_of
    pts = [(3.0, 10.0, 0), (1.0, 30.0, 1), (2.0, 35.0, 2), (2.5, 20.0, 3), (4.0, 12.0, 4)]
    assert [i for _, _, i in front_of(pts)] == [1, 3, 0]
    assert [i for _, _, i in front_of(pts, lower_is_better=False)] == [1, 2]


@pytest.mark.gui
def test_plan_view_runs_draws_fills_the_front_compares_and_opens_a_mix(qtbot, tmp_path):
    from app.views.plan import PlanView
    view = PlanView()
    qtbot.addWidget(view)
    view.resize(1200, 600)
    view.set_scenario(SMALL, "<small>", SMALL["plan"]["targets"], 24)
    left = view.plot.getPlotItem().getAxis("left")
    # before a Run: no target line, no miss region shaded over the empty plot, no numbers of nothing
    assert not view.miss.isVisible() and not view.limit.isVisible() and not left.style["showValues"]
    seen = []  # (points drawn, front points drawn) at each progress signal, while the search runs
    live = view._show_live

    def n(item):
        x = item.getData()[0]
        return 0 if x is None else len(x)

    def watch(*a):
        live(*a)
        seen.append((n(view.scatter), n(view.front)))
    view._show_live = watch
    with qtbot.waitSignal(view.finished, timeout=300_000) as got:
        view.run()
    rp = got.args[0][0]
    assert view.miss.isVisible() and view.limit.isVisible() and left.style["showValues"]
    # one progress signal per run (after the one at the start); the points drawn never shrink and
    # end at every run; the front is drawn whenever a point is (how many runs have ended by the
    # time a queued signal is handled depends on the threads: a fast machine may see them all)
    counts = [k for k, _ in seen]
    assert len(seen) == rp.outcome.runs + 1, seen
    assert counts == sorted(counts) and counts[-1] == rp.outcome.runs, seen
    assert all(f >= 1 for k, f in seen if k) and seen[-1][1] >= 1
    xs, ys = view.scatter.getData()
    assert len(xs) == rp.outcome.runs < 24
    fx, _ = view.front.getData()
    assert len(fx) == len(rp.front()) >= 1
    assert "cheapest meeting" in view.status.text()
    bx, _ = view.best.getData()
    assert list(bx) == [float(rp.grid.cost[rp.outcome.best])]
    pts = view.scatter.points()
    a, b = pts[0], pts[-1]
    view._clicked(view.scatter, [a], Click())
    view._clicked(view.scatter, [b], Click(shift=True))
    assert view.pair == {"A": a.data(), "B": b.data()} and a.data() != b.data()
    rows = {r[0]: r for r in view.pair_rows()}
    t = rp.targets[0].metric
    va, vb = rp.outcome.values[a.data()][t], rp.outcome.values[b.data()][t]
    assert set(rows) >= set(rp.grid.settings[a.data()]) | {"cost_per_hour", t}
    assert view.table.rowCount() == len(rows) and view.table.item(0, 0).text() == rows[view.table.verticalHeaderItem(0).text()][1]
    assert rows[t][3] and (rows[t][4].startswith("+") == (vb > va))  # B − A and its change, signed
    assert len(view.picked.getData()[0]) == 2
    with qtbot.waitSignal(view.open_mix) as opened:
        view._clicked(view.scatter, [b], Click(double=True))
    assert opened.args[0] == rp.grid.settings[b.data()]
    with qtbot.waitSignal(view.open_mix) as opened:
        view.open_btn["A"].click()
    assert opened.args[0] == rp.grid.settings[a.data()]
    view.grab().save(str(tmp_path / "plan_view.png"))
    header, rows = view.data_rows()
    assert header[-1] == rp.targets[0].metric and len(rows) == rp.outcome.runs
