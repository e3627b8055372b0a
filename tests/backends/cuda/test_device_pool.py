"""The cuda backend's caching allocator, under Numba's CUDA simulator: intermediates go back to
the pool when their storage dies and are handed out again; results and anything a result
still views are never reused."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels import backends
from tracer.cuda_kernels.cuda.memory import DevicePool
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject


def _prog(m, x):
    y = (x @ x.T) * 2                     # a matmul intermediate and a fused epilogue
    return (y - y.max(1, keepdims=True)).sum(0) + (x.sum(0) * 3).sum()


def test_repeated_evaluations_reuse_device_buffers():
    h = numpy.random.default_rng(0).standard_normal((8, 6)).astype(numpy.float32)
    want = _prog(numpy, h.astype(numpy.float64))
    with context(backend="cuda", cuda_sim=True):
        pool = backends.get("cuda").pool
        numpy.testing.assert_allclose(numpy.asarray(_prog(np, np.asarray(h))), want, rtol=1e-4)
        allocs, hits = pool.allocs, pool.hits
        numpy.testing.assert_allclose(numpy.asarray(_prog(np, np.asarray(h))), want, rtol=1e-4)
        assert pool.allocs - allocs <= 1  # only the result is new
        assert pool.hits - hits >= 5      # every intermediate and partial came from the pool


def test_results_and_their_views_are_never_handed_out_again():
    h = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    with context(backend="cuda", cuda_sim=True):
        x = np.asarray(h)
        m = x @ x.T
        flat, twice = tracer.evaluate(m.reshape(-1), m * 2)  # flat views m's storage
        for k in range(3):  # later evaluations allocate and release intermediates
            numpy.asarray((x @ x.T + k) * 2)
        numpy.testing.assert_array_equal(numpy.asarray(flat), (h @ h.T).reshape(-1))
        numpy.testing.assert_array_equal(numpy.asarray(twice), (h @ h.T) * 2)


def test_pool_release_takes_only_its_own_live_arrays():
    from numba.cuda import simulator
    pool = DevicePool(lambda: simulator)
    a = pool.empty((4, 2), numpy.float32)
    stranger = simulator.device_array((4, 2), numpy.float32)
    pool.release(stranger)                 # not from the pool: ignored
    assert pool.idle == 0
    pool.release(a)
    assert pool.idle == 32
    b = pool.empty((8,), numpy.int32)      # same byte size: the same block
    assert pool.hits == 1 and b.shape == (8,) and b.dtype == numpy.int32
    pool.release(a)                        # a second release of an array handed out again
    assert pool.idle == 0


def test_updates_run_in_place_on_the_device():
    h = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    with context(backend="cuda", cuda_sim=True):
        a = np.asarray(h) * 2
        a[1] = -1.0
        np.add.at(a, ([0, 0], [1, 1]), 1.0)
        a[[2, 2], [3, 0]] = 7.0
        assert tracer.explain(a).bytes_copied == 0
        want = h * 2
        want[1] = -1.0
        numpy.add.at(want, ([0, 0], [1, 1]), 1.0)
        want[[2, 2], [3, 0]] = 7.0
        numpy.testing.assert_array_equal(numpy.asarray(a), want)
