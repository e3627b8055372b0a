"""Issue 17, items 2, 4, 17: the runtime. A write never reaches another array's buffer (the
tiled tier's views of a group's inputs, buffer assignment's in-place writes into a result's
storage), threads keep every in-place update, and an evaluation error stays with the arrays
that depend on the op that failed."""
from __future__ import annotations

import sys
import threading

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels import backends, executor
from tracer.ir.config import context

MODES = ["small", "compiled", "tiered"]


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    """Each execution mode; "tiered" stands for a cold kernel cache: every fused group runs on
    the tiled NumPy tier, as while its kernel compiles."""
    if request.param == "tiered":
        monkeypatch.setattr(backends.backend_class("cpu"), "ready", lambda be, k: False)
    small = 4096 if request.param == "small" else 0
    compile_mode = "tiered" if request.param == "tiered" else "sync"
    with context(small_graph=small, compile_mode=compile_mode):
        yield request.param


# ------------------------------------------------------------------ item 2: aliasing

def _copy_then_write_through_view(m, n):
    x1 = m.array(numpy.arange(-n // 2, n // 2).reshape(1, n))
    v3 = x1.copy().T
    s = x1.sum(keepdims=True)
    v3[::-1, ::-1] = 256
    if m is np:
        tracer.evaluate(s, v3, x1)
    return x1, s, v3


@pytest.mark.parametrize("n", [10, 6000])
def test_write_through_view_of_copy_leaves_original_alone(mode, n):
    got = _copy_then_write_through_view(np, n)
    want = _copy_then_write_through_view(numpy, n)
    for g, w in zip(got, want):
        numpy.testing.assert_array_equal(numpy.asarray(g), w)


def test_write_through_view_of_copy_leaves_later_reductions_of_original_alone(mode):
    def prog(m):
        x = m.array(numpy.arange(-8.0, 8.0).reshape(4, 4))
        y = x.copy().T
        y[1:, ::-1] += 5
        z = x.copy().T
        z[...] = 80
        if m is np:
            tracer.evaluate(y, z, x)
        return float(x.sum()), float(x.min()), float(x.mean()), m.asarray(y).tolist()
    assert prog(np) == prog(numpy)


def test_write_after_a_copy_of_an_updated_array_leaves_the_copy_alone(mode):
    """Buffer assignment ran the second write in place on storage the copy's value had
    been merged into by the first in-place write."""
    def prog(m):
        base = m.array(numpy.arange(-12.0, 12.0).reshape(4, 6))
        base[...] = 3
        base.reshape(-1)[::3] = 88
        c = base.copy()
        base[1:, :] = 18
        if m is np:
            tracer.evaluate(base, c)
        return m.asarray(c).tolist(), m.asarray(base).tolist()
    assert prog(np) == prog(numpy)


def test_reduction_of_a_filled_array_counts_every_element(mode):
    def prog(m):
        base = m.array(numpy.arange(-12.0, 12.0).reshape(4, 6))
        base.T[...] = 30
        base += 7
        return float(base.sum()), float(base.prod()), bool(base.all())
    assert prog(np) == prog(numpy)


def test_tiered_outputs_that_are_views_of_inputs_are_copied():
    a = numpy.arange(6.0).reshape(2, 3)
    got = executor._fresh_outputs((a.T, a, numpy.broadcast_to(1.0, (3,))), [a])
    assert all(g.flags.writeable and not numpy.shares_memory(g, a) for g in got)
    fresh = numpy.ones(3)
    assert executor._fresh_outputs(fresh, [a]) is fresh  # a fresh buffer is kept as it is


# ------------------------------------------------------------------ item 4: threads

STEPS = 150


def _stress():
    """Two threads write in place while three read; every read must see whole writes."""
    a, b, c = np.zeros(8), np.zeros(8, np.int64), np.arange(8.0)
    writing, seen, errors = [2], [], []

    def guard(fn):
        def run():
            try:
                fn()
            except Exception as e:  # noqa: BLE001  (reported by the test)
                errors.append(e)
        return threading.Thread(target=run)

    def writer():
        nonlocal a
        for _ in range(STEPS):
            a += 1.0
            b[::2] += 1
        writing[0] -= 1

    def writer2():
        for _ in range(STEPS):
            c[1:3] -= 1.0
            c[...] = c + 1.0
        writing[0] -= 1

    def reader():
        while writing[0] and not errors:
            seen.append((numpy.asarray(a * 2), numpy.asarray(b).copy()))

    threads = [guard(writer), guard(writer2)] + [guard(reader) for _ in range(3)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads every few ops: the races show at once
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    return a, b, c, seen, errors


def test_threads_keep_every_in_place_update(mode):
    a, b, c, seen, errors = _stress()
    assert not errors
    numpy.testing.assert_array_equal(numpy.asarray(a), numpy.full(8, float(STEPS)))
    numpy.testing.assert_array_equal(numpy.asarray(b), [STEPS, 0] * 4)
    want_c = numpy.arange(8.0) + STEPS
    want_c[1:3] -= STEPS
    numpy.testing.assert_array_equal(numpy.asarray(c), want_c)
    for twice, bs in seen:  # no read saw half a write
        assert (twice == twice[0]).all() and twice[0] % 2 == 0 and 0 <= twice[0] <= 2 * STEPS
        assert (bs[::2] == bs[0]).all() and (bs[1::2] == 0).all()


# ------------------------------------------------------------------ item 17: errors stay put

def _failing(n=10):
    x = np.arange(float(n)) + 0
    return x, x[np.arange(n) + n]  # a gather whose index is out of bounds, computed lazily


@pytest.mark.lazy
def test_failed_array_raises_again_and_spares_unrelated_arrays(mode):
    x, bad = _failing()
    with pytest.raises(IndexError, match="index 10 is out of bounds") as first:
        bad.sum().item()
    y = np.arange(10.0) * 2 + 1
    assert float(y.sum()) == 100.0
    assert float((x * 3).sum()) == 135.0  # reads the failed graph's other values
    with pytest.raises(first.type, match=str(first.value).splitlines()[0]):
        numpy.asarray(bad)


@pytest.mark.lazy
def test_failed_array_never_read_does_not_break_later_reads(mode):
    x, bad = _failing()
    z = x * 3 + 1
    assert float(z.sum()) == 145.0
    assert numpy.asarray(np.ones(4) + x[:4]).tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(IndexError, match="index 10 is out of bounds"):
        float(bad[0])


@pytest.mark.lazy
def test_flush_keeps_a_failed_array_pending(mode):
    with context(flush_nodes=40):
        _, bad = _failing()
        y = np.ones(6)
        for _ in range(60):  # past flush_nodes: the flush evaluates every pending array
            y = y * 1.0 + 1.0
        assert numpy.asarray(y).tolist() == [61.0] * 6
        with pytest.raises(IndexError, match="index 10 is out of bounds"):
            numpy.asarray(bad)


@pytest.mark.lazy
def test_evaluate_raises_for_the_failed_array_and_computes_the_others(mode):
    _, bad = _failing()
    good = np.arange(4.0) + 1
    with pytest.raises(IndexError):
        tracer.evaluate(good, bad)
    assert good._var.node.op == "input"  # computed all the same
    assert numpy.asarray(good).tolist() == [1.0, 2.0, 3.0, 4.0]
