"""The trace formats kvviz ships, registered (kvviz.requests.formats). Their readers live in
their own modules, imported when a trace is read; `--format auto` tells these apart by content
(reader.detect_format, prompts.read), so none has `claims` but RAGPulse, which `kvviz replay
--prefix` recognises by its first record and the object replay reads only when named."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import ScenarioError
from .base import ReadOptions, TraceFormat, register

if TYPE_CHECKING:
    from ..objects import Requests
    from ..prompts import PromptRequests


def _csv(path: Path, options: ReadOptions) -> Requests:
    from ..csv_format import read_csv
    return read_csv(path, layout=options.layout)


def _txt(path: Path, options: ReadOptions) -> Requests:
    from ..text_ids import read_txt
    return read_txt(path)


def _oracle_general(path: Path, options: ReadOptions) -> Requests:
    from ..oracle_general import read_oracle_general
    return read_oracle_general(path)


def prompts_by_content(src: Path, expect: str | None = None) -> PromptRequests:
    """A Mooncake, Qwen/Bailian or plain trace's prompts (zstd-compressed or not), `expect` the
    format it must be (None: any of the three)."""
    from .. import prompts
    from ..zstd import open_decompressed
    with open_decompressed(src) as plain:
        try:
            reqs = prompts.read(plain)
        except ScenarioError as e:
            if plain != src and e.file == str(plain):
                e.file = f"{src} (decompressed)"
            raise
    if reqs is None or (expect is not None and reqs.format != expect):
        what = "a Mooncake, Qwen/Bailian or plain request trace" if expect is None else f"a {expect} request trace"
        raise ScenarioError(f"not {what} with hash_ids: --prefix needs the prompts' block hashes", str(src),
                            "line 1")
    return reqs


def _prompt_format(name: str) -> TraceFormat:
    """Mooncake, Qwen/Bailian or plain: as objects, each block of a prompt one object (blocks.py)."""
    def objects(path: Path, options: ReadOptions) -> Requests:
        from ..blocks import read_blocks
        return read_blocks(path, options.kv_bytes_per_token, name)

    def prompts(path: Path) -> PromptRequests:
        return prompts_by_content(path, name)
    return TraceFormat(name, objects=objects, prompts=prompts)


def _ragpulse_objects(path: Path, options: ReadOptions) -> Requests:
    from ..ragpulse import as_objects
    return as_objects(path, options.kv_bytes_per_token)


def _ragpulse_prompts(path: Path) -> PromptRequests:
    from ..ragpulse import read
    return read(path)  # one block per chunk, by its prefix (kvviz.requests.ragpulse)


def _is_ragpulse(path: Path) -> bool:
    from ..jsonl import first_record, looks_like_ragpulse  # no numpy: the lean LRU path asks this
    return looks_like_ragpulse(first_record(path))


register(TraceFormat("csv", objects=_csv))
register(TraceFormat("txt", objects=_txt))
register(TraceFormat("oracleGeneral", objects=_oracle_general))
for _name in ("mooncake", "qwen", "plain"):
    register(_prompt_format(_name))
# its chunk lengths live in side files beside it: the object replay reads it only when named
register(TraceFormat("ragpulse", objects=_ragpulse_objects, prompts=_ragpulse_prompts, claims=_is_ragpulse,
                     claimed_in=frozenset(("prefix",))))
