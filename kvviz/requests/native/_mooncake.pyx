# cython: boundscheck=False, wraparound=False, language_level=3
"""A scanner for Mooncake JSONL traces in the shape their writers give them: one object per line
with exactly the keys timestamp, input_length, output_length and hash_ids (any order, each once),
integers only. It writes the numbers straight into int64 arrays (array.array('q'), so neither
it nor the lean `kvviz replay --prefix` imports numpy), with no Python object per number; and,
asked to, it checks what the grammar cannot: the ids against input_length (given block_tokens:
ceil(input_length / block_tokens) ± 1, as mooncake_record) and the time order (in_order: no
timestamp below the record's before). Anything outside all that and the file goes to the next
reader (see kvviz/requests/fast_jsonl.py), whose refusals name the line.

The grammar accepted, per line (bytes between newlines; ws = space or tab):
  blank:  ws* ("\r")?
  record: ws* "{" ws* member (ws* "," ws* member)* ws* "}" ws* ("\r")?
  member: "\"" key "\"" ws* ":" ws* value, key one of the four, each exactly once
  timestamp, input_length, output_length: digits, no leading zero, no fraction or exponent,
          timestamp at most MAX_TIMESTAMP, the lengths at most MAX_LENGTH
  hash_ids: "[" ws* (id (ws* "," ws* id)*)? ws* "]", id: "-"? digits (no leading zero), at most
          18 digits (so within int64)
Everything it accepts is valid JSON that the json module reads to the same values, and that
passes mooncake_record's type and range checks; a carriage return only right before a newline,
so the lines are the ones str.splitlines gives. Returns None at the first byte outside it, or
at the first record out of time order or whose ids contradict its input_length.
"""
from cpython.array cimport array, clone, resize
from libc.string cimport memchr, memcmp

DEF MAX_TIMESTAMP = 4_000_000_000_000   # ms; the simulator's range is 2**62 ns = 4.6e12 ms
DEF MAX_LENGTH = 4_294_967_296          # kvviz.limits.MAX_TOKENS, 2**32
DEF MAX_ID_DIGITS = 18

cdef extern from *:
    """
    #ifndef KVVIZ_SOURCE_HASH
    #define KVVIZ_SOURCE_HASH ""
    #endif
    """
    const char *KVVIZ_SOURCE_HASH

SOURCE_HASH = KVVIZ_SOURCE_HASH.decode()

cdef inline bint _ws(unsigned char c) noexcept nogil:
    return c == 32 or c == 9


cdef inline Py_ssize_t _skip(const unsigned char *d, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    while i < end and _ws(d[i]):
        i += 1
    return i


cdef inline Py_ssize_t _number(const unsigned char *d, Py_ssize_t i, Py_ssize_t end, int max_digits,
                               bint signed, long long *out) noexcept nogil:
    """An integer literal at i: its end, or -1 (not one, a leading zero, a fraction or exponent,
    more than max_digits digits)."""
    cdef bint neg = False
    cdef unsigned long long v = 0  # unsigned: a run past max_digits may wrap it (it is refused then)
    cdef unsigned char c
    cdef Py_ssize_t start
    if signed and i < end and d[i] == 45:  # '-'
        neg = True
        i += 1
    start = i
    while i < end:  # the length checked once after the digits, not per digit (ids are most of a trace)
        c = d[i] - 48  # wraps below '0'
        if c > 9:
            break
        v = v * 10 + c
        i += 1
    if i == start or i - start > max_digits or (d[start] == 48 and i - start > 1):
        return -1
    if i < end and (d[i] == 46 or d[i] == 101 or d[i] == 69):  # '.', 'e', 'E': a float
        return -1
    out[0] = -<long long> v if neg else <long long> v
    return i


cdef inline int _key(const unsigned char *d, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    """Which key the bytes d[i:j] are: 0 timestamp, 1 input_length, 2 output_length, 3 hash_ids, -1 none."""
    cdef Py_ssize_t m = j - i
    cdef const unsigned char *p = d + i
    if m == 9 and memcmp(p, b"timestamp", 9) == 0:
        return 0
    if m == 12 and memcmp(p, b"input_length", 12) == 0:
        return 1
    if m == 13 and memcmp(p, b"output_length", 13) == 0:
        return 2
    if m == 8 and memcmp(p, b"hash_ids", 8) == 0:
        return 3
    return -1


cdef array _int64s(Py_ssize_t n):
    return clone(array("q"), n, False)


def scan(const unsigned char[:] data, Py_ssize_t max_records, Py_ssize_t max_ids, long long block_tokens=0,
         bint in_order=False):
    """(lines, timestamps, input_length, output_length, ids per record, ids) as array('q')s, or
    None. `max_records` and `max_ids`: room to start with (the arrays grow as needed);
    `block_tokens` > 0: each record's ids must number ceil(input_length / block_tokens) ± 1 (0:
    not checked); `in_order`: timestamps must never decrease."""
    cdef Py_ssize_t n = data.shape[0], i = 0, end, j, r = 0, k = 0, line = 0, first
    cdef Py_ssize_t room_r = max(max_records, 16), room_i = max(max_ids, 16)
    cdef const unsigned char *d = &data[0] if n else NULL
    cdef const unsigned char *nl
    cdef long long v, want
    cdef int key, seen
    # raw pointers, not memoryviews (an array with a buffer exported cannot be resized), taken
    # again after every growth
    cdef array lines_a = _int64s(room_r), counts_a = _int64s(room_r), ids_a = _int64s(room_i)
    cdef array times_a = _int64s(room_r), in_a = _int64s(room_r), out_a = _int64s(room_r)
    cdef long long *lines = lines_a.data.as_longlongs
    cdef long long *counts = counts_a.data.as_longlongs
    cdef long long *ids = ids_a.data.as_longlongs
    cdef long long *fields[3]
    fields[0], fields[1], fields[2] = times_a.data.as_longlongs, in_a.data.as_longlongs, out_a.data.as_longlongs
    while i < n:
        line += 1
        nl = <const unsigned char *> memchr(d + i, 10, n - i)
        end = nl - d if nl != NULL else n
        if end > i and d[end - 1] == 13:  # "\r\n": the carriage return ends the line too
            end -= 1
        i = _skip(d, i, end)
        if i == end:                      # a blank line
            i = end + 1 if end < n and d[end] == 10 else end + 2
            continue
        if d[i] != 123:                   # '{'
            return None
        if r >= room_r:
            room_r += room_r // 2
            for a in (lines_a, counts_a, times_a, in_a, out_a):
                resize(a, room_r)
            lines, counts = lines_a.data.as_longlongs, counts_a.data.as_longlongs
            fields[0], fields[1], fields[2] = times_a.data.as_longlongs, in_a.data.as_longlongs, out_a.data.as_longlongs
        seen = 0
        i = _skip(d, i + 1, end)
        while True:
            if i >= end or d[i] != 34:    # '"'
                return None
            j = i + 1
            while j < end and d[j] != 34 and d[j] != 92:  # to the closing quote; a backslash: out
                j += 1
            if j >= end or d[j] != 34:
                return None
            key = _key(d, i + 1, j)
            if key < 0 or seen & (1 << key):
                return None
            seen |= 1 << key
            i = _skip(d, j + 1, end)
            if i >= end or d[i] != 58:    # ':'
                return None
            i = _skip(d, i + 1, end)
            if key < 3:
                i = _number(d, i, end, 13 if key == 0 else 10, False, &v)
                if i < 0 or v > (MAX_TIMESTAMP if key == 0 else MAX_LENGTH):
                    return None
                fields[key][r] = v
            else:
                if i >= end or d[i] != 91:  # '['
                    return None
                first = k
                i = _skip(d, i + 1, end)
                if i < end and d[i] != 93:  # not empty
                    while True:
                        if k >= room_i:
                            room_i += room_i // 2
                            resize(ids_a, room_i)
                            ids = ids_a.data.as_longlongs
                        i = _number(d, i, end, MAX_ID_DIGITS, True, &v)
                        if i < 0:
                            return None
                        ids[k] = v
                        k += 1
                        i = _skip(d, i, end)
                        if i < end and d[i] == 44:  # ','
                            i = _skip(d, i + 1, end)
                            continue
                        break
                if i >= end or d[i] != 93:  # ']'
                    return None
                counts[r] = k - first
                i += 1
            i = _skip(d, i, end)
            if i < end and d[i] == 44:
                i = _skip(d, i + 1, end)
                continue
            if i < end and d[i] == 125:   # '}'
                break
            return None
        if seen != 15 or _skip(d, i + 1, end) != end:
            return None
        if in_order and r and fields[0][r] < fields[0][r - 1]:  # back in time: the strict reader names the line
            return None
        if block_tokens > 0:
            want = (fields[1][r] + block_tokens - 1) // block_tokens
            if counts[r] < want - 1 or counts[r] > want + 1:
                return None
        lines[r] = line
        r += 1
        i = end + 1 if end < n and d[end] == 10 else end + 2
    for a in (lines_a, times_a, in_a, out_a, counts_a):
        resize(a, r)
    resize(ids_a, k)
    return lines_a, times_a, in_a, out_a, counts_a, ids_a
