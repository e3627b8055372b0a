"""cpu float sums: blocks of SUM_BLOCK values added in reassociable vector lanes (`_radd`), sums of
products fused into their adds (`_rfma`), blocks in float64. Against float64 NumPy, NumPy's
NaN/inf results, and the same bits on any thread count."""
from __future__ import annotations

import numba
import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels.cpu import codegen as cpu

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject


def _src(*outs) -> str:
    return "".join(k.source for k in tracer.explain(*outs).kernels)


def test_sum_of_products_fuses_and_other_sums_add():
    a = np.asarray(numpy.ones(50000, numpy.float32))
    b = np.asarray(numpy.ones((300, 40), numpy.float64))
    assert "_rfma(" in _src((a * a).sum()) and "_radd(" not in _src((a * a).sum())
    assert "_radd(" in _src((a + 1).sum()) and "_rfma(" not in _src((a + 1).sum())
    assert "_rfma(" in _src((b * b).sum(axis=1))
    assert f"range(j1b, min(j1b + {cpu.SUM_BLOCK}" in _src((b * 2).sum(axis=1))


@pytest.mark.parametrize("dtype, tol", [(numpy.float32, 1e-6), (numpy.float64, 1e-13)])
def test_block_sums_are_accurate(dtype, tol):
    rng = numpy.random.default_rng(3)
    h = rng.standard_normal(3_000_001).astype(dtype)
    g = rng.standard_normal((7, 50_001)).astype(dtype)
    x, y = np.asarray(h), np.asarray(g)
    h64, g64 = h.astype(numpy.float64), g.astype(numpy.float64)
    cases = [((x * x).sum(), (h64 * h64).sum()), ((x + 0.5).sum(), (h64 + 0.5).sum()),
             ((y * y).sum(axis=1), (g64 * g64).sum(axis=1)),
             (np.exp(y).sum(axis=1) / 3, numpy.exp(g64).sum(axis=1) / 3)]
    for got, want in cases:
        got = numpy.asarray(got)
        assert got.dtype == dtype
        assert numpy.max(numpy.abs(got - want) / numpy.abs(want)) <= tol


def test_nan_and_inf_in_sums_of_products_match_numpy():
    h = numpy.arange(20000, dtype=numpy.float32) / 7
    for bad, other in [(numpy.inf, 0.0), (numpy.inf, 2.0), (numpy.nan, 1.0), (-numpy.inf, 3.0)]:
        p, q = h.copy(), h.copy()
        p[12345], q[12345] = bad, other
        got = numpy.asarray((np.asarray(p) * np.asarray(q)).sum())
        with numpy.errstate(invalid="ignore"):
            want = (p * q).sum()
        assert (numpy.isnan(got) and numpy.isnan(want)) or got == want


def test_block_sums_do_not_depend_on_the_thread_count():
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
