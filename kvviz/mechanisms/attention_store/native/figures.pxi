# workload_figures.py's _distinct_between over C arrays: the same offline Fenwick tree over each
# conversation's last position, answering the pairs in order of their right end. It is the
# workload part's main cost (a Python loop over every turn), and that part is needed before a
# run can be drawn at all.

def distinct_between(long long[::1] conv, long long[::1] left, long long[::1] right):
    """For each pair i, the number of distinct values of conv strictly between positions
    left[i] and right[i] (conv holds small non-negative ids)."""
    cdef Py_ssize_t n = conv.shape[0], m = left.shape[0], i, k, q, pos
    out = np.zeros(m, dtype=np.int64)
    if m == 0:
        return out
    cdef long long[::1] res = out
    cdef long long[::1] order = np.argsort(right, kind="stable").astype(np.int64)
    tree_a = np.zeros(n + 1, dtype=np.int64)
    cdef long long[::1] tree = tree_a
    last_a = np.full(int(np.max(conv)) + 1 if n else 1, -1, dtype=np.int64)
    cdef long long[::1] last = last_a
    cdef long long c
    q = 0
    for pos in range(n):
        while q < m and right[order[q]] == pos:
            k = order[q]
            res[k] = _fw_prefix(tree, pos) - _fw_prefix(tree, left[k] + 1)
            q += 1
        c = conv[pos]
        if last[c] >= 0:
            _fw_add(tree, last[c], -1, n)
        last[c] = pos
        _fw_add(tree, pos, 1, n)
    return out


cdef inline void _fw_add(long long[::1] tree, Py_ssize_t i, long long v, Py_ssize_t n):
    i += 1
    while i <= n:
        tree[i] += v
        i += i & -i


cdef inline long long _fw_prefix(long long[::1] tree, Py_ssize_t i):
    """The sum over positions < i."""
    cdef long long s = 0
    while i > 0:
        s += tree[i]
        i -= i & -i
    return s
