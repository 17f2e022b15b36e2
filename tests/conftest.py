"""Shared fixtures: the bundled scenarios' results (each simulated once a session), the worked
example's scenario, and the marker check that keeps `-m "not gui ..."` honest."""
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
BUNDLED = tuple(sorted(p.stem for p in SCENARIOS.glob("*.toml")))
SLOW_TO_SIMULATE = {"attention_store_sharegpt"}  # ~20 s as shipped (9,000 conversations, 6 runs)


def quicker_copy(path: Path, folder: Path) -> Path:
    """A bundled scenario as shipped, or, for ShareGPT, a copy in `folder` with 2,000 of its 9,000
    conversations: 11,800 turns, still worth the child's pool of workers (test_app checks), for
    tests of the window rather than of the full run (test_views takes that)."""
    if path.stem != "attention_store_sharegpt":
        return path
    text = path.read_text(encoding="utf-8")
    assert text.count("conversations = 9000 ") == 1
    copy = folder / path.name
    copy.write_text(text.replace("conversations = 9000 ", "conversations = 2000 "), encoding="utf-8")
    return copy
# Fixtures that only a test needing Qt widgets asks for: such a test must say `gui`.
QT_FIXTURES = {"qtbot", "qapp"}


@pytest.fixture
def seed16():
    from kvviz import load_scenario
    return load_scenario(SCENARIOS / "rope_prefetch_16.toml")


class BundledResults(dict):
    """Results of the bundled scenarios by name, each simulated on first use and then shared.
    Results are read-only (their metrics and trace arrays refuse writes), so sharing is safe."""

    def __init__(self, overrides: dict | None = None, full: "BundledResults | None" = None):
        super().__init__()
        self.overrides, self.full = overrides or {}, full

    def __missing__(self, name: str):
        from kvviz import load_scenario, simulate
        if name not in self.overrides and self.full is not None:
            return self.full[name]  # nothing to make smaller: the very same result
        sets = [f"{k}={json.dumps(v)}" for k, v in _dotted(self.overrides.get(name, {}))]  # --set form
        workers = os.environ.get("KVVIZ_WORKERS")
        os.environ["KVVIZ_WORKERS"] = str(os.cpu_count() or 1)  # a large run's policies on every core
        try:
            self[name] = result = simulate(load_scenario(SCENARIOS / f"{name}.toml", sets))
        finally:
            if workers is None:
                del os.environ["KVVIZ_WORKERS"]
            else:
                os.environ["KVVIZ_WORKERS"] = workers
        return result


def _dotted(tree: dict, prefix: str = ""):
    for k, v in tree.items():
        yield from _dotted(v, f"{prefix}{k}.") if isinstance(v, dict) else [(prefix + k, v)]


@pytest.fixture(scope="session")
def bundled() -> BundledResults:
    """`bundled[name]`: the bundled scenario `name` as shipped, simulated once a session (the
    AttentionStore ShareGPT run alone takes ~20 s): for tests whose point is the bundled run."""
    return BundledResults()


@pytest.fixture(scope="session")
def bundled_small(bundled) -> BundledResults:
    """`bundled_small[name]`: the same with input_mutations.SMALLER's overrides (a few dozen
    conversations instead of 9,000): for tests that need a result of that kind, not its size."""
    from .input_mutations import SMALLER
    return BundledResults(SMALLER, full=bundled)


def pytest_collection_modifyitems(config, items):
    """A test that takes a Qt fixture but is not marked `gui` would run with the core tests."""
    unmarked = [item.nodeid for item in items
                if QT_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("gui") is None]
    if unmarked:
        raise pytest.UsageError("tests using qtbot/qapp must be marked gui: " + ", ".join(unmarked))


def shown(qtbot, view, width: int, height: int, result=None, settle_ms: int = 30):
    """`view` owned by qtbot, shown at width × height, with `result` drawn and the paint let
    through when one is given: the set-up of every view test that reads what a view draws."""
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    if result is not None:
        view.set_result(result)
        qtbot.wait(settle_ms)
    return view


def shown_timeline(qtbot, result, size=(1100, 480)):
    """An instrument timeline (the Timeline tab's view) showing `result`, on screen."""
    from app.views.timeline import TimelineView
    tl = TimelineView(instrument=True)
    qtbot.addWidget(tl)
    tl.resize(*size)
    tl.show()
    tl.set_result(result)
    qtbot.waitExposed(tl)
    return tl


def park_mouse(qtbot, plot, scene_pos) -> None:
    """Put the mouse over `scene_pos` of a pyqtgraph `plot` and leave it there, the move it made
    delivered (or skip where the platform does not move the cursor): for a view that then
    moves under a still mouse."""
    from PySide6.QtGui import QCursor
    QCursor.setPos(plot.mapToGlobal(plot.mapFromScene(scene_pos)))
    if not plot.rect().contains(plot.mapFromGlobal(QCursor.pos())):
        pytest.skip("this platform does not move the cursor")
    qtbot.wait(50)  # the move the cursor made is delivered now, not after the view moves


# The app's window on the 16-token worked example, for the window tests (mark them `gui`).
@pytest.fixture
def settings(tmp_path):
    from PySide6.QtCore import QSettings
    return QSettings(str(tmp_path / "kvviz.ini"), QSettings.IniFormat)


@pytest.fixture
def window(qtbot, settings):
    from PySide6.QtWidgets import QMessageBox

    from app.shell.window import MainWindow
    win = MainWindow(str(SCENARIOS / "rope_prefetch_16.toml"), settings=settings)
    win.ask_unsaved = lambda: QMessageBox.Discard  # a modal prompt would hang a headless test
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    qtbot.waitUntil(lambda: win.result is not None, timeout=30_000)
    yield win
    win.ask_unsaved = lambda: QMessageBox.Discard
    win.close()
    assert not win.runner.busy() and win.runner._proc is None  # the child process is gone


def wait_new_result(qtbot, win, old):
    qtbot.waitUntil(lambda: win.result is not old, timeout=30_000)
    return win.result


def exported(qtbot, win, start) -> bool:
    """Call `start()` (an export from the window's menu: it runs in the background) and wait for
    it to end; True when it wrote its files. An export refused at once (start() False) waits for
    nothing."""
    done: list[bool] = []
    win.export_finished.connect(done.append)
    try:
        if not start():
            return False
        qtbot.waitUntil(lambda: bool(done), timeout=180_000)
        return done[0]
    finally:
        win.export_finished.disconnect(done.append)
