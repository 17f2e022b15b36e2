"""Bytes that tell what a file is, apart from the readers (numpy all) so the size guard's
count of a trace (kvviz.requests.extent) runs without them."""

BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark (spreadsheets and Windows editors write one)
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
