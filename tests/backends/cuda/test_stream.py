"""Stream-ordered execution on the cuda backend, pinned by its counters under Numba's CUDA
simulator (no GPU needed): a plan-cached evaluation enqueues its launches and returns without
the host waiting; the host waits, and copies back, only where it reads values; device errors
are raised at that wait, at the user's line. (The simulator runs every launch at once; the
counters count what a GPU's stream would see.)"""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels import backends
from tracer.ir.config import context
from tracer.ir.stats import STATS

from counters import Delta

# the backend's kernels are the subject (on the simulator)
pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim")]



def _inputs(shape=(4, 6), n=4):
    hs = [numpy.random.default_rng(k).standard_normal(shape).astype(numpy.float32)
          for k in range(n)]
    return hs, [tracer.evaluate(np.asarray(h) * 1) for h in hs]  # device-resident values


def _w1(m, a, b, c, d):
    return a * b + c * m.sin(d) - m.exp(-a * a)


def test_w1_plan_cached_is_one_launch_no_wait_no_upload():
    hs, xs = _inputs()
    for _ in range(2):  # the first compiles and caches the plan
        tracer.evaluate(_w1(np, *xs))
    with Delta() as run:
        r = tracer.evaluate(_w1(np, *xs))
    assert (run.kernels_launched, run.host_waits, run.h2d_copies, run.h2d_bytes,
            run.d2h_copies) == (1, 0, 0, 0, 0)
    with Delta() as read:
        got = numpy.asarray(r)
    assert (read.host_waits, read.d2h_copies, read.d2h_bytes) == (1, 1, got.nbytes)
    numpy.testing.assert_allclose(got, _w1(numpy, *hs), rtol=2e-6, atol=1e-6)


def test_full_sum_plan_cached_is_at_most_two_launches():
    hs, (a, *_) = _inputs()
    for _ in range(2):
        tracer.evaluate((a * a).sum())
    with Delta() as run:
        r = tracer.evaluate((a * a).sum())
    assert run.kernels_launched <= 2 and run.host_waits == 0 and run.h2d_bytes == 0
    with Delta() as read:
        got = float(r)
    assert read.host_waits == 1
    numpy.testing.assert_allclose(got, (hs[0].astype(numpy.float64) ** 2).sum(), rtol=1e-6)


@pytest.fixture(scope="module")
def row_writes():
    """64 row writes into x, an evaluated device array, evaluated at once: (plan, counters).
    A thread an earlier test left alive after it recorded (a library's pool) keeps tracer
    from writing into leaves in place (store._no_other_recorder, conservative): this program
    has one thread, so those are forgotten first."""
    import threading

    from tracer import store
    store._RECORDERS.intersection_update({threading.get_ident()})
    h = numpy.random.default_rng(0).standard_normal((64, 8)).astype(numpy.float32)
    with context(backend="cuda", cuda_sim=True):
        src = tracer.evaluate(np.asarray(h) * 1)
        x = tracer.evaluate(np.zeros((64, 8), np.float32) + 0)
        with Delta() as run:
            for i in range(64):
                x[i] = src[i] * 2
            plan = tracer.explain(x)
            tracer.evaluate(x)
        numpy.testing.assert_array_equal(numpy.asarray(x), h * 2)
    return plan, run


def test_row_writes_into_a_device_buffer_upload_nothing_and_never_wait(row_writes):
    plan, run = row_writes
    assert (run.host_waits, run.h2d_copies, run.d2h_copies) == (0, 0, 0)
    assert plan.bytes_copied <= 64 * 8 * 4  # 63 writes in place; see the test below


def test_row_writes_into_a_device_buffer_copy_no_buffer(row_writes):
    """Issue 21's structure target: 64 launches or fewer, no buffer copy: each row's kernel
    writes into its row (horizontal fusion keeps such kernels apart: merged, they wrote
    temporaries that 64 more launches copied), and no temporary is planned."""
    plan, run = row_writes
    assert plan.bytes_copied == 0 and plan.peak_bytes == 0 and run.kernels_launched == 64


def test_lifted_slice_starts_are_read_on_the_host():
    """A loop over row windows: the plan lifts the slices' starts into parameters (host
    int64 arrays), read on the host, neither uploaded nor waited for; the windows are device
    views of the source rows."""
    h = numpy.random.default_rng(0).standard_normal((8, 4)).astype(numpy.float32)
    src = tracer.evaluate(np.asarray(h) * 1)
    for i in range(5):
        with Delta() as run:
            y = tracer.evaluate(src[i:i + 2] * 2 + src[i + 1:i + 3])
        if i:  # the first call plans with its slices as they are
            assert (run.kernels_launched, run.host_waits, run.h2d_copies) == (1, 0, 0)
        numpy.testing.assert_array_equal(numpy.asarray(y), h[i:i + 2] * 2 + h[i + 1:i + 3])


def test_host_arrays_go_up_through_pinned_staging_once():
    h = numpy.arange(30, dtype=numpy.float64).reshape(5, 6)
    a = np.asarray(h)
    with Delta() as first:
        r = tracer.evaluate(a * 2 + 1)
    assert (first.h2d_copies, first.h2d_bytes, first.host_waits) == (1, h.nbytes, 0)
    with Delta() as again:
        tracer.evaluate(a * 3 - 1)  # the leaf's device copy is kept
    assert again.h2d_copies == 0
    numpy.testing.assert_array_equal(numpy.asarray(r), h * 2 + 1)


def test_uploads_larger_than_a_staging_buffer_go_in_chunks(monkeypatch):
    from tracer.cuda_kernels.cuda.memory import Staging
    be = backends.get("cuda")
    staging = Staging(be._api, be._waited, be._event)
    staging.CHUNK = 96  # bytes: 1000 float64 take 84 chunks
    monkeypatch.setattr(be, "_staging", staging)
    h = numpy.random.default_rng(0).standard_normal((10, 100))
    with Delta() as up:
        x = be.from_host(h[:, ::-1])  # (not contiguous: made so first)
    assert (up.h2d_copies, up.h2d_bytes, up.host_waits) == (1, h.nbytes, 0)
    numpy.testing.assert_array_equal(be.to_host(x), h[:, ::-1])


@pytest.mark.parametrize("key", [slice(1, 3), 2, (slice(3, 4), slice(None))])
def test_row_views_of_a_device_array_allocate_and_launch_nothing(key):
    be = backends.get("cuda")
    h = numpy.arange(24, dtype=numpy.float32).reshape(4, 6)
    x = be.from_host(h)
    lazy = np.asarray(h)[key]
    n = lazy._node
    if n.op == "reshape":  # a row: its slice, then the reshape that drops the axis
        n = n.inputs[0]
    allocs = be.pool.allocs + be.pool.hits
    with Delta() as run:
        v = be.run_node(n, [x])
    assert run.kernels_launched == 0 and be.pool.allocs + be.pool.hits == allocs
    numpy.testing.assert_array_equal(be.to_host(v).reshape(numpy.shape(h[key])), h[key])


def test_library_kernels_count_as_launches():
    be = backends.get("cuda")
    h = numpy.arange(24, dtype=numpy.float32).reshape(4, 6)
    x = be.from_host(h)
    with Delta() as cols:
        v = be.run_node(np.asarray(h)[:, 1:3]._node, [x])  # strided: one copy kernel
    g = numpy.ones((6, 2), numpy.float32)
    y = be.from_host(g)
    with Delta() as mm:
        m = be.run_node((np.asarray(h) @ np.asarray(g))._node, [x, y])
    assert (cols.kernels_launched, mm.kernels_launched) == (1, 1)
    assert cols.host_waits == mm.host_waits == 0
    numpy.testing.assert_array_equal(be.to_host(v), h[:, 1:3])
    numpy.testing.assert_allclose(be.to_host(m), h @ g)


def test_index_error_is_raised_at_the_next_wait_at_the_users_line():
    x = tracer.evaluate(np.asarray(numpy.arange(5.0)) * 1)
    i = tracer.evaluate(np.asarray(numpy.array([1, 9, 2])) * 1)  # lazily: known only on device
    with Delta() as run:
        g = x[i]; line = _line()  # noqa: E702 - the gather's line
        tracer.evaluate(g)
    assert run.host_waits == 0  # the error record is not read back per launch
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 5") \
            as err:
        numpy.asarray(g)
    # located by a NumPy replay of the evaluation's graph: the gather's line, not the read's
    assert any(f"test_stream.py:{line}" in note for note in err.value.__notes__)
    assert err.traceback[-1].lineno + 1 == line
    # the failed value stays failed: read again, or read by a later evaluation
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        numpy.asarray(g)
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        numpy.asarray(g + 1)
    # the record was cleared: a later evaluation with good indices reads fine
    numpy.testing.assert_array_equal(numpy.asarray(x[i % 5]), [1.0, 4.0, 2.0])


def _line() -> int:
    import sys
    return sys._getframe(1).f_lineno


def test_counters_show_in_explain_and_debug_output(capsys):
    _, (a, b, *_) = _inputs()
    for _ in range(2):
        tracer.evaluate(a * b + 1)
    text = str(tracer.explain(a * b + 1))
    assert "== last evaluation of this plan: 1 launches, 0 host waits, h2d 0 copies 0 B" in text
    with context(debug=1):
        tracer.evaluate(a * b + 1)
    assert "[tracer] device run: 1 launches, 0 host waits" in capsys.readouterr().err


def test_jit_replay_launches_its_kernels_without_tracing_or_planning():
    """tracer.jit on cuda: a replay binds the new buffers and launches the plan's kernels (one
    fused reduction here) with no tracing, no optimizer, no upload and no wait."""
    hs, (a, b, *_) = _inputs()
    f = tracer.jit(lambda x, y: (x * y + x).sum(-1))
    for _ in range(2):  # the first traces and plans (or finds the plan cached)
        f(a, b)
    trace, opt = STATS.trace_s, STATS.optimize_s
    with Delta() as run:
        r = f(a, b)
        tracer.evaluate(r)
    assert (run.kernels_launched, run.host_waits, run.h2d_bytes) == (1, 0, 0)
    assert (STATS.trace_s, STATS.optimize_s) == (trace, opt)
    numpy.testing.assert_allclose(numpy.asarray(r), (hs[0] * hs[1] + hs[0]).sum(-1), rtol=1e-5)
