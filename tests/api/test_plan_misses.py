"""Graphs whose plans keep missing (tracer.engine.small_roots): a loop whose shapes change every
step runs by the interpreter after CONFIG.miss_streak misses, with NumPy's values; a loop
whose plans hit keeps its compiled plans."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as tnp
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # which recorded graphs the interpreter runs


@pytest.fixture(autouse=True)
def policy():
    with context(small_graph=16, miss_graph=1 << 18, miss_streak=3, compile_mode="sync"):
        yield


def trailing(np, a, k):
    a[k:, k:] = a[k:, k:] - np.outer(a[k:, k - 1], a[k - 1, k:]) / a[k - 1, k - 1]
    return float(a[k, k])


def test_changing_shapes_run_by_the_interpreter():
    h = numpy.arange(400.0).reshape(20, 20) % 7 + 20 * numpy.eye(20)
    a = tnp.array(h)
    tracer.reset_stats()
    got = [trailing(tnp, a, k) for k in range(1, 16)]
    s = tracer.stats()
    want = [trailing(numpy, h, k) for k in range(1, 16)]
    numpy.testing.assert_allclose(got, want, rtol=1e-12)
    numpy.testing.assert_allclose(numpy.asarray(a), h, rtol=1e-12)
    assert s.small_graphs >= 15 - 3 - 1  # all but the first misses (and a retry at most)
    assert s.evaluations - s.small_graphs <= 3 + 1


def test_hits_stay_compiled():
    h = numpy.arange(400.0).reshape(20, 20)
    a = tnp.array(h)
    tracer.reset_stats()
    for _ in range(12):
        a[2:, 2:] = a[2:, 2:] * 0.5 + 1.0
        float(a[3, 3])
        h[2:, 2:] = h[2:, 2:] * 0.5 + 1.0
    s = tracer.stats()
    numpy.testing.assert_array_equal(numpy.asarray(a), h)
    assert s.small_graphs == 0 and s.plan_cache_hits >= 10


def test_large_values_stay_compiled():
    h = numpy.arange(400.0).reshape(20, 20) % 7 + 20 * numpy.eye(20)
    a = tnp.array(h)
    tracer.reset_stats()
    with context(miss_graph=100):  # the 20 x 20 array is over it
        got = [trailing(tnp, a, k) for k in range(1, 10)]
    assert tracer.stats().small_graphs == 0
    numpy.testing.assert_allclose(got, [trailing(numpy, h, k) for k in range(1, 10)],
                                  rtol=1e-12)
