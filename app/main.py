"""`kvviz-gui [FILE] [--screenshot OUT.png --view NAME --size WxH --select LANE@TIME --measure T1,T2]`
and `make run`.

With no display (and no --screenshot), it says so in one line and does the headless job:
runs the scenario and writes its timeline figure (SVG and PNG) and metrics under out/.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

BAD_INPUT = 2
DEFAULT = "rope_prefetch_16"


def _has_display() -> bool:
    if os.environ.get("QT_QPA_PLATFORM", "") in ("offscreen", "minimal"):
        return True  # asked for offscreen explicitly: behave as the app would
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) or sys.platform in ("darwin", "win32")


def build_parser():
    """kvviz-gui's argument parser (the docs' CLI reference reads it too)."""
    from kvviz.cli_flags import OneLineParser  # a usage error is one line, as the CLI's

    from .tabs import view_names  # each tab's name and aliases
    p = OneLineParser(prog="kvviz-gui", description="kvviz desktop app")
    p.add_argument("file", nargs="?", help="scenario TOML (default: the 16-token worked example)")
    p.add_argument("--screenshot", metavar="OUT.png", help="render offscreen after the run, save, exit")
    p.add_argument("--view", default="timeline", choices=view_names())
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="edit a field after opening (with --view compare: the file is A, the edits B)")
    p.add_argument("--sweep", action="append", default=[], metavar="PATH=VALUES",
                   help="with --view sweep: an axis, e.g. engram.layer=2:63 (give one or two)")
    p.add_argument("--metric", help="with --view sweep: the metric to collect")
    p.add_argument("--replay", metavar="TRACE.csv", help="with --view replay: the time,id,size trace "
                                                         "(default: the bundled Zipf sample)")
    p.add_argument("--size", default="1600x900", help="window size for --screenshot, WxH")
    p.add_argument("--view-only", action="store_true",
                   help="with --screenshot: save the view alone, without panels (a .svg name writes SVG)")
    p.add_argument("--select", metavar="LANE@TIME",
                   help="with --screenshot, on the timeline: select the span on LANE (its name or a part of it) that "
                        "holds TIME (e.g. 57us), else the mark nearest it; its fields in the details pane")
    p.add_argument("--measure", metavar="T1,T2",
                   help="with --screenshot, on the timeline: the cursor at T1 and a second one at T2 (e.g. 58us,112.5us), "
                        "each snapped to the nearest event edge, Δt between them")
    p.add_argument("--whole-run", action="store_true",
                   help="with --screenshot: show the whole run (View → Show the Whole Run), not where the "
                        "mechanism opens (e.g. AttentionStore's one job)")
    p.add_argument("--out", default="out", help="folder for the headless job (no display)")
    return p


def _parse(argv):
    return build_parser().parse_args(argv)


MAX_SIDE = 8192  # a window larger than this is no screenshot (and may not fit in memory)


def _size(text: str) -> tuple[int, int] | None:
    """WxH for --screenshot, or None after saying why not (the caller exits 2)."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
        if not (200 <= w <= MAX_SIDE and 150 <= h <= MAX_SIDE):
            raise ValueError
        return w, h
    except ValueError:
        print(f"error: kvviz-gui: --size: expected WxH from 200x150 to {MAX_SIDE}x{MAX_SIDE} (got {text!r})",
              file=sys.stderr)
        return None


TIME_UNITS = ("ns", "us", "µs", "ms", "s")


def _time_ns(text: str, flag: str) -> float:
    """A time on the command line (`57us`, `1.5 ms`; a unit is required) in ns."""
    from kvviz import ScenarioError
    from kvviz.limits import MAX_NS, NS_PER
    from kvviz.numbers import split_unit
    got = split_unit(text.replace("\u03bc", "µ"), TIME_UNITS)  # Greek mu typed for the micro sign
    ns = float(got[0]) * NS_PER[got[1].lower()] if got is not None and got[1] else None
    if ns is None or not 0 <= ns <= MAX_NS:  # inf (1e400us, "inf s") went on to the cursors
        raise ScenarioError(f"expected a time from 0 to {MAX_NS / 1e9:.3g} s with a unit ({', '.join(TIME_UNITS)}), "
                            f"got {text!r}", "kvviz-gui", flag)
    return ns


def marks_of(select: str | None, measure: str | None, view: str) -> tuple:
    """--select LANE@TIME and --measure T1,T2 as ((lane, ns) or None, (ns, ns) or None); a
    ScenarioError naming the flag when either cannot be read."""
    from kvviz import ScenarioError
    if (select or measure) and view != "timeline":
        raise ScenarioError("--select and --measure show on the timeline: use them with --view timeline",
                            "kvviz-gui", "--select" if select else "--measure")
    sel = meas = None
    if select:
        lane, at, t = select.rpartition("@")
        if not at or not lane.strip():
            raise ScenarioError(f"expected LANE@TIME, e.g. 'L2 rows@57us', got {select!r}", "kvviz-gui", "--select")
        sel = (lane.strip(), _time_ns(t, "--select"))
    if measure:
        parts = measure.split(",")
        if len(parts) != 2:
            raise ScenarioError(f"expected T1,T2, e.g. 58us,112.5us, got {measure!r}", "kvviz-gui", "--measure")
        meas = (_time_ns(parts[0], "--measure"), _time_ns(parts[1], "--measure"))
    return sel, meas


def _resolve(file: str | None) -> str:
    from kvviz.bundled import resolve_scenario as resolve
    return resolve(file or DEFAULT)


def _quiet_offscreen_noise():
    """The offscreen platform warns about window hints it cannot honour; users need not see it."""
    from PySide6.QtCore import qInstallMessageHandler

    def handler(mode, context, message):
        if "propagateSizeHints" not in message:
            print(message, file=sys.stderr)
    qInstallMessageHandler(handler)


def _wait(signal, done, timeout_ms: int = 120_000) -> None:
    """Spin the event loop until `done()` or `signal` fires (or the timeout)."""
    from PySide6.QtCore import QEventLoop, QTimer
    if done():
        return
    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()
    signal.disconnect(loop.quit)


def screenshot(path: str, out: str, view: str = "timeline", size=(1600, 900), sets=(),
               sweep=(), metric: str | None = None, replay: str | None = None, view_only: bool = False,
               select: str | None = None, measure: str | None = None, whole_run: bool = False) -> int:
    """Open the window offscreen on `path`, wait for the run (and any edits or sweep), save a
    PNG of the window showing `view` (on the timeline, with an event selected and two cursors
    placed when `select` and `measure` ask)."""
    if not os.environ.get("QT_QPA_PLATFORM"):  # unset or empty (`QT_QPA_PLATFORM= make run`)
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    import tempfile

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication, QMessageBox

    from kvviz import ScenarioError, load_scenario
    from kvviz.scenario_data import apply_override, parse_value, read_toml
    from kvviz.sweep import Axis, grid_point, grid_size, parse_values

    from .shell.window import MainWindow
    _quiet_offscreen_noise()

    from kvviz.outputs import check_outputs, scenario_inputs, write_text
    fmt = "SVG" if view_only and out.lower().endswith(".svg") else "PNG"
    try:
        sc = load_scenario(path, list(sets))  # bad input: report and exit 2 before any window exists
        # the target before the run: never the scenario or its trace, a folder, a device, or a
        # name that says a format not written (notes.txt); a screenshot is PNG (SVG: --view-only)
        check_outputs([("--screenshot", out, fmt)], scenario_inputs(path, sc))
        if Path(out).suffix.lower() not in (".png", ".svg" if view_only else ".png"):
            raise ScenarioError(f"cannot write the file: a screenshot is PNG{' or SVG' if view_only else ''}: "
                                f"name it .png{' or .svg' if view_only else ''}", out)
        shown_marks = marks_of(select, measure, view)
        axes = [a.split("=", 1) for a in sweep]
        if any(len(a) != 2 for a in axes) or (view == "sweep" and not (axes and metric)):
            raise ScenarioError("--view sweep needs --sweep PATH=VALUES (once per axis) and --metric", "kvviz-gui",
                                "--sweep")
        if view == "sweep":
            base = read_toml(path)
            for assignment in sets:
                base = apply_override(base, assignment)
            grid = tuple(Axis(p, parse_values(v, f"--sweep {p}")) for p, v in axes)
            for i in range(grid_size(grid)):  # every point, before any window exists
                grid_point(base, grid, i, path)
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return BAD_INPUT
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:  # a screenshot never uses or changes the user's layout
        settings = QSettings(str(Path(tmp) / "kvviz.ini"), QSettings.IniFormat)
        win = MainWindow(path, settings=settings)
        win.ask_unsaved = lambda: QMessageBox.Discard  # headless: edits are never saved, never asked
        win.resize(*size)
        win.show()
        _wait(win.result_ready, lambda: win.result is not None)
        if sets:
            if view == "compare":
                win.tab("compare").pin()
            first = win.result
            for assignment in sets:
                field, value = assignment.split("=", 1)
                win.panel.set_value(field.strip(), parse_value(value.strip()))
            _wait(win.result_ready, lambda: win.result is not first)
        if view == "sweep":
            win.view("sweep").configure([tuple(a) for a in axes], metric)
        elif view == "replay" and replay:
            win.view("replay").path.setText(replay)
        tab = win.view(view) if win.tab(view).on_demand else win.tab(view).job_for(view)
        if tab is not None:  # a background job: run it, and wait
            win.show_view(view)
            tab.run()
            _wait(tab.stopped, lambda: tab.job is None, 600_000)
        if win.result is None or (tab is not None and not tab.jobs.succeeded):  # e.g. a bad metric or trace
            failed = win.status if win.result is None else tab.status
            print(f"error: {failed.text().lstrip('⚠ ')}", file=sys.stderr)
            win.close()
            return BAD_INPUT
        win.show_view(view)
        if whole_run:
            win.act_whole_run.trigger()
        for _ in range(3):
            app.processEvents()
        failed = win.view("timeline").show_at(*shown_marks) if any(shown_marks) else None
        if failed:  # e.g. no lane of that name: said, and nothing saved
            print(f"error: kvviz-gui: {failed}", file=sys.stderr)
            win.close()
            return BAD_INPUT
        for _ in range(3):
            app.processEvents()
        try:  # written as every output is (atomic: a kill or a full disk leaves the old file)
            # the tab alone, as File → Export → Current View draws it (PNG at 2x the screen, or SVG)
            write_text(out, win.view_figure(fmt.lower(), scale=2.0) if view_only else _png(win.grab()))
            failed = None
        except ScenarioError as e:  # a full disk, a folder gone since the check
            failed = str(e)
        win.close()
    if failed:
        print(f"error: {failed}", file=sys.stderr)
    return BAD_INPUT if failed else 0


def _png(pixmap) -> bytes:
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    from kvviz import ScenarioError
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.WriteOnly)
    if not pixmap.save(buf, "PNG"):
        raise ScenarioError("could not encode the screenshot as PNG")
    return bytes(data)


def headless(path: str, out_dir: str) -> int:
    """No display: write the timeline figure and metrics, print where."""
    from kvviz.cli import main as cli
    from kvviz.format import printable
    stem = Path(path).stem
    out = Path(out_dir)
    try:  # the headless job's own folder (`out/` by default): made, unlike a folder named in a file path
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"error: {out}: cannot make the folder: {e.strerror or e}", file=sys.stderr)
        return BAD_INPUT
    rc = cli(["run", path, "--svg", str(out / f"{stem}.svg"), "--json-out", str(out / f"{stem}.json")])
    if rc == 0:
        png = out / f"{stem}.png"
        rc = screenshot(path, str(png))
        if rc == 0:
            print(f"wrote {printable(str(png))}", file=sys.stderr)
    return rc


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    path = _resolve(args.file)
    if args.screenshot:
        size = _size(args.size)
        if size is None:
            return BAD_INPUT
        return screenshot(path, args.screenshot, args.view, size, args.set, args.sweep, args.metric,
                          args.replay, args.view_only, args.select, args.measure, args.whole_run)
    if args.select or args.measure:
        print("error: kvviz-gui: --select and --measure are for a --screenshot (in the window: click an event, "
              "Shift-click a second cursor)", file=sys.stderr)
        return BAD_INPUT
    if not _has_display():
        from kvviz.format import printable
        print(f"no display: running {printable(Path(path).name)} headless, writing its figure and metrics under {args.out}/")
        return headless(path, args.out)
    from PySide6.QtWidgets import QApplication

    from .shell.window import MainWindow
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("kvviz")
    win = MainWindow(path)
    win.show()
    return app.exec()


def entry() -> int:
    """The `kvviz-gui` command (and `make run`): independent runs of a scenario may use every core."""
    os.environ.setdefault("KVVIZ_WORKERS", str(os.cpu_count() or 1))
    return main()


if __name__ == "__main__":
    sys.exit(entry())
