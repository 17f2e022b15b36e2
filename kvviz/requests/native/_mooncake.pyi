# The compiled Mooncake scanner's interface (_mooncake.pyx), for the type checker.
from array import array

from typing_extensions import Buffer

SOURCE_HASH: str

def scan(data: Buffer, max_records: int, max_ids: int, block_tokens: int = 0, in_order: bool = False
         ) -> tuple[array[int], array[int], array[int], array[int], array[int], array[int]] | None:
    """(lines, timestamps, input_length, output_length, ids per record, ids), or None."""
