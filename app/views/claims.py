"""Claims view: the scenario's `[[claim]]` rows (kvviz.claims) — seed, claim, the paper's value,
the model's, the verdict (coloured) and why. Claims on the file as it is are evaluated from the
current run; claims that need other settings (`set`) run when asked, in the background, on
this computer's worker processes, as a sweep does."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHBoxLayout, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from kvviz.claims import ERROR, NOT_RUN, rows_from_runs, run_group, run_groups
from kvviz.claims_table import HEADS, cells
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


class ClaimsView(QWidget):
    finished = Signal(object)  # the rows after the other settings ran (tests)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.jobs = JobControls(self, "Run claims with other settings", "runs")
        self.jobs.run_btn.clicked.connect(self.run_others)
        self.table = QTableWidget(0, len(HEADS))
        self.table.setHorizontalHeaderLabels(list(HEADS))
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setWordWrap(True)
        h = self.table.horizontalHeader()
        for c, mode in enumerate((QHeaderView.ResizeToContents, QHeaderView.Stretch, QHeaderView.ResizeToContents,
                                  QHeaderView.ResizeToContents, QHeaderView.ResizeToContents, QHeaderView.Stretch)):
            h.setSectionResizeMode(c, mode)
        buttons = QHBoxLayout()
        for w in (self.jobs.run_btn, self.jobs.cancel_btn):
            buttons.addWidget(w)
        buttons.addWidget(self.jobs.progress)
        # the status beside the buttons: on its own row it left a blank strip above the table
        buttons.addWidget(self.jobs.status, 1)
        lay = QVBoxLayout(self)
        lay.addWidget(self.note)
        lay.addLayout(buttons)
        lay.addWidget(self.table, 1)
        self.claims: list = []
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
        self.data = data if data is not None else {}
        self.source = source or "<scenario>"
        self.runs = {(): result.metrics_dict()}
        others = [g for g in run_groups(self.claims) if g]
        self.jobs.run_btn.setEnabled(bool(others) and bool(self.data))
        self.note.setText(f"{len(self.claims)} claims of the seed papers; {len(others)} need a run with other "
                          "settings (Run claims…); the command line: kvviz claims FILE" if others else
                          f"{len(self.claims)} claims of the seed papers, all from this run")
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
        self.rows = rows_from_runs(self.claims, self.runs, self.source)
        self.table.setRowCount(len(self.rows))
        for r, row in enumerate(self.rows):
            for c, text in enumerate(cells(row)):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                if HEADS[c] == "verdict":
                    item.setBackground(QColor(VERDICT_COLOURS.get(row.verdict, "#FFFFFF")))
                    item.setTextAlignment(Qt.AlignCenter)
                self.table.setItem(r, c, item)
        self.table.resizeRowsToContents()

    def verdicts(self) -> list[str]:
        return [r.verdict for r in self.rows]

    def shutdown(self):
        self.jobs.shutdown()
