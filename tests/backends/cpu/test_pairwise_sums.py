"""cpu float sums in NumPy's order (cpu/pairwise.py): the kernel forms each shape gets, nothing
reassociated or contracted, and the same bits on any thread count (a full sum's subtrees run
in parallel). Bitwise agreement with NumPy: tests/differential/test_sum_order.py."""
from __future__ import annotations

import numba
import numpy
import pytest

import tracer
import tracer.numpy as np

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject


def _src(*outs) -> str:
    return "".join(k.source for k in tracer.explain(*outs).kernels)


def test_kernel_forms():
    a = np.asarray(numpy.ones(50000, numpy.float32))
    b = np.asarray(numpy.ones((300, 40), numpy.float64))
    full = _src((a * a).sum())
    assert "for sb in " in full and "_f32(q0 + " in full  # float32 partials
    body = full.split("@njit(parallel", 1)[1]
    assert "fma" not in body and "_f64(" not in body  # products rounded, then added in float32
    rows = _src((b * b).sum(axis=1))
    assert "while True" in rows and "sv[tid, _ix(" not in rows  # one run axis: direct
    assert "sv[tid, _ix(" in _src(b.sum())  # a run over two axes is staged
    cols = _src(b.sum(axis=0))
    # a run of 1: rows added in order, in float64
    assert "while True" not in cols and "sc[_ix(tid), _ix(j1 - lo)] = _f64(" in cols


def test_sums_do_not_depend_on_the_thread_count():
    h = numpy.random.default_rng(4).standard_normal((64, 70_000)).astype(numpy.float32)
    x = np.asarray(h)
    progs = lambda: [(x * x).sum(), (x - 1).sum(axis=1), np.exp(x[:4] * 0.1).sum()]  # noqa: E731
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = [numpy.asarray(r) for r in tracer.evaluate(*progs())]
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = [numpy.asarray(r) for r in tracer.evaluate(*progs())]
    finally:
        numba.set_num_threads(old)
    for a, b in zip(one, two):
        numpy.testing.assert_array_equal(a, b)
    assert one[0].tobytes() == (h * h).sum().tobytes()
    assert one[1].tobytes() == (h - 1).sum(axis=1).tobytes()


def test_nan_and_inf_in_sums_of_products_match_numpy():
    h = numpy.arange(20000, dtype=numpy.float32) / 7
    for bad, other in [(numpy.inf, 0.0), (numpy.inf, 2.0), (numpy.nan, 1.0), (-numpy.inf, 3.0)]:
        p, q = h.copy(), h.copy()
        p[12345], q[12345] = bad, other
        got = numpy.asarray((np.asarray(p) * np.asarray(q)).sum())
        with numpy.errstate(invalid="ignore"):
            want = (p * q).sum()
        assert got.tobytes() == want.tobytes()
