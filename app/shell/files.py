"""Scenario files, for the main window: open (also by drag and drop and from the recent list),
save, save as, reset to the file, and asking before unsaved edits are dropped."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox

from kvviz import ScenarioError

MAX_RECENT = 8


class ScenarioFiles:
    """A mixin of MainWindow: reads its panel, picker, settings, runner and recent menu."""

    def open(self, path: str) -> bool:
        """Open a scenario file. One that does not validate opens too, its values shown and the
        blamed fields marked, so it can be fixed here; only an unreadable file is refused."""
        if not self._confirm_discard():
            self._sync_picker()  # the picker may already show the name the user chose
            return False
        try:
            self.panel.load(path, strict=False)
        except ScenarioError as e:
            self._fail(str(e))
            self._sync_picker()
            return False
        self.runner.cancel()  # a run of the previous scenario must not arrive as this one's
        self.time_range.forget()
        self._view_values.clear()  # a pick made for viewing belongs to the scenario it was made in
        self._new_scenario = True
        self._add_recent(path)
        self._sync_picker()
        self._title()
        scenario = self.panel.scenario()
        self._note_stale(scenario)
        if scenario is not None:
            self._run(scenario)
        else:
            errors = self.panel.errors()
            self._fail(f"{Path(path).name} does not validate; fix it on the left: "
                       f"{errors[0][0]}: {errors[0][1]}")
        return True

    def _sync_picker(self):
        self.picker.show_file(self.panel.path())

    def open_dialog(self):
        path, _ = QFileDialog.getOpenFileName(self, "Open scenario", str(Path(self.panel.path() or ".").parent),
                                              "Scenarios (*.toml)")
        if path:
            self.open(path)

    def _nothing_open(self) -> bool:
        """True, after saying so, when no scenario is open (the file given was missing or
        unreadable): Save, Save As and Reset have nothing to act on."""
        if self.panel.path() is not None:
            return False
        self._say("⚠ no scenario is open: open a scenario first (File → Open, or the Scenario box)")
        return True

    def save(self) -> bool:
        if self._nothing_open():
            return False
        try:
            self.panel.save()
        except (ScenarioError, OSError) as e:
            self._fail(f"not saved: {e}")
            return False
        self._say(f"saved {self.panel.path()}")
        return True

    def save_as(self) -> bool:
        if self._nothing_open():
            return False
        path, _ = QFileDialog.getSaveFileName(self, "Save scenario as", self.panel.path() or "", "Scenarios (*.toml)")
        if not path:
            return False
        try:
            self.panel.save(path)
        except (ScenarioError, OSError) as e:
            self._fail(f"not saved: {e}")
            return False
        self._add_recent(path)
        self._sync_picker()  # the Scenario box named the old file
        self._title()
        self._say(f"saved {self.panel.path()}")
        return True

    def reset_to_file(self):
        """Back to the file's values, after asking when that drops edits (a toolbar click
        threw them all away at once)."""
        if self._nothing_open():
            return
        if self.panel.is_dirty() and self.ask_reset() != QMessageBox.Discard:
            return
        self.panel.reset_to_file()
        scenario = self.panel.scenario()
        if scenario is not None:
            self._run(scenario)

    def ask_unsaved(self) -> QMessageBox.StandardButton:
        """Save / Discard / Cancel for unsaved edits (tests replace this)."""
        return QMessageBox.question(self, "Unsaved changes",
                                    f"{Path(self.panel.path() or 'scenario').name} has unsaved changes.",
                                    QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel,
                                    QMessageBox.Save)

    def ask_reset(self) -> QMessageBox.StandardButton:
        """Discard / Cancel before Reset drops unsaved edits (tests replace this)."""
        return QMessageBox.question(self, "Reset to the file",
                                    f"Discard the unsaved changes to {Path(self.panel.path() or 'scenario').name} "
                                    "and go back to the file's values?",
                                    QMessageBox.Discard | QMessageBox.Cancel, QMessageBox.Cancel)

    def _confirm_discard(self) -> bool:
        if not self.panel.is_dirty():
            return True
        answer = self.ask_unsaved()
        if answer == QMessageBox.Save:
            return self.save()
        return answer == QMessageBox.Discard

    def _add_recent(self, path: str):
        path = str(Path(path).resolve())  # one entry per file, whatever the directory it was opened from
        recent = [p for p in self._recent() if p != path]
        self.settings.setValue("recent", [path] + recent[: MAX_RECENT - 1])
        self._fill_recent()

    def _recent(self) -> list[str]:
        value = self.settings.value("recent", [])
        return [value] if isinstance(value, str) else list(value or [])

    def _fill_recent(self):
        self.recent_menu.clear()
        for p in self._recent():
            self.recent_menu.addAction(p, lambda p=p: self.open(p))
        self.recent_menu.setEnabled(bool(self._recent()))

    # --- drag and drop ------------------------------------------------------------------
    def dragEnterEvent(self, event):  # noqa: N802 (Qt's name)
        urls = event.mimeData().urls()
        if urls and urls[0].toLocalFile().endswith(".toml"):
            event.acceptProposedAction()

    def dropEvent(self, event):  # noqa: N802
        self.open(event.mimeData().urls()[0].toLocalFile())
