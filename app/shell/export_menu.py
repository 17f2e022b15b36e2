"""File → Export, for the main window: one entry per format in kvviz.export.FORMATS (and its
visible-range variant for a timeline figure), and the current tab as drawn (PNG or SVG)."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from kvviz.errors import ScenarioError
from kvviz.export import FORMATS, export_format
from kvviz.export.figure_size import PX_PER_IN
from kvviz.format import printable
from kvviz.outputs import check_outputs, scenario_inputs, write_text

from ..save_dir import remember, start_path
from .figure_size_dialog import FigureSizeDialog, stored_figure_size


class ExportMenu:
    """A mixin of MainWindow: reads its result, panel, settings, tabs and time view."""

    def _build_export_menu(self, menu):
        ranged = None
        for f in FORMATS:
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

    def _write(self, path: str, data: str | bytes, fmt: str) -> None:
        check_outputs([(f"the {fmt} export", path, fmt)], self.run_inputs())
        write_text(path, data)

    def figure_size(self):
        """Every figure's inches and dpi (File → Export → Figure Size…, as kvviz run --width/--height/--dpi)."""
        return stored_figure_size(self.settings)

    def export_dialog(self, fmt: str, visible_range: bool = False):
        if self.result is None:
            return
        ext = export_format(fmt).ext
        stem = Path(self.panel.path() or "kvviz").stem
        path, _ = QFileDialog.getSaveFileName(self, f"Export {fmt.upper()}", start_path(self.settings, f"{stem}.{ext}"),
                                              f"*.{ext}")
        if path:
            self.export(fmt, path, visible_range)

    def export(self, fmt: str, path: str, visible_range: bool = False):
        """Write the current run: figures use the time view's visible range when asked."""
        from ..exporting import export_result
        rng = self.time_view.visible_range_ns() if visible_range else None
        try:
            written = export_result(self.result, fmt, path, rng, self.figure_size(), self.run_inputs())
        except (ScenarioError, OSError, ValueError) as e:
            self._fail(f"export failed: {e}")
            return
        remember(self.settings, path)
        self._say("wrote " + ", ".join(written))

    def export_current(self):
        """The toolbar's Export…: what the current tab shows (the timeline's full SVG figure on
        the Timeline tab; elsewhere the tab's view), never the timeline from another tab."""
        if self.current_tab().name == "timeline":
            self.export_dialog("svg")
        else:
            self.export_view_dialog("svg")

    def export_view_dialog(self, fmt: str):
        name = self.current_tab().name
        stem = Path(self.panel.path() or "kvviz").stem
        path, _ = QFileDialog.getSaveFileName(self, f"Export the view as {fmt.upper()}",
                                              start_path(self.settings, f"{stem}_{name}.{fmt}"), f"*.{fmt}")
        if path:
            self.export_view(fmt, path)

    def export_view(self, fmt: str, path: str):
        """The current tab as a figure: its plots alone, under a caption line (app.figure),
        at the figure size: PNG of inches × dpi pixels, or SVG with clip paths and vectors."""
        try:
            self._write(path, self.view_figure(fmt), fmt.upper())
        except (ScenarioError, OSError, ValueError) as e:
            self._fail(f"export failed: {e}")
            return
        remember(self.settings, path)
        self._say(f"wrote {path}")

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
        if tab.data_rows() is None:
            self._say(f"⚠ the {tab.title(self.result)} tab shows no table of numbers now"
                      + (" (run it first)" if tab.on_demand else "; Trace as CSV writes the run's events"))
            return
        stem = Path(self.panel.path() or "kvviz").stem
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
            self._write(path, table_csv(*table), "CSV")
        except (ScenarioError, OSError) as e:
            self._fail(f"export failed: {e}")
            return False
        remember(self.settings, path)
        self._say(f"wrote {path} ({len(table[1]):,} rows)")
        return True


def _brief(v) -> str:
    text = str(v) if not isinstance(v, float) else f"{v:g}"
    return text if len(text) <= 30 else text[:29] + "…"
