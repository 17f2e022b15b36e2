"""libCacheSim's oracleGeneral binary traces: 24-byte records (uint32 time, uint64 id, uint32
size, int64 index of the object's next request). The last field is recomputed by whoever
needs it, not trusted."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ScenarioError
from .common import first_request_ids
from .objects import Requests

ORACLE_RECORD = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
# A next-request index is -1 (none) or a request's number: far below 2**48, where eight bytes of
# text read as an int64 are above 2**53 (ours: a NUL in a CSV or JSONL is no binary trace)
MAX_NEXT = 2 ** 48


def fits_oracle_general(head: bytes, size: int) -> bool:
    """Whether a file of `size` bytes starting with `head` has oracleGeneral's shape: whole
    24-byte records whose next-request fields are -1 or an index, in every record of the head."""
    n = min(len(head), size) // ORACLE_RECORD.itemsize
    if not size or size % ORACLE_RECORD.itemsize or not n:
        return False
    nxt = np.frombuffer(head, dtype=ORACLE_RECORD, count=min(n, 170))["next"]
    return bool(np.all((nxt >= -1) & (nxt < MAX_NEXT)))


def read_oracle_general(path: str | Path) -> Requests:
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ScenarioError(f"cannot read the trace: {e.strerror or e}", str(path)) from None
    rec_size = ORACLE_RECORD.itemsize
    if size == 0 or size % rec_size:
        raise ScenarioError(f"an oracleGeneral trace is whole {rec_size}-byte records; this file has {size:,} bytes "
                            f"({size // rec_size:,} records and {size % rec_size} bytes over)", str(path))
    rec = np.fromfile(path, dtype=ORACLE_RECORD)
    ids = first_request_ids(rec["id"])
    times = rec["time"].astype(np.float64)
    back = np.flatnonzero(np.diff(times) < 0)
    if len(back):
        i = int(back[0]) + 1
        raise ScenarioError(f"time goes backwards ({int(times[i])} after {int(times[i - 1])}) in record {i + 1} "
                            f"(byte {i * rec_size:,})", str(path))
    return Requests(ids.astype(np.int64), rec["size"].astype(np.int64), times, str(path))
