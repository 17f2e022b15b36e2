"""Issue 30, item 3: a compiled engine may include the serving core's shared pieces
(kvviz/serving/native/*.pxi: AttentionStore's _engine.pyx includes its roofline); the loaders'
source hash follows the include, so an edit there makes the including build stale too."""
from pathlib import Path

from kvviz.mechanisms.attention_store import native as as_native
from kvviz.serving.native import sources


def test_an_edit_to_a_shared_include_changes_the_including_folders_hash(tmp_path):
    shared = tmp_path / "kv" / "serving" / "native"
    mine = tmp_path / "kv" / "mechanisms" / "m" / "native"
    shared.mkdir(parents=True)
    mine.mkdir(parents=True)
    (shared / "part.pxi").write_text("cdef int x = 1\n")
    (mine / "_e.pyx").write_text('include "../../../serving/native/part.pxi"\n')
    before = sources.source_hash(mine)
    assert [n for n, _ in sources.included_elsewhere(mine)] == ["../../../serving/native/part.pxi"]
    (shared / "part.pxi").write_text("cdef int x = 2\n")
    assert sources.source_hash(mine) != before


def test_attention_stores_engine_includes_the_serving_loop_roofline_and_policies():
    names = [n for n, _ in sources.included_elsewhere(as_native.HERE)]
    assert names == ["../../../serving/native/event_loop.pxi", "../../../serving/native/policies.pxi",
                     "../../../serving/native/roofline.pxi"]


def test_the_compiled_lru_fifo_and_belady_are_written_once():
    """One compiled twin of each (policies.pxi), included by both engines that evict; no other
    compiled source keeps a linked list or a heap of its own."""
    native = Path(sources.__file__).parent
    assert 'include "policies.pxi"' in (native / "_block_cache.pyx").read_text()
    kvviz = native.parents[1]
    for p in kvviz.rglob("*.p[xy][xdi]"):
        if p.name == "policies.pxi":
            continue
        text = p.read_text()
        for own in ("cdef struct Entry", "cdef struct Heap", "cdef struct Node", "_hpush", "first_free", "cdef class StHeap"):
            assert own not in text, f"{p}: {own}"
