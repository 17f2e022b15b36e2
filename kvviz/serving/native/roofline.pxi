# The serving core's compiled roofline (kvviz/serving/roofline.py's Roofline, included by every compiled
# engine that prices iterations: AttentionStore's _engine.pyx; a loader's source hash follows the
# include, kvviz/serving/native/sources.py). roofline.py's Roofline for the engine's own use: the same float operations in the same order, on C
# doubles and int64 (the Python one stays: Prepared calls it on numpy arrays). Built from a
# Python Roofline's fields (`Roofline.of`). FMA contraction is off (_engine.pyx's compile flag),
# so `a * b + c` rounds twice, as Python rounds it.

from libc.math cimport ceil, sqrt, INFINITY


cdef class Roofline:
    cdef readonly double prefill_ns_per_token, attn_ns_per_pair, weights_ns, kv_ns_per_token

    @staticmethod
    def of(py):
        """The native twin of a gpu.Roofline."""
        cdef Roofline r = Roofline.__new__(Roofline)
        r.prefill_ns_per_token, r.attn_ns_per_pair = py.prefill_ns_per_token, py.attn_ns_per_pair
        r.weights_ns, r.kv_ns_per_token = py.weights_ns, py.kv_ns_per_token
        return r

    cpdef double prefill_ns_i(self, long long tokens, long long history):
        # Python: tokens * p + a * (tokens * history + tokens * (tokens + 1) / 2), the int
        # products exact, the int / int division correctly rounded (as a double division of
        # doubles that hold them exactly)
        return <double> tokens * self.prefill_ns_per_token + self.attn_ns_per_pair * (
            <double> (tokens * history) + <double> (tokens * (tokens + 1)) / 2.0)

    def prefill_ns(self, tokens, history=0):
        return self.prefill_ns_i(tokens, history)

    cpdef double decode_step_ns(self, long long n, long long ctx):
        cdef double C = <double> n * self.prefill_ns_per_token
        cdef double M = self.weights_ns + <double> ctx * self.kv_ns_per_token
        return C if C >= M else M  # Python's max(C, M): the first unless the second is larger

    cdef inline double _pieces(self, long long n, long long ctx, double* C, double* M0, double* g) noexcept:
        """gpu.py's _pieces: sets C, M0, g and answers i* (INFINITY where g == 0 < C - M0)."""
        C[0] = <double> n * self.prefill_ns_per_token
        M0[0] = self.weights_ns + <double> ctx * self.kv_ns_per_token
        g[0] = <double> n * self.kv_ns_per_token
        if M0[0] >= C[0]:
            return 0.0
        if g[0] > 0:
            return ceil((C[0] - M0[0]) / g[0])
        return INFINITY

    cpdef double decode_ns(self, long long n, long long ctx, long long k):
        cdef double C, M0, g, i_star
        cdef long long a
        if k <= 0:
            return 0.0
        i_star = self._pieces(n, ctx, &C, &M0, &g)
        if <double> k <= i_star:
            return C * <double> k
        a = <long long> i_star
        return C * <double> a + <double> (k - a) * M0 + g * <double> (k * (k - 1) - a * (a - 1)) / 2.0

    cpdef long long decode_steps_to(self, long long n, long long ctx, long long x) except? -1:
        """gpu.py's decode_steps_to for an int elapsed time x (ns: exact as a double)."""
        cdef double C, M0, g, i_star, r, M, b, m, xd = <double> x
        cdef long long k, a
        if x <= 0:
            return 1
        i_star = self._pieces(n, ctx, &C, &M0, &g)
        if C * (i_star if i_star <= 1e18 else 1e18) >= xd:
            k = <long long> ceil(xd / C)
            if k < 1:
                k = 1
        else:
            a = <long long> i_star
            r = xd - C * <double> a
            M = M0 + g * <double> a
            if g > 0:
                b = M - g / 2.0
                m = (-b + sqrt(b * b + 2.0 * g * r)) / g
            else:
                m = r / M
            k = <long long> ceil(m)
            k = a + (k if k > 1 else 1)
        while k > 1 and self.decode_ns(n, ctx, k - 1) >= xd:
            k -= 1
        while self.decode_ns(n, ctx, k) < xd:
            k += 1
        return k
