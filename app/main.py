"""`kvviz-gui [FILE] [--screenshot OUT.png --view timeline|metrics --size WxH]` and `make run`.

With no display (and no --screenshot), it says so in one line and does the headless job:
runs the scenario and writes its timeline figure (SVG and PNG) and metrics under out/.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

BAD_INPUT = 2
DEFAULT = "rope_prefetch_16"


def _has_display() -> bool:
    if os.environ.get("QT_QPA_PLATFORM", "") in ("offscreen", "minimal"):
        return True  # asked for offscreen explicitly: behave as the app would
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) or sys.platform in ("darwin", "win32")


def _parse(argv):
    p = argparse.ArgumentParser(prog="kvviz-gui", description="kvviz desktop app")
    p.add_argument("file", nargs="?", help="scenario TOML (default: the 16-token worked example)")
    p.add_argument("--screenshot", metavar="OUT.png", help="render offscreen after the run, save, exit")
    p.add_argument("--view", default="timeline", choices=["timeline", "metrics"])
    p.add_argument("--size", default="1600x900", help="window size for --screenshot, WxH")
    p.add_argument("--out", default="out", help="folder for the headless job (no display)")
    return p.parse_args(argv)


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
        if w < 200 or h < 150:
            raise ValueError
        return w, h
    except ValueError:
        raise SystemExit(f"kvviz-gui: --size: expected WxH, at least 200x150 (got {text!r})") from None


def _resolve(file: str | None) -> str:
    from kvviz.cli import _resolve as resolve
    return resolve(file or DEFAULT)


def _quiet_offscreen_noise():
    """The offscreen platform warns about window hints it cannot honour; users need not see it."""
    from PySide6.QtCore import qInstallMessageHandler

    def handler(mode, context, message):
        if "propagateSizeHints" not in message:
            print(message, file=sys.stderr)
    qInstallMessageHandler(handler)


def screenshot(path: str, out: str, view: str = "timeline", size=(1600, 900)) -> int:
    """Open the window offscreen on `path`, wait for the run, save a PNG of it."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QTimer
    _quiet_offscreen_noise()
    from PySide6.QtWidgets import QApplication

    from kvviz import ScenarioError, load_scenario
    from .window import MainWindow

    try:
        load_scenario(path)  # bad input: report and exit 2 before any window exists
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return BAD_INPUT
    app = QApplication.instance() or QApplication([])
    win = MainWindow(path)
    win.resize(*size)
    win.show()
    loop = QEventLoop()
    win.result_ready.connect(loop.quit)
    win.runner.failed.connect(lambda m: loop.quit())
    QTimer.singleShot(60_000, loop.quit)
    if win.result is None:
        loop.exec()
    if win.result is None:
        print(f"error: {win.status.text()}", file=sys.stderr)
        return BAD_INPUT
    app.processEvents()
    widget = {"timeline": win, "metrics": win.metrics}[view]
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    ok = widget.grab().save(out)
    win.close()
    return 0 if ok else 1


def headless(path: str, out_dir: str) -> int:
    """No display: write the timeline figure and metrics, print where."""
    from kvviz.cli import main as cli
    stem = Path(path).stem
    out = Path(out_dir)
    rc = cli(["run", path, "--svg", str(out / f"{stem}.svg"), "--json-out", str(out / f"{stem}.json")])
    if rc == 0:
        png = out / f"{stem}.png"
        rc = screenshot(path, str(png))
        if rc == 0:
            print(f"wrote {png}", file=sys.stderr)
    return rc


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    path = _resolve(args.file)
    if args.screenshot:
        return screenshot(path, args.screenshot, args.view, _size(args.size))
    if not _has_display():
        print(f"no display: running {Path(path).name} headless, writing its figure and metrics under {args.out}/")
        return headless(path, args.out)
    from PySide6.QtWidgets import QApplication

    from .window import MainWindow
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("kvviz")
    win = MainWindow(path)
    win.show()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
