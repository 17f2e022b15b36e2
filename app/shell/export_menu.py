"""File → Export, for the main window: one entry per format in kvviz.export's registry (and its
visible-range variant for a timeline figure), and the current tab as drawn (PNG or SVG)."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from kvviz.errors import ScenarioError
from kvviz.export import EXPORT_FORMATS, export_format
from kvviz.export.figure_size import PX_PER_IN
from kvviz.format import printable
from kvviz.outputs import check_outputs, scenario_inputs

from ..save_dir import remember, start_path
from .figure_size_dialog import FigureSizeDialog, stored_figure_size


class ExportMenu:
    """A mixin of MainWindow: reads its result, panel, settings, tabs and time view."""

    def _build_export_menu(self, menu):
        ranged = None
        for f in EXPORT_FORMATS.values():
            if ranged is not None and f.ranged != ranged:
                menu.addSeparator()  # the timeline figures, then the data
            ranged = f.ranged
            menu.addAction(f.label, lambda f=f.name: self.export_dialog(f))
            if f.ranged:
                menu.addAction(f.label.replace("…", " (visible range)…"), lambda f=f.name: self.export_dialog(f, True))
        menu.addSeparator()
        for fmt in ("png", "svg"):  # any tab as drawn: ladder, policies, counters, replay curves
            menu.addAction(f"Current View as {fmt.upper()}…", lambda f=fmt: self.export_view_dialog(f))
        # any tab's numbers (a sweep grid, curves, tables): each tab offers its rows (Tab.data_rows)
        self.act_export_data = menu.addAction("Data as CSV (current view)…", self.export_data_dialog)
        menu.addSeparator()
        menu.addAction("Figure Size and Resolution…", self.figure_size_dialog)

    def figure_size_dialog(self) -> FigureSizeDialog:
        dialog = FigureSizeDialog(self.settings, self)
        dialog.open()  # window-modal, not a nested event loop
        return dialog

    def run_inputs(self) -> list[tuple[str, str]]:
        """The files the scenario on show reads (itself, its trace): no export goes over them."""
        sc, path = self.panel.scenario(), self.panel.path()
        return scenario_inputs(path, sc) if sc is not None and path else []

    def figure_size(self):
        """Every figure's inches and dpi (File → Export → Figure Size…, as kvviz run --width/--height/--dpi)."""
        return stored_figure_size(self.settings)

    def _export_stem(self) -> str:
        """The suggested name's stem: the file whose run is on show. After opening a file that does
        not validate (or has not run yet), the previous file's run stays on screen, under the
        stale note, and is what gets written; else the panel's file (also after a Save As)."""
        previous = self._shown_path if not self.stale_note.isHidden() else None
        return Path(previous or self.panel.path() or "kvviz").stem

    def _no_run_to_export(self, tab=None) -> bool:
        """True, after saying so, when there is no run on show to export (no scenario open yet):
        the figure would be empty axes. A tab run on demand (a sweep, a replay) draws its own."""
        if self.result is not None or (tab is not None and tab.on_demand):
            return False
        self._say("⚠ nothing to export: no run on show (open a scenario first)")
        return True

    def export_dialog(self, fmt: str, visible_range: bool = False):
        if self._no_run_to_export():
            return
        ext = export_format(fmt).ext
        stem = self._export_stem()
        path, _ = QFileDialog.getSaveFileName(self, f"Export {fmt.upper()}", start_path(self.settings, f"{stem}.{ext}"),
                                              f"*.{ext}")
        if path:
            self.export(fmt, path, visible_range)

    # --- in the background (app.export_job): the window repaints, Cancel stops before the write
    def _build_export_status(self):
        """The status bar's export progress and its Cancel, shown while an export runs."""
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QProgressBar, QPushButton

        from ..export_job import ExportJobs
        self.exports = ExportJobs(self)
        self.export_progress = QProgressBar()
        self.export_progress.setRange(0, 0)  # rendering cannot tell how far it is: busy, with the time
        self.export_progress.setMaximumWidth(120)
        self.export_cancel = QPushButton("Cancel Export")
        self.export_cancel.setFocusPolicy(Qt.NoFocus)
        self.export_cancel.clicked.connect(self.cancel_export)
        for w in (self.export_progress, self.export_cancel):
            self.statusBar().addPermanentWidget(w)
            w.hide()
        self._export_stage = "rendering"
        self._export_tick = QTimer(self, interval=1000)  # the elapsed time, once a second
        self._export_tick.timeout.connect(self._say_export)
        self.exports.stage.connect(self._export_staged)
        self.exports.ended.connect(self._export_ended)

    def _export_started(self, what: str, path: str):
        self._export_path = path
        self._export_existed = Path(path).exists()
        self._export_stage = "rendering"
        self.export_progress.show()
        self.export_cancel.show()
        self._export_tick.start()
        self._say_export()

    def _export_staged(self, stage: str):
        self._export_stage = stage
        self._say_export()

    def _say_export(self):
        import time
        secs = time.monotonic() - self.exports.t0
        self._say(f"exporting {self.exports.what} to {Path(self._export_path).name}: {self._export_stage}… "
                  f"{secs:.0f} s (the window stays usable; Cancel Export leaves any previous file as it was)")

    def _export_ended(self, ok: bool, message: str):
        self._export_tick.stop()
        self.export_progress.hide()
        self.export_cancel.hide()
        if ok:
            remember(self.settings, self._export_path)
            self._say("wrote " + message)
        elif "cancelled" in message and not message.startswith("export failed"):
            name = Path(self._export_path).name
            self._say(f"export of {self.exports.what} cancelled: "
                      + (f"{name} left as it was" if self._export_existed else f"nothing written, no {name}"))
        else:
            self._fail(message)
        self.export_finished.emit(ok)

    def cancel_export(self):
        self.exports.cancel()

    def _begin_export(self, start, what: str, path: str) -> bool:
        """Start an export (`start()` -> False while another runs, which is said)."""
        if self.exports.busy():
            self._say(f"⚠ exporting {self.exports.what} already: wait for it or Cancel Export")
            return False
        self._export_started(what, path)
        return bool(start())

    def export(self, fmt: str, path: str, visible_range: bool = False) -> bool:
        """Write the current run, in the background: figures use the time view's visible range
        when asked. A target the output guard refuses is said at once, and nothing starts."""
        from ..export_render import export_paths, said
        rng = self.time_view.visible_range_ns() if visible_range else None
        inputs = self.run_inputs()
        try:
            check_outputs([(f"the {fmt} export", p, said(fmt)) for p in export_paths(fmt, path)], inputs)
        except (ScenarioError, OSError, ValueError) as e:
            self._fail(f"export failed: {e}")
            return False
        what = export_format(fmt).label.rstrip("…") if fmt in EXPORT_FORMATS else fmt
        result, size = self.result, self.figure_size()
        return self._begin_export(lambda: self.exports.render(result, fmt, path, rng, size, inputs, what), what, path)

    def export_current(self):
        """The toolbar's Export…: what the current tab shows (the timeline's full SVG figure on
        the Timeline tab; elsewhere the tab's view), never the timeline from another tab."""
        if self.current_tab().name == "timeline":
            self.export_dialog("svg")
        else:
            self.export_view_dialog("svg")

    def export_view_dialog(self, fmt: str):
        if self._no_run_to_export(self.current_tab()):
            return
        name = self.current_tab().name
        stem = self._export_stem()
        path, _ = QFileDialog.getSaveFileName(self, f"Export the view as {fmt.upper()}",
                                              start_path(self.settings, f"{stem}_{name}.{fmt}"), f"*.{fmt}")
        if path:
            self.export_view(fmt, path)

    def export_view(self, fmt: str, path: str):
        """The current tab as a figure: its plots alone, under a caption line (app.figure),
        at the figure size: PNG of inches × dpi pixels, or SVG with clip paths and vectors."""
        try:  # drawn here (widgets draw on the GUI thread only), written in the background
            check_outputs([(f"the {fmt} export", path, fmt.upper())], self.run_inputs())
            data = self.view_figure(fmt)
        except (ScenarioError, OSError, ValueError) as e:
            self._fail(f"export failed: {e}")
            return False
        what = f"the {self.current_tab().title(self.result)} view as {fmt.upper()}"
        return self._begin_export(lambda: self.exports.write(lambda: [(path, data)], fmt.upper(), self.run_inputs(),
                                                             what), what, path)

    def view_figure(self, fmt: str, scale: float | None = None) -> bytes:
        """The current tab's figure as bytes, at the figure size (or, given `scale`, that many
        times the screen's pixels); a tab with no plot (a table) as drawn."""
        from ..exporting import render_widget
        from ..figure import figure_box, figure_plots, figure_png, figure_svg
        tab = self.current_tab()
        widget = tab.figure_widget()
        if not figure_plots(widget):
            return render_widget(widget, fmt)
        caption = self.figure_caption()
        size = self.figure_size()
        if fmt == "svg":
            return figure_svg(widget, caption, None if scale else size.width_px)
        if fmt != "png":
            raise ValueError(f"unknown view format {fmt!r} (png or svg)")
        dpi = round(PX_PER_IN * scale) if scale else size.dpi
        if scale is None:
            if problem := size.problem(raster=True):
                raise ValueError(problem[1])
            scale = size.raster_px()[0] / figure_box(widget, caption)[0]
        from PySide6.QtCore import QBuffer, QByteArray, QIODevice
        data = QByteArray()
        buf = QBuffer(data)
        buf.open(QIODevice.WriteOnly)
        if not figure_png(widget, caption, scale, dpi).save(buf, "PNG"):
            raise ValueError("could not encode the PNG")
        return bytes(data)

    def figure_caption(self) -> str:
        """One line: the view, the scenario, and the parameters changed from its file."""
        from ..views.compare import _flat
        tab = self.current_tab()
        note = getattr(tab.figure_widget(), "figure_note", None)
        if callable(note) and note():  # a view that does not show the scenario (Replay) says what it shows
            return f"{tab.title(self.result)} · {note()}"
        name = self.result.scenario.name if self.result is not None else "kvviz"
        if not self.stale_note.isHidden() and self._shown_path:
            # the previous file's run, under the stale note: the panel holds another file, whose
            # name and differences say nothing of the figure
            return printable(f"{tab.title(self.result)} · {name} ({Path(self._shown_path).name})")
        file = Path(self.panel.path()).name if self.panel.path() else "unsaved"
        edited = _flat(self.panel.data())
        changed = [f"{k} = {_brief(v)} (file: {_brief(self.panel.value(k, of_file=True))})"
                   for k, v in edited.items() if v != self.panel.value(k, of_file=True)]
        changed += [f"{k} unset (file: {_brief(self.panel.value(k, of_file=True))})"
                    for k in self._file_keys() if k not in edited]
        tail = "; changed from the file: " + ", ".join(changed) if changed else "; as in its file"
        return printable(f"{tab.title(self.result)} · {name} ({file}){tail}")  # one line on the figure

    def _file_keys(self) -> list[str]:
        from ..views.compare import _flat
        return list(_flat(self.panel.file_data()))

    def export_data_dialog(self):
        tab = self.current_tab()
        if self._no_run_to_export(tab):
            return
        if tab.data_rows() is None:
            self._say(f"⚠ the {tab.title(self.result)} tab shows no table of numbers now"
                      + (" (run it first)" if tab.on_demand else "; Trace as CSV writes the run's events"))
            return
        stem = self._export_stem()
        path, _ = QFileDialog.getSaveFileName(self, "Export the view's data as CSV",
                                              start_path(self.settings, f"{stem}_{tab.name}.csv"), "CSV (*.csv)")
        if path:
            self.export_data(path)

    def export_data(self, path: str) -> bool:
        """The current tab's numbers as CSV (Tab.data_rows); False, said, when it has none."""
        from kvviz.export.table import table_csv
        tab = self.current_tab()
        table = tab.data_rows()
        if table is None:
            self._say(f"⚠ the {tab.title(self.result)} tab shows no table of numbers now")
            return False
        try:
            check_outputs([("the CSV export", path, "CSV")], self.run_inputs())
        except (ScenarioError, OSError) as e:
            self._fail(f"export failed: {e}")
            return False
        what = f"the {tab.title(self.result)} view's {len(table[1]):,} rows as CSV"
        return self._begin_export(lambda: self.exports.write(lambda: [(path, table_csv(*table))], "CSV",
                                                             self.run_inputs(), what), what, path)


def _brief(v) -> str:
    text = str(v) if not isinstance(v, float) else f"{v:g}"
    return text if len(text) <= 30 else text[:29] + "…"
