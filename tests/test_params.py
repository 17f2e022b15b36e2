"""The generated parameter panel (app/params/), headless (pytest-qt)."""
import re
import shutil
import tomllib
from pathlib import Path
from typing import Literal

import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from pydantic import BaseModel  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QAbstractSpinBox, QCheckBox, QComboBox, QLabel, QLineEdit, QTableWidget  # noqa: E402

import app.params as params  # noqa: E402
import app.params.field_tree  # noqa: E402,F401  (params.field_tree is patched below)
import app.params.panel  # noqa: E402,F401  (params.panel is patched below)
import kvviz.io  # noqa: E402
import kvviz.loading  # noqa: E402
from app.params import ParameterPanel, path_str  # noqa: E402
from kvviz import ScenarioError, load_scenario, simulate  # noqa: E402
from kvviz.mechanisms import Mechanism, mechanisms  # noqa: E402
from kvviz.scenario import ScenarioBase, Section, param  # noqa: E402

from .conftest import SCENARIOS  # noqa: E402

BUNDLED = sorted(SCENARIOS.glob("*.toml"))
ROPE = SCENARIOS / "rope_prefetch_16.toml"


@pytest.fixture
def panel(qtbot):
    p = ParameterPanel()
    qtbot.addWidget(p)
    p.resize(380, 900)
    p.show()
    return p


@pytest.fixture
def rope(panel, tmp_path):
    """The panel editing a copy of the 16-token worked example."""
    path = tmp_path / "rope.toml"
    shutil.copy(ROPE, path)
    panel.load(str(path))
    return panel


def record(signal) -> list:
    out = []
    signal.connect(out.append)
    return out


def fields_of(model, data: dict, prefix=()):
    """Every field a panel must show, walked from the model (independently of the panel):
    nested sections recurse, a table holding a scenario of a known kind recurses into its model."""
    for name, info in model.model_fields.items():
        if name == "kind":
            continue
        path = prefix + (name,)
        value = data
        for p in path:
            value = value.get(p) if isinstance(value, dict) else None
        ann = info.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            yield from fields_of(ann, data, path)
        elif isinstance(value, dict) and value.get("kind") in mechanisms():
            yield from fields_of(mechanisms()[value["kind"]].model, data, path)
        else:
            yield path_str(path), info


# --- loading -------------------------------------------------------------------------------

@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_every_bundled_scenario_loads_with_a_widget_per_field(panel, path):
    invalid = record(panel.invalid)
    panel.load(str(path))
    assert panel.scenario() == load_scenario(path)
    assert panel.errors() == [] and not panel.is_dirty() and invalid == []
    assert panel.data() == tomllib.loads(path.read_text(encoding="utf-8"))
    model = mechanisms()[panel.data()["kind"]].model
    shown = set(panel.field_paths())
    for dotted, info in fields_of(model, panel.data()):
        w = panel.widget_for(dotted)
        assert w is not None and dotted in shown, dotted
        unit = (info.json_schema_extra or {}).get("unit")
        if info.annotation in (int, float):
            assert isinstance(w, QAbstractSpinBox), dotted
            assert w.suffix() == (f" {unit}" if unit else ""), dotted
        elif info.annotation is bool:
            assert isinstance(w, QCheckBox)
        if info.description and not isinstance(w, QTableWidget):
            assert info.description in w.toolTip(), dotted


def test_widgets_follow_field_types_and_constraints(rope):
    slots = rope.widget_for("cache.slots")
    assert slots.bounds() == (1, 10_000_000) and slots.text() == "8 slots"
    assert "KV slots in the GPU cache" in slots.toolTip() and "range: >= 1" in slots.toolTip()
    assert isinstance(rope.widget_for("prefetch.eviction"), QComboBox)
    assert [rope.widget_for("prefetch.eviction").itemText(i) for i in range(2)] == ["outside_window", "lazy"]
    assert isinstance(rope.widget_for("attention.causal"), QCheckBox)
    queries = rope.widget_for("sequence.queries")
    assert isinstance(queries, QLineEdit) and queries.text() == "8, 12"
    reads = rope.widget_for("reads")
    assert isinstance(reads, QTableWidget) and reads.rowCount() == 2
    assert [reads.horizontalHeaderItem(c).text() for c in range(2)] == ["t_us (µs)", "positions (position)"]
    assert reads.item(1, 1).text() == "6, 9, 10"
    assert rope.widget_for("reads[1].positions") is reads  # the nearest enclosing widget
    assert isinstance(rope.widget_for("name"), QLineEdit) and isinstance(rope.widget_for("description"), QLineEdit)
    assert rope.widget_for("kind") is None and rope.widget_for("cache.nope") is None


def test_floats_are_shown_exactly(panel, tmp_path):
    path = tmp_path / "e.toml"
    shutil.copy(SCENARIOS / "engram_qwen3_32b_cxl.toml", path)
    panel.load(str(path))
    assert panel.widget_for("model.step_time_us").text() == "3600 µs"
    assert panel.widget_for("model.batch_fixed_share").text() == "0.7 share"
    assert panel.widget_for("pool.latency_us").text() == "0.2 µs"
    panel.set_value("model.step_time_us", 56.25)
    assert panel.widget_for("model.step_time_us").text() == "56.25 µs"
    spin = panel.widget_for("engram.compute_us")
    spin.setFocus()
    spin.selectAll()
    spin.lineEdit().insert("0.725")
    assert spin.text() == "0.725 µs" and panel.data()["engram"]["compute_us"] == 0.725
    assert panel.scenario().engram.compute_us == 0.725
    # integers beyond 32 bits are exact
    panel.set_value("engram.hash_seed", 2**40 + 1)
    assert panel.widget_for("engram.hash_seed").number() == 2**40 + 1
    assert panel.scenario().engram.hash_seed == 2**40 + 1


def test_absent_fields_show_their_default_and_an_edit_adds_them(panel, tmp_path):
    path = tmp_path / "ladder.toml"
    shutil.copy(SCENARIOS / "ladder_seed.toml", path)
    panel.load(str(path))
    warm = panel.widget_for("warmup_queries")
    assert "warmup_queries" not in panel.data() and warm.text() == "0 queries"
    assert panel.widget_for("base").text() == ""  # optional, not set
    warm.setValue(3)
    assert panel.data()["warmup_queries"] == 3 and panel.scenario().warmup_queries == 3


def test_defaults_follow_the_preset_the_section_picks(panel, tmp_path, qtbot):
    # The bundled AttentionStore file picks LLaMA-65B and leaves its numbers to the preset: the
    # grey defaults are the 65B's (what the simulation uses), and follow a new preset at once,
    # whether picked in the combo box or set by path.
    path = tmp_path / "as.toml"
    shutil.copy(SCENARIOS / "attention_store_sharegpt.toml", path)
    panel.load(str(path))
    kv, layers = panel.widget_for("model.kv_bytes_per_token"), panel.widget_for("model.layers")
    assert "kv_bytes_per_token" not in panel.data()["model"]
    assert (kv.value(), layers.value()) == (2_621_440, 80)
    assert panel.scenario().model.kv_bytes_per_token == 2_621_440
    combo = panel.widget_for("model.preset")
    combo.setCurrentIndex(combo.findText("llama-13b"))
    assert (kv.value(), layers.value()) == (819_200, 40)
    assert "kv_bytes_per_token" not in panel.data()["model"]  # still the preset's, not written
    panel.set_value("model.preset", "falcon-40b")
    assert (kv.value(), layers.value()) == (122_880, 60)
    panel.set_value("model.layers", 7)  # a value the file sets wins and stays
    panel.set_value("model.preset", "llama-70b")
    assert (kv.value(), layers.value()) == (327_680, 7)


def test_free_hbm_shown_in_grey_follows_the_preset_of_another_section(panel, tmp_path, qtbot):
    # hardware.hbm_free_gb is not set in the bundled file: it is computed from the model preset
    # and the GPUs (4 × 80 − 2 × params), and the panel shows that value as the default.
    path = tmp_path / "as.toml"
    shutil.copy(SCENARIOS / "attention_store_sharegpt.toml", path)
    panel.load(str(path))
    free, gpus = panel.widget_for("hardware.hbm_free_gb"), panel.widget_for("hardware.gpus")
    assert "hbm_free_gb" not in panel.data()["hardware"] and float(free.text()) == pytest.approx(189.6)
    panel.set_value("model.preset", "mistral-7b")  # one A100: 80 − 14.48
    assert float(free.text()) == pytest.approx(65.52) and gpus.value() == 1
    panel.set_value("hardware.gpus", 2)
    assert float(free.text()) == pytest.approx(160 - 14.48)
    assert "hbm_free_gb" not in panel.data()["hardware"] and panel.scenario().hardware.hbm_free_gb == \
        pytest.approx(145.52)


# --- edits -----------------------------------------------------------------------------------

def test_spin_box_edit_emits_the_new_model(rope, qtbot):
    spin = rope.widget_for("cache.slots")
    spin.setFocus()
    spin.selectAll()
    with qtbot.waitSignal(rope.edited, timeout=2000) as sig:
        qtbot.keyClicks(spin, "4")
    model = sig.args[0]
    assert model.cache.slots == 4 and rope.scenario() == model
    assert rope.data()["cache"]["slots"] == 4 and rope.is_dirty()
    assert simulate(model).metrics["speedup"] != 8.0  # the change reaches the simulator
    with qtbot.waitSignal(rope.edited, timeout=2000) as sig:
        spin.stepDown()
    assert sig.args[0].cache.slots == 3


def test_edits_are_debounced(rope, qtbot):
    edited = record(rope.edited)
    for n in (5, 6, 7):
        rope.set_value("cache.slots", n)
    assert edited == []
    qtbot.waitUntil(lambda: len(edited) == 1, timeout=2000)
    with qtbot.assertNotEmitted(rope.edited):
        rope.flush()  # nothing more pending: no second emission after the debounce
    assert len(edited) == 1 and edited[0].cache.slots == 7


def test_invalid_typed_value_is_marked_at_the_field_and_never_emitted(rope, qtbot):
    edited, invalid = record(rope.edited), record(rope.invalid)
    queries = rope.widget_for("sequence.queries")
    queries.setFocus()
    queries.selectAll()
    qtbot.keyClicks(queries, "8, 99")
    message = "sequence.queries[1]: position 99 is outside the sequence 0..15"
    assert invalid[-1] == message
    assert rope.error_text("sequence.queries") == message
    assert rope.scenario() is None and not rope.banner.isVisible()  # said once: at its field
    assert message in queries.toolTip()
    with qtbot.assertNotEmitted(rope.edited):
        rope.flush()  # what the debounce would still emit, now
    assert edited == []  # the valid "8, 9" typed on the way was cancelled, not emitted

    queries.selectAll()
    with qtbot.waitSignal(rope.edited, timeout=2000) as sig:
        qtbot.keyClicks(queries, "8, 13")
    assert list(sig.args[0].sequence.queries) == [8, 13]
    assert invalid[-1] == "" and rope.error_text("sequence.queries") == ""
    assert rope.scenario() is not None and not rope.banner.isVisible()


@pytest.mark.parametrize("field", ["cache.slots", "storage.latency_us"])
def test_a_typed_huge_number_is_kept_and_named_as_typed(rope, qtbot, field):
    """Typed in a real window: 1e30 became 130 slots (Qt refused the 'e'), and in a float field
    9007199254740992, which the message then named."""
    invalid = record(rope.invalid)
    box = rope.widget_for(field)
    box.setFocus()
    box.selectAll()
    qtbot.keyClicks(box, "1e30")
    with qtbot.assertNotEmitted(rope.edited):
        rope.flush()  # what the debounce would still emit, now: nothing
    assert box.number() == 1e30 and rope.scenario() is None
    assert invalid[-1].startswith(f"{field}: ") and invalid[-1].endswith("(got 1e+30)")
    box.selectAll()
    with qtbot.waitSignal(rope.edited, timeout=2000) as sig:
        qtbot.keyClicks(box, "1e1")  # an exponent in an int field too, when the value is whole
    assert box.number() == 10
    assert invalid[-1] == "" and sig.args[0] is not None


def test_out_of_range_value_via_set_value(rope, qtbot):
    invalid = record(rope.invalid)
    rope.set_value("cache.slots", 0)  # must not raise
    assert invalid[-1] == "cache.slots: Input should be greater than or equal to 1 (got 0)"
    assert "greater than or equal to 1" in rope.error_text("cache.slots")
    assert rope.widget_for("cache.slots").number() == 0  # the box shows what is wrong
    assert rope.scenario() is None
    rope.set_value("cache.slots", 8)
    assert invalid[-1] == "" and rope.scenario() == load_scenario(ROPE)
    assert not rope.is_dirty()


def test_unparsable_list_text_is_an_error_at_the_field(rope, qtbot):
    invalid = record(rope.invalid)
    queries = rope.widget_for("sequence.queries")
    queries.selectAll()
    qtbot.keyClicks(queries, "8, x")
    assert invalid[-1] == "sequence.queries: expected integers separated by commas (got 'x')"
    assert "expected integers" in rope.error_text("sequence.queries")
    assert rope.scenario() is None and rope.is_dirty()
    queries.selectAll()
    qtbot.keyClicks(queries, "8, 12")
    assert rope.scenario() == load_scenario(ROPE) and not rope.is_dirty()


def test_error_in_a_section_marks_the_nearest_widget_and_opens_its_group(panel, tmp_path):
    path = tmp_path / "e.toml"
    shutil.copy(SCENARIOS / "engram_qwen3_32b_cxl.toml", path)
    panel.load(str(path))
    group = panel.widget_for("engram")
    group.collapse(animate=False)
    panel.set_value("engram.layers", [2, 15])  # both layer and layers: blamed on `layer`
    assert panel.errors()[0][0] == "engram.layer"
    assert "set exactly one" in panel.error_text("engram.layer")
    assert group.isExpanded()
    panel.set_value("engram.layer", None)  # remove the key
    assert "layer" not in panel.data()["engram"] and list(panel.scenario().engram.layers) == [2, 15]
    assert panel.widget_for("engram.layer").text() == ""


def test_table_cells_rows_and_errors(rope, qtbot):
    table = rope.widget_for("reads")
    table.item(1, 1).setText("6, 99")
    assert rope.errors()[0] == ("reads[1].positions[1]", "position 99 is outside the sequence 0..15")
    assert "reads[1].positions[1]" in rope.error_text("reads")
    assert table.item(1, 1).background().color().name() == "#fdecea"
    table.item(1, 1).setText("6, 9")
    assert list(rope.scenario().reads[1].positions) == [6, 9]
    assert table.item(1, 1).background().style() == Qt.BrushStyle.NoBrush

    field = rope._fields[("reads",)]
    table.selectRow(0)
    qtbot.mouseClick(field.add_button, Qt.MouseButton.LeftButton)
    assert table.rowCount() == 3 and [r["t_us"] for r in rope.data()["reads"]] == [26, 26, 27]
    table.item(1, 0).setText("abc")
    assert rope.errors() == [("reads[1].t_us", "expected a number (got 'abc')")] and rope.scenario() is None
    table.item(1, 0).setText("26.5")
    assert rope.scenario().reads[1].t_us == 26.5
    table.clearSelection()
    qtbot.mouseClick(field.remove_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(field.remove_button, Qt.MouseButton.LeftButton)
    assert len(rope.data()["reads"]) == 1 and rope.scenario() is not None


def test_ladder_rungs_and_embedded_base_scenario(panel, tmp_path, qtbot):
    path = tmp_path / "ladder.toml"
    shutil.copy(SCENARIOS / "ladder_simulated.toml", path)
    panel.load(str(path))
    rungs = panel.widget_for("rungs")
    assert isinstance(rungs, QTableWidget) and rungs.rowCount() == 5
    assert rungs.item(4, 2).text() == "cache.slots=32; prefetch.window=12"
    panel.set_value("rungs[1].hbm_hit_pct", 150)
    assert panel.errors()[0] == ("rungs[1].hbm_hit_pct", "Input should be less than or equal to 100 (got 150)")
    assert rungs.item(1, 1).text() == "150"
    panel.set_value("rungs.1.hbm_hit_pct", 81)  # --set style path
    rungs.item(2, 2).setText("cache.slotz=3")
    assert panel.errors()[0][0] == "rungs[2].overrides[0]"
    rungs.item(2, 2).setText("prefetch.window=3")
    assert panel.scenario() is not None

    slots = panel.widget_for("base.cache.slots")  # the inline rope_window base gets its own form
    assert isinstance(slots, QAbstractSpinBox) and slots.text() == "8 slots"
    with qtbot.waitSignal(panel.edited, timeout=2000) as sig:
        slots.setValue(4)
    assert sig.args[0].rung_scenarios()[0].cache.slots == 4
    panel.set_value("base.sequence.queries[3]", 99)
    assert panel.errors()[0] == ("base.sequence.queries[3]", "position 99 is outside the sequence 0..63")
    assert "position 99" in panel.error_text("base.sequence.queries")


# --- dirty, reset, save ------------------------------------------------------------------------

def test_dirty_flag_transitions(rope):
    dirty = record(rope.dirty_changed)
    rope.set_value("cache.slots", 4)
    rope.set_value("prefetch.window", 2)
    assert dirty == [True] and rope.is_dirty()
    rope.set_value("cache.slots", 8)
    rope.set_value("prefetch.window", 3)  # back to the file's values
    assert dirty == [True, False] and not rope.is_dirty()
    rope.set_value("cache.slots", 4)
    rope.save()
    assert dirty == [True, False, True, False] and not rope.is_dirty()


def test_reset_to_file_discards_edits(rope, qtbot):
    rope.set_value("cache.slots", 4)
    rope.set_value("sequence.queries", [8, 99])
    assert rope.is_dirty() and rope.scenario() is None
    invalid = record(rope.invalid)
    with qtbot.waitSignal(rope.edited, timeout=2000) as sig:
        rope.reset_to_file()
    assert sig.args[0] == load_scenario(ROPE) and rope.scenario() == load_scenario(ROPE)
    assert rope.data() == tomllib.loads(ROPE.read_text(encoding="utf-8"))
    assert not rope.is_dirty() and rope.errors() == [] and invalid == [""]
    assert rope.widget_for("cache.slots").text() == "8 slots"
    assert rope.widget_for("sequence.queries").text() == "8, 12"


def comments(text: str) -> list[str]:
    return [line[line.index("#"):] for line in text.splitlines() if "#" in line]


def test_save_round_trips_keeping_comments_and_layout(rope, qtbot):
    path = rope.path()
    before = open(path, encoding="utf-8").read()
    spin = rope.widget_for("cache.slots")
    spin.selectAll()
    qtbot.keyClicks(spin, "4")
    rope.set_value("storage.latency_us", 30.5)
    rope.save()
    after = open(path, encoding="utf-8").read()
    assert comments(after) == comments(before)
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert changed == [
        ("slots = 8                    # the walkthrough: a GPU cache of 8 KV slots",
         "slots = 4                    # the walkthrough: a GPU cache of 8 KV slots"),
        ("latency_us = 25              # the walkthrough: tier-3 flash round trip of 25 µs",
         "latency_us = 30.5            # the walkthrough: tier-3 flash round trip of 25 µs"),
    ]
    assert load_scenario(path) == rope.scenario() and not rope.is_dirty()
    other = ParameterPanel()
    qtbot.addWidget(other)
    other.load(path)
    assert other.scenario() == rope.scenario()


def test_save_adds_rows_and_absent_fields_and_save_as(panel, tmp_path, qtbot):
    path = tmp_path / "ladder.toml"
    shutil.copy(SCENARIOS / "ladder_seed.toml", path)
    before = path.read_text(encoding="utf-8")
    panel.load(str(path))
    field = panel._fields[("rungs",)]
    qtbot.waitUntil(lambda: field.add_button.height() > 5)  # laid out: a click lands, as a user's would
    qtbot.mouseClick(field.add_button, Qt.MouseButton.LeftButton)
    panel.set_value("rungs[5].label", "a sixth rung")
    panel.set_value("warmup_queries", 2)
    out = tmp_path / "sub" / "copy.toml"
    out.parent.mkdir()
    panel.save(str(out))
    assert panel.path() == str(out) and not panel.is_dirty()
    assert path.read_text(encoding="utf-8") == before  # Save As leaves the original alone
    text = out.read_text(encoding="utf-8")
    assert comments(text) == comments(before)
    saved = load_scenario(out)
    assert saved == panel.scenario() and saved.rungs[5].label == "a sixth rung" and saved.warmup_queries == 2


def test_failing_save_leaves_the_original_untouched(rope, monkeypatch, tmp_path):
    path = rope.path()
    before = open(path, "rb").read()
    rope.set_value("cache.slots", 4)

    def boom(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(kvviz.io.os, "replace", boom)
    with pytest.raises(ScenarioError, match="disk full"):
        rope.save()
    assert open(path, "rb").read() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rope.toml"]  # no temp file left behind
    assert rope.is_dirty()
    monkeypatch.undo()

    rope.set_value("cache.slots", 0)  # invalid edits are not saved
    with pytest.raises(ScenarioError) as e:
        rope.save()
    assert e.value.field == "cache.slots" and open(path, "rb").read() == before


def test_bad_file_raises_and_keeps_the_panel(rope, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "rope_window"\n[cache]\nslots = 0\n', encoding="utf-8")
    good = rope.path()
    with pytest.raises(ScenarioError) as e:
        rope.load(str(bad))
    assert e.value.field == "cache.slots"
    assert rope.path() == good and rope.scenario() is not None
    broken = tmp_path / "broken.toml"
    broken.write_text("kind = \n", encoding="utf-8")
    with pytest.raises(ScenarioError, match="malformed TOML"):
        rope.load(str(broken))
    invalid = record(rope.invalid)
    rope.load(str(bad), strict=False)  # shown, so it can be fixed in the panel
    assert rope.scenario() is None and invalid == ["cache.slots: Input should be greater than or equal to 1 (got 0)"]
    rope.set_value("cache.slots", 2)
    rope.save()
    assert load_scenario(bad).cache.slots == 2


# --- layout -------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_fits_a_380px_dock_without_clipping(panel, path, qtbot):
    panel.load(str(path))
    qtbot.waitUntil(lambda: panel._scroll.widget().isVisible())
    scroll = panel._scroll
    assert not scroll.horizontalScrollBar().isVisible()
    content = scroll.widget()
    for label in content.findChildren(QLabel):
        if label.isVisible() and label.text() and not label.wordWrap():
            assert label.width() >= label.sizeHint().width(), label.text()
    for dotted in panel.field_paths():
        w = panel.widget_for(dotted)
        if w.isVisible():
            x = w.mapTo(content, w.rect().topLeft()).x()
            assert x >= 0 and x + w.width() <= scroll.viewport().width(), dotted


# --- a new mechanism needs no app changes ----------------------------------------------------------

class _Part(Section):
    size: int = param(3, ge=1, le=9, unit="parts", description="How many")


class _Knobs(Section):
    rate: float = param(0.5, gt=0, lt=1, unit="share", description="A share")
    mode: Literal["a", "b", "c"] = param("b", description="Pick one")
    on: bool = param(True, description="Switch")
    points: list[float] = param([1.5, 2.0], unit="µs", description="Times")
    tags: list[str] = param([], description="Labels")
    limit: int | None = param(None, ge=0, description="Optional cap")
    inner: _Part = _Part()


class _Toy(ScenarioBase):
    kind: Literal["toy"]
    knobs: _Knobs = _Knobs()
    parts: list[_Part] = param([], description="Parts")


def test_a_new_mechanism_gets_a_form_without_app_changes(panel, tmp_path, monkeypatch):
    kinds = dict(mechanisms())
    kinds["toy"] = Mechanism("toy", _Toy, lambda sc: None, lambda sc: None)
    monkeypatch.setattr(kvviz.loading, "mechanisms", lambda: kinds)
    monkeypatch.setattr(params.panel, "mechanisms", lambda: kinds)
    monkeypatch.setattr(params.field_tree, "mechanisms", lambda: kinds)
    path = tmp_path / "toy.toml"
    path.write_text('kind = "toy"\n\n[knobs]\nrate = 0.25  # a comment\n\n[[parts]]\nsize = 2\n', encoding="utf-8")
    panel.load(str(path))
    w = panel.widget_for
    assert w("knobs.rate").text() == "0.25 share" and isinstance(w("knobs.mode"), QComboBox)
    assert w("knobs.mode").currentText() == "b" and w("knobs.on").isChecked()
    assert w("knobs.points").text() == "1.5, 2" and w("knobs.tags").text() == ""
    assert w("knobs.limit").text() == "" and w("knobs.inner.size").text() == "3 parts"
    assert isinstance(w("parts"), QTableWidget) and w("parts").item(0, 0).text() == "2"
    w("knobs.mode").setCurrentIndex(2)
    w("knobs.on").setChecked(False)
    w("knobs.tags").setText("")
    panel.set_value("knobs.tags", ["x", "y z"])
    assert w("knobs.tags").text() == "x; y z"
    panel.set_value("knobs.rate", 1.0)
    assert panel.errors() == [("knobs.rate", "Input should be less than 1 (got 1.0)")]
    panel.set_value("knobs.rate", 0.75)
    sc = panel.scenario()
    assert (sc.knobs.mode, sc.knobs.on, sc.knobs.rate, list(sc.knobs.tags)) == ("c", False, 0.75, ["x", "y z"])
    panel.save()
    text = path.read_text(encoding="utf-8")
    assert "rate = 0.75  # a comment" in text and tomllib.loads(text) == panel.data()


def test_paths_parse_like_error_messages_and_set():
    assert params.parse_path("sequence.queries[1]") == ("sequence", "queries", 1)
    assert params.parse_path("rungs.2.label") == ("rungs", 2, "label")
    assert path_str(("reads", 0, "positions", 1)) == "reads[0].positions[1]"
    assert re.fullmatch(r"\d+(\.\d+)?", params.fmt_number(0.72)) and params.fmt_number(56.25) == "56.25"
    assert params.fmt_number(3600.0) == "3600" and params.fmt_number(1e-7) == "1e-07"


def test_a_narrowed_panel_squashes_no_field(rope, qtbot):
    """In a real window, narrowing the dock wrapped 'eviction' under its label, and its group kept
    the unwrapped height: the spin boxes above were squashed to half height, text clipped."""
    for width in (230, 380, 230):
        rope.resize(width, 900)
        qtbot.wait(50)
        for dotted in rope.field_paths():
            w = rope.widget_for(dotted)
            if w.isVisible() and not isinstance(w, (QLabel, QTableWidget)):  # a table's height is its rows'
                assert w.height() >= w.minimumSizeHint().height(), (width, dotted, w.height())


def test_save_as_elsewhere_keeps_relative_files_pointing_at_the_same_file(panel, tmp_path):
    """Save As to /tmp kept `trace_file = "../resources/traces/…"`, which names nothing from there:
    the copy could never run (seen in a real window)."""
    panel.load(str(SCENARIOS / "attention_store_mooncake.toml"))
    written = panel.value("workload.trace_file")
    assert not Path(written).is_absolute()
    out = tmp_path / "elsewhere" / "x.toml"
    out.parent.mkdir()  # a save dialog names a folder that exists (a missing one is refused)
    panel.save(str(out))
    moved = load_scenario(out).workload.trace_file
    assert Path(moved).resolve() == (SCENARIOS / written).resolve() and Path(moved).is_file()
    assert panel.widget_for("workload.trace_file").text() == panel.value("workload.trace_file") != written
    assert panel.scenario() is not None and not panel.is_dirty()
    assert "trace_file" in out.read_text() and "# " in out.read_text()  # the file's comments stay


@pytest.mark.parametrize("target", ["read-only file", "fifo", "the trace"])
def test_a_failed_save_as_leaves_the_panel_and_the_next_save_as_they_were(panel, tmp_path, target):
    """A failed Save As kept the trace path rebased for the folder it never reached: no unsaved
    marker, and the next Save wrote `trace_file = "../proj/…"`, which named nothing."""
    import os
    proj = tmp_path / "proj"
    proj.mkdir()
    trace = proj / "t.jsonl"
    shutil.copy(SCENARIOS.parent / "resources" / "traces" / "mooncake_synthetic_trace.jsonl", trace)
    scen = proj / "s.toml"
    text = (SCENARIOS / "attention_store_mooncake.toml").read_text()
    scen.write_text(re.sub(r'trace_file = "[^"]*"', 'trace_file = "t.jsonl"', text))
    panel.load(str(scen))
    other = tmp_path / "other"
    other.mkdir()
    out = {"read-only file": other / "x.toml", "fifo": other / "x.toml", "the trace": trace}[target]
    if target == "read-only file":
        out.write_text("mine\n")
        out.chmod(0o444)
    elif target == "fifo":
        os.mkfifo(out)
    before = {p: p.read_bytes() for p in (scen, trace)}
    with pytest.raises(ScenarioError):
        panel.save(str(out))
    assert panel.path() == str(scen) and panel.value("workload.trace_file") == "t.jsonl"
    assert panel.widget_for("workload.trace_file").text() == "t.jsonl" and not panel.is_dirty()
    assert {p: p.read_bytes() for p in (scen, trace)} == before
    if target == "read-only file":
        assert out.read_text() == "mine\n"
    panel.save()  # the next Save writes what the file had
    assert tomllib.loads(scen.read_text())["workload"]["trace_file"] == "t.jsonl"


def test_fields_another_field_overrides_are_greyed_saying_why(panel, qtbot):
    """A trace-driven scenario showed the generator's 9000 conversations as if in effect."""
    panel.load(str(SCENARIOS / "attention_store_mooncake.toml"))
    conv = panel.widget_for("workload.conversations")
    assert not conv.isEnabled() and conv.toolTip().startswith("not used: workload.trace_file")
    assert panel.widget_for("workload.arrival_rate_per_s").isEnabled()  # the trace's turns still arrive at it
    panel.set_value("workload.trace_file", "")
    assert conv.isEnabled() and not conv.toolTip().startswith("not used")
    panel.load(str(SCENARIOS / "engram_qwen3_32b_cxl.toml"))
    step = panel.widget_for("model.step_time_us")
    assert step.isEnabled()
    panel.set_value("model.layer_times_us", [1.0] * panel.value("model.layers"))
    assert not step.isEnabled() and "layer_times_us" in step.toolTip()


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda p: p.stem)
def test_every_bundled_form_fits_the_docks_first_width(qtbot, path):
    # A long field name or choice widened the whole form past the dock: every value was cut
    # at the right, behind a horizontal scroll bar (AttentionStore, after its economics fields).
    from app.shell.window import PARAMS_DOCK_WIDTH
    panel = ParameterPanel()
    qtbot.addWidget(panel)
    panel.load(path, strict=False)
    panel.resize(PARAMS_DOCK_WIDTH, 800)
    panel.show()
    qtbot.waitExposed(panel)
    content = panel._scroll.widget()
    assert content.minimumSizeHint().width() <= panel._scroll.viewport().width()


def test_prefix_cache_greys_what_its_untimed_replay_and_no_prefetch_do_not_read(panel):
    """prefix_cache_mooncake (untimed) offered serving.gpus, mfu… and links.rule as if they
    mattered, and turning store.prefetch off left its look-ahead and tier looking in effect."""
    panel.load(str(SCENARIOS / "prefix_cache_mooncake.toml"))
    for path in ("serving.gpus", "serving.mfu", "serving.max_batch", "links.rule", "store.prefetch_lookahead"):
        w = panel.widget_for(path)
        assert not w.isEnabled() and w.toolTip().startswith("not used: "), path
    assert "serving.timing = true" in panel.widget_for("serving.gpus").toolTip()
    assert panel.widget_for("serving.timing").isEnabled() and panel.widget_for("store.prefetch").isEnabled()
    panel.load(str(SCENARIOS / "prefix_cache_tiers.toml"))  # timed, prefetch on: all in effect
    for path in ("serving.gpus", "links.rule", "store.prefetch_lookahead", "store.prefetch_tier"):
        assert panel.widget_for(path).isEnabled(), path
    panel.set_value("store.prefetch", False)
    tier = panel.widget_for("store.prefetch_tier")
    assert not tier.isEnabled() and tier.toolTip().startswith("not used: store.prefetch is off")
    assert panel.widget_for("links.rule").isEnabled()  # demand loads still share the links
