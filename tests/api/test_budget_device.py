"""tracer.memory_budget on the cuda backend, under Numba's CUDA simulator (tiny sizes: it runs a
thread at a time): a split's chunk results stay on the device until the user reads them, the
partials of reductions over the split rows combine on the device in chunk order, and the
device pool's idle blocks stay within what the plan leaves of the budget."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels import backends

from counters import Delta

pytestmark = [pytest.mark.lazy, pytest.mark.cuda, pytest.mark.usefixtures("cuda_sim")]



def _dist(m, x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)


def _knn(m, x, y):
    """Distances to the nearest and which: both read the N x M distances, which the budget
    splits (one reduction alone would compute them inline, with no N x M value)."""
    d = _dist(m, x, y)
    return d.min(1), d.argmin(1)


def _device_inputs(*hs):
    return [tracer.evaluate(np.asarray(h) * 1) for h in hs]  # values already on the device


def test_chunk_results_stay_on_the_device_until_read():
    rng = numpy.random.default_rng(3)
    x, y = (rng.standard_normal(s).astype(numpy.float32) for s in ((6, 3), (10, 3)))
    X, Y = _device_inputs(x, y)
    nearest, which = _knn(np, X, Y)
    assert tracer.explain(nearest, which).peak_bytes > 128
    tracer.reset_stats()
    with tracer.memory_budget(128), Delta() as run:
        tracer.evaluate(nearest, which)
    s = tracer.stats()
    assert s.split_chunks > 1 and 0 < s.measured_peak_bytes <= 128
    assert (run.d2h_copies, run.d2h_bytes, run.h2d_bytes) == (0, 0, 0)
    with Delta() as read:
        got = numpy.asarray(nearest)
    assert (read.d2h_copies, read.d2h_bytes) == (1, got.nbytes)
    want = _dist(numpy, x.astype(numpy.float64), y.astype(numpy.float64)).min(1)
    numpy.testing.assert_allclose(got, want, rtol=1e-5)


def test_reductions_over_the_split_rows_combine_on_the_device():
    rng = numpy.random.default_rng(4)
    x, y = (rng.standard_normal(s).astype(numpy.float32) for s in ((6, 3), (4, 3)))
    X, Y = _device_inputs(x, y)
    d = _dist(np, X, Y)
    outs = (d.sum(), d.max(), d.min(0), (d > 2).any(axis=0), d.min(1))
    tracer.reset_stats()
    with tracer.memory_budget(120), Delta() as run:
        tracer.evaluate(*outs)
    assert tracer.stats().split_chunks > 2
    assert run.d2h_copies == 0  # no partial came back to be combined on the host
    D = _dist(numpy, x.astype(numpy.float64), y.astype(numpy.float64))
    for got, want in zip(outs, (D.sum(), D.max(), D.min(0), (D > 2).any(0), D.min(1))):
        got = numpy.asarray(got)
        assert got.shape == numpy.shape(want)
        numpy.testing.assert_allclose(got, want, rtol=1e-5)


def test_host_inputs_upload_chunk_by_chunk():
    """Host inputs are uploaded a chunk's rows at a time (through pinned staging, on the
    stream: the next chunk's upload is enqueued while the device runs this one's kernels)."""
    rng = numpy.random.default_rng(5)
    x, y = (rng.standard_normal(s).astype(numpy.float32) for s in ((6, 3), (10, 3)))
    nearest, which = _knn(np, np.asarray(x), np.asarray(y))
    tracer.reset_stats()
    with tracer.memory_budget(128), Delta() as run:
        tracer.evaluate(nearest, which)
    chunks = tracer.stats().split_chunks
    assert chunks > 1 and run.d2h_copies == 0 and run.host_waits == 0
    assert run.h2d_bytes >= x.nbytes  # every row of x went up once, with its chunk
    want = _dist(numpy, x.astype(numpy.float64), y.astype(numpy.float64)).min(1)
    numpy.testing.assert_allclose(numpy.asarray(nearest), want, rtol=1e-5)


def test_idle_device_blocks_stay_within_the_room_the_plan_leaves():
    pool = backends.get("cuda").pool
    h = numpy.ones((16, 16), numpy.float32)
    for k in range(3):  # blocks of several sizes go idle
        numpy.asarray(tracer.evaluate(np.asarray(h[: 4 * (k + 1)]) * 2 + k))
    x = np.asarray(numpy.arange(12, dtype=numpy.float32))
    y = x * 3 + 1
    need = tracer.explain(y).peak_bytes + y.nbytes
    with tracer.memory_budget(need + 100):
        numpy.testing.assert_array_equal(numpy.asarray(y), numpy.arange(12) * 3 + 1)
        assert pool.idle <= 100
