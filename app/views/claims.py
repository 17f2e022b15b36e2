"""Claims view: the scenario's `[[claim]]` rows (kvviz.claims) — seed, claim, the paper's value,
the model's, the verdict (coloured), basis, why, conditions, fragile and the command that prints
the row's value (selectable, and "Copy command" on the row's context menu). Filters by verdict
and basis; the summary line is the CLI's (kvviz.claims_table.summary). Claims on the file as it
is are evaluated from the current run; claims that need other settings (`set`) run when asked,
in the background, on this computer's worker processes, as a sweep does."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from kvviz.claims import BASES, ERROR, NOT_RUN, VERDICTS, rows_from_runs, run_group, run_groups
from kvviz.claims_table import HEADS, cells, summary
from kvviz.executor import map_indexed

from ..background import JobControls

# Light backgrounds, one per verdict; a broken claim in the stall orange of a failed check.
VERDICT_COLOURS = {
    "reproduced": "#CDEBD9",
    "same_shape": "#FCEFC7",
    "not_reproduced": "#F3D0D0",
    "not_expressible": "#E4E4E4",
    ERROR: "#F6B48F",
    NOT_RUN: "#FFFFFF",
}


# The table's columns: the text tables' (kvviz.claims_table.HEADS) with fragile before the command.
COLUMNS = (*HEADS[:-1], "fragile", HEADS[-1])
ALL = "all"


class ClaimsView(QWidget):
    finished = Signal(object)  # the rows after the other settings ran (tests)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.summary = QLabel()  # the CLI's summary line
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.jobs = JobControls(self, "Run claims with other settings", "runs")
        self.jobs.run_btn.clicked.connect(self.run_others)
        self.verdict_filter, self.basis_filter = QComboBox(), QComboBox()
        self.verdict_filter.addItems([ALL, *VERDICTS, ERROR, NOT_RUN])
        self.basis_filter.addItems([ALL, *BASES])
        for box in (self.verdict_filter, self.basis_filter):
            box.currentTextChanged.connect(self._filter)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectItems)  # a cell (the command) can be selected, Ctrl+C
        self.table.setWordWrap(True)
        self.table.setContextMenuPolicy(Qt.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._menu)
        h = self.table.horizontalHeader()
        # the source, paper's and model's figures wrap in capped columns: sized to their contents
        # ("2.685 (> 1 + 0.16…)") they pushed the verdict past the tab's edge at 1366 px
        widths = {"source": 130, "claim": 210, "paper": 110, "model": 140, "why": 200, "conditions": 200,
                  "command": 280}
        for c, name in enumerate(COLUMNS):
            if name in widths:
                h.setSectionResizeMode(c, QHeaderView.Interactive)
                self.table.setColumnWidth(c, widths[name])
            else:
                h.setSectionResizeMode(c, QHeaderView.ResizeToContents)
        h.setStretchLastSection(True)
        buttons = QHBoxLayout()
        for w in (self.jobs.run_btn, self.jobs.cancel_btn):
            buttons.addWidget(w)
        buttons.addWidget(self.jobs.progress)
        # the status beside the buttons: on its own row it left a blank strip above the table
        buttons.addWidget(self.jobs.status, 1)
        for label, box in (("verdict", self.verdict_filter), ("basis", self.basis_filter)):
            buttons.addWidget(QLabel(label))
            buttons.addWidget(box)
        lay = QVBoxLayout(self)
        lay.addWidget(self.note)
        lay.addWidget(self.summary)
        lay.addLayout(buttons)
        lay.addWidget(self.table, 1)
        # the chosen row's command and conditions in full, selectable: the table's columns are narrow
        self.detail = QLabel()
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextSelectableByMouse)
        lay.addWidget(self.detail)
        self.table.currentCellChanged.connect(lambda r, *_: self._detail(r))
        self.claims: list = []
        self.conditions: list = []
        self.data: dict = {}
        self.source = "<scenario>"
        self.runs: dict = {}
        self.rows: list = []

    @property
    def job(self):
        return self.jobs.job

    def set_result(self, result, data: dict | None = None, source: str | None = None):
        """The current run's claims; runs with other settings are forgotten (they were of the
        scenario as it was)."""
        if self.job is not None:
            self.jobs.cancel()
        self.claims = list(getattr(result.scenario, "claim", ()))
        self.conditions = list(getattr(result.scenario, "claim_conditions", ()))
        self.data = data if data is not None else {}
        self.source = source or "<scenario>"
        self.runs = {(): result.metrics_dict()}
        others = [g for g in run_groups(self.claims) if g]
        self.jobs.run_btn.setEnabled(bool(others) and bool(self.data))
        self.note.setText(f"{len(self.claims)} claims of the source papers; {len(others)} need a run with other "
                          "settings (Run claims…); the command line: kvviz claims FILE" if others else
                          f"{len(self.claims)} claims of the source papers, all from this run")
        self._show()

    def run_others(self):
        groups = [g for g in run_groups(self.claims) if g and g not in self.runs]
        if not groups or not self.data:
            return
        tasks = [(self.data, self.source, g) for g in groups]

        def work(progress):
            done = [0]

            def tick(_i, _v):
                done[0] += 1
                progress(done[0], len(tasks))
            progress(0, len(tasks))
            return dict(zip(groups, map_indexed(run_group, tasks, on_result=tick)))
        self.jobs.start(work, "claims", self._ran, status=f"running {len(groups)} configurations…")

    def _ran(self, runs: dict):
        self.runs.update(runs)
        self._show()
        self.jobs.status.setText(f"ran {len(runs)} configurations")
        self.finished.emit(self.rows)

    def _show(self):
        self.rows = rows_from_runs(self.claims, self.runs, self.source, self.data or None, self.conditions)
        self.summary.setText(summary(self.rows))
        self.table.setRowCount(len(self.rows))
        for r, row in enumerate(self.rows):
            texts = cells(row)
            texts = [*texts[:-1], "—" if row.fragile is None else ("yes" if row.fragile else "no"), texts[-1]]
            for c, text in enumerate(texts):
                if COLUMNS[c] == "conditions" and len(row.conditions) > 1:  # in full below and in the tooltip
                    text = f"{row.conditions[0]} (+{len(row.conditions) - 1} more)"
                item = QTableWidgetItem(text)
                tip = text if COLUMNS[c] != "conditions" else "\n".join(row.conditions)
                item.setToolTip(tip + ("\n(right-click: Copy command)" if COLUMNS[c] == "command" and text else ""))
                if COLUMNS[c] == "verdict":
                    item.setBackground(QColor(VERDICT_COLOURS.get(row.verdict, "#FFFFFF")))
                    item.setTextAlignment(Qt.AlignCenter)
                self.table.setItem(r, c, item)
        self._filter()
        self.table.resizeRowsToContents()
        cap = 3 * self.table.fontMetrics().lineSpacing() + 8  # a long cell is read below, not in a tall row
        for r in range(self.table.rowCount()):
            self.table.setRowHeight(r, min(self.table.rowHeight(r), cap))
        if self.rows and self.table.currentRow() < 0:
            self.table.setCurrentCell(0, 0)  # the detail line shows the first row's command at once
        self._detail(self.table.currentRow() if self.rows else -1)

    def _detail(self, r: int):
        if not 0 <= r < len(self.rows):
            self.detail.setText("Choose a row for its command and conditions.")
            return
        row = self.rows[r]
        conds = "; ".join(row.conditions) or "none beyond the paper's setup"
        self.detail.setText(f"$ {row.command or '(nothing to run: not expressible)'}\nconditions: {conds}")

    def _filter(self, *_):
        verdict, basis = self.verdict_filter.currentText(), self.basis_filter.currentText()
        for r, row in enumerate(self.rows):
            shown = verdict in (ALL, row.verdict) and basis in (ALL, row.basis)
            self.table.setRowHidden(r, not shown)

    def command_of(self, table_row: int) -> str:
        return self.rows[table_row].command if 0 <= table_row < len(self.rows) else ""

    def copy_command(self, table_row: int) -> str:
        text = self.command_of(table_row)
        if text:
            QGuiApplication.clipboard().setText(text)
        return text

    def _menu(self, pos):
        r = self.table.rowAt(pos.y())
        if not self.command_of(r):
            return
        menu = QMenu(self)
        menu.addAction("Copy command", lambda: self.copy_command(r))
        menu.exec(self.table.viewport().mapToGlobal(pos))

    def verdicts(self) -> list[str]:
        return [r.verdict for r in self.rows]

    def shutdown(self):
        self.jobs.shutdown()
