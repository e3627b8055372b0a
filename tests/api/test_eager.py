"""Adaptive laziness (tracer.eager): ops on small realized values run at once by NumPy, element
access goes to the realized buffer, in-place writes go into a buffer one array alone holds.
The rest of the suite records every op (conftest sets TRACER_EAGER_SIZE=0); here it is on."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.indexing import basic_view, quick_view
from tracer.ir.config import context
from tracer.store import HostVar, Var


@pytest.fixture(autouse=True)
def eager_on():
    with context(eager_size=4096, small_graph=4096):
        yield


def test_small_ops_run_now_with_numpys_results():
    h = numpy.arange(6.0).reshape(2, 3)
    a = np.array(h)
    before = tracer.stats().evaluations
    y = np.sin(a) * 2 + a.T.sum(axis=1)[0]
    assert tracer.stats().evaluations == before  # nothing left to evaluate
    assert y._var.node.op == "input"
    numpy.testing.assert_array_equal(numpy.asarray(y), numpy.sin(h) * 2 + h.T.sum(axis=1)[0])
    s = a.sum()
    assert type(s) is numpy.float64 and s == h.sum()  # NumPy's scalar, as NumPy returns
    assert type(a[1, 2]) is numpy.float64 and a[1, 2] == 5.0
    assert isinstance(a @ a.T, tracer.ndarray)
    z = np.full((), 2.0)  # NumPy's 0-d array stays an array through in-place ops
    z *= z
    assert isinstance(z, tracer.ndarray) and z.shape == () and float(z) == 4.0


def test_large_and_pending_values_stay_lazy():
    big = np.ones(10_000)
    assert big._var.node.op != "input"  # a creation too large to run now
    y = big * 2
    assert y._var.node.op != "input"
    assert float(y[3]) == 2.0  # an element read evaluates what it reads once


def test_element_reads_writes_and_iteration_match_numpy():
    h = numpy.arange(12).reshape(3, 4)
    a, ref = np.array(h), h.copy()
    for m in (a, ref):
        m[1, 2] = 40
        m[-1, 0] += 7
        m[0] = 5
        m[:, 3] = [1, 2, 3]
        m[2, 1:3] = m[0, :2] * 3
    numpy.testing.assert_array_equal(numpy.asarray(a), ref)
    assert list(a[1]) == list(ref[1]) and a.tolist() == ref.tolist()
    assert a.item(5) == ref.item(5)
    assert [type(v) for v in a[0]] == [type(v) for v in ref[0]]
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        a[3, 0]
    b = np.array(numpy.zeros(3, numpy.int64))
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' output from dtype"):
        b += 1.5


def test_integer_and_mask_indexing_match_numpy():
    h = numpy.arange(12.0).reshape(3, 4)
    a, ref = np.array(h), h.copy()
    for m in (a, ref):
        m[[0, 2], 1] = -1
        m[m > 8] = 0
        m[m < 0] = m[:2, 0]
    numpy.testing.assert_array_equal(numpy.asarray(a), ref)
    assert numpy.asarray(a[[2, 0]]).tolist() == ref[[2, 0]].tolist()
    assert numpy.asarray(a[:, [True, False, True, False]]).tolist() == \
        ref[:, [True, False, True, False]].tolist()
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 0 with size 3"):
        a[[0, 7]] = 1
    numpy.testing.assert_array_equal(numpy.asarray(a), ref)  # nothing written


def test_a_write_reaches_every_view_and_nothing_else():
    h = numpy.arange(6.0).reshape(2, 3)
    a = np.array(h)
    row = a[1]
    copy = a.copy()
    scaled = a * 2
    with context(eager_size=0):  # a recorded copy: its kernel may hand back a's own buffer
        lazy_copy = a + 0.0
        tracer.evaluate(lazy_copy)
    row[0] = 100.0
    a[0, 0] = -1.0
    assert numpy.asarray(a)[1, 0] == 100.0 and float(row[0]) == 100.0
    assert float(row[1]) == 4.0 and numpy.asarray(a)[0, 0] == -1.0
    for other in (copy, scaled, lazy_copy):
        assert numpy.asarray(other)[1, 0] in (3.0, 6.0) and numpy.asarray(other)[0, 0] == 0.0


def test_a_pending_graph_reads_the_value_before_a_write():
    with context(eager_size=4):  # arrays of 6 are "large": their ops are recorded
        a = np.array(numpy.arange(6.0))
        pending = a * 10
        assert pending._var.node.op != "input"
        a[0] = 99.0  # written in place only after the pending graph is computed
        assert numpy.asarray(pending)[0] == 0.0
        assert numpy.asarray(a)[0] == 99.0


def test_jit_traces_record_every_op():
    f = tracer.jit(lambda x: np.sqrt(x) + x.sum())
    for h in (numpy.arange(4.0), numpy.arange(4.0) + 5):
        numpy.testing.assert_allclose(numpy.asarray(f(np.array(h))), numpy.sqrt(h) + h.sum())


def test_quick_views_are_basic_views():
    a = np.array(numpy.arange(24.0).reshape(2, 3, 4))
    keys = [(1,), (slice(None), 1), (1, slice(1, 3)), (slice(None, None, -1),), (-1, -2),
            (slice(5, 1, -1), 0), (0, slice(None), slice(None, None, 2)), (slice(-5, None, -1),),
            (numpy.int64(1), slice(0, 0))]
    for arr in (a, a.transpose((2, 0, 1)), a[:, ::2]):
        for key in keys:
            q, slow = quick_view(arr, key), basic_view(arr, key)
            assert (q._view.steps, q._view.shape, q._view.strides) == \
                (slow._view.steps, slow._view.shape, slow._view.strides), key
    assert quick_view(a, (2,)) is None  # out of range: basic_view raises NumPy's IndexError


@pytest.mark.parametrize("fn", [lambda m, x: x.transpose(1, 0, 2).copy(order="K"),
                                lambda m, x: m.sin(x.transpose(1, 0, 2)),
                                lambda m, x: m.exp(x[:, ::2].transpose(2, 0, 1)),
                                lambda m, x: x.T * 2])
def test_results_keep_numpys_layout(fn):
    """NumPy's order-K results follow an operand's axis order, neither C nor F: the eager
    result reports NumPy's flags and ravels in NumPy's memory order."""
    h = numpy.arange(24.0).reshape(2, 3, 4)

    def layout(m, x):
        a = fn(m, x)
        return (a.flags.c_contiguous, a.flags.f_contiguous, a.flags["FNC"], m.isfortran(a),
                numpy.asarray(a.ravel(order="K")).tolist(),
                numpy.asarray(a.reshape(-1, order="A")).tolist(), numpy.asarray(a).tolist())
    assert layout(np, np.array(h)) == layout(numpy, h)


def test_check_nans_still_finds_the_op_that_made_a_nan():
    with context(check_nans=True):
        with pytest.raises(FloatingPointError, match="nan.*sqrt"):
            a = np.arange(5.0) - 2
            float((np.sqrt(a) * 2).sum())


def test_an_out_array_given_by_position_is_written_as_numpy_writes_it():
    outs = {}
    for m in (np, numpy):
        a, e = m.array(numpy.arange(5.0)), m.eye(5) * 2
        out = m.zeros(5)
        outs[m] = out
        pending = m.concatenate([m.ones(20_000), out])  # reads out before the writes below
        for r in (m.clip(a, 1, 3, out), m.max(e, 0, out), a.clip(0, 2, out),
                  m.matmul(e, out, out), m.sum(e, 0, None, out)):
            assert r is out  # NumPy hands back `out` itself
        numpy.testing.assert_array_equal(numpy.asarray(pending)[-5:], numpy.zeros(5))
    numpy.testing.assert_array_equal(numpy.asarray(outs[np]), outs[numpy])


def test_views_of_realized_arrays_read_numpys_view_and_follow_the_base():
    h = numpy.arange(12.0).reshape(3, 4)
    a, ref = np.array(h), h.copy()
    row, part, col = a[1], a[2, 1:3], a[:, 1]
    rrow, rpart, rcol = ref[1], ref[2, 1:3], ref[:, 1]
    for m, r, p in ((a, row, part), (ref, rrow, rpart)):
        m[1, 0] = -5.0  # the first write copies a's buffer: the views read the copy
        r[3] = 50.0  # a write through a view reaches the base
        p[0] += 7.0
    assert numpy.asarray(a).tolist() == ref.tolist()
    assert row.tolist() == rrow.tolist() and col.tolist() == rcol.tolist()
    assert list(part) == list(rpart) and type(row[0]) is type(rrow[0])
    assert row.base is a and col.flags.c_contiguous == rcol.flags.c_contiguous
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        a[0, 4]
    with pytest.raises(IndexError, match="too many indices for array"):
        row[0, 0]


def test_key_views_work_out_the_steps_of_quick_views():
    a = np.array(numpy.arange(24.0).reshape(2, 3, 4))
    for arr in (a, a.transpose((2, 0, 1)), a[:, ::2]):
        for key in [1, (slice(None), 1), (1, slice(1, 3)), (-1, -2), (slice(5, 1, -1), 0),
                    (numpy.int64(1), slice(0, 0)), (0, slice(None), slice(None, None, 2))]:
            v, q = arr[key], quick_view(arr, key)
            assert (v._view.steps, v._view.shape, v._view.strides) == \
                (q._view.steps, q._view.shape, q._view.strides), key


def test_a_recorded_write_reaches_views_read_through_numpy():
    a = np.array(numpy.arange(6.0).reshape(2, 3))
    row = a[1]
    assert row[0] == 3.0  # NumPy's view of a's buffer, kept by the view
    big = np.ones(20_000) * 2  # pending: writing it is recorded, a new value of a's base
    assert big._var.node.op != "input"
    a[1] = big[:3]
    assert row.tolist() == [2.0, 2.0, 2.0] and a[1, 2] == 2.0


def test_results_make_no_graph_node_until_one_is_needed():
    a = np.array(numpy.arange(4.0))
    y = (a + 1) * 2
    assert y.dtype == numpy.float64 and y.tolist() == [2.0, 4.0, 6.0, 8.0]
    assert y[1:].dtype == numpy.float64 and y[1:3].tolist() == [4.0, 6.0]
    assert type(y._var) is HostVar  # NumPy's result, held as it is
    with context(eager_size=0):
        z = y + 1  # recorded: y's value becomes a leaf node
    assert type(y._var) is Var and y._var.node.op == "input"
    assert numpy.asarray(z).tolist() == [3.0, 5.0, 7.0, 9.0]


def test_a_buffer_laid_out_otherwise_than_its_view_assumed_is_never_written_as_a_copy():
    def run(m):  # w is a copy of v; its buffer is v's layout, where NumPy's reshape copies
        a = m.array(numpy.arange(24.0).reshape(4, 6))
        v = a[1:, ::-1].T[1:5:2]
        v[:, 0] = 55
        w = v.reshape(-1)
        rows = w.reshape(2, 3)
        w[:] = -1
        w[4] = 7
        return [numpy.asarray(x).tolist() for x in (a, v, w, rows, rows[1])]
    assert run(np) == run(numpy)


def test_results_keep_numpys_memory_order():
    for make in (lambda m: m.ones((2, 3, 4)).transpose(1, 0, 2).copy(order="K"),
                 lambda m: m.ones((3, 4), order="F") + 1):
        a, ref = make(np), make(numpy)
        assert (a.flags.c_contiguous, a.flags.f_contiguous) == \
            (ref.flags.c_contiguous, ref.flags.f_contiguous)
        assert numpy.asarray(a.ravel(order="K")).tolist() == ref.ravel(order="K").tolist()


def test_a_small_pending_value_written_into_a_small_realized_array_is_evaluated_first():
    """`out[k] = big[m].sum()` in a loop: the value is evaluated at the write and `out` stays
    realized (recorded, each write would keep its value's graph alive and grow out's chain)."""
    h = numpy.linspace(0, 1, 10_000)
    big = np.array(h)  # above eager_size: its ops are recorded
    out = np.zeros(4)
    for k in range(4):
        out[k] = (big * k).sum()  # a pending 0-d value
        assert out._var.node.op == "input" and out._hmemo is not None
    numpy.testing.assert_allclose(numpy.asarray(out), [(h * k).sum() for k in range(4)])
    ints, expected = np.zeros(3, dtype=np.int8), numpy.zeros(3, numpy.int8)
    with pytest.raises(OverflowError):  # a sum is NumPy's scalar, checked as it is written
        expected[1] = (h > 0.5).sum() - 4800
    with pytest.raises(OverflowError):
        ints[1] = (big > 0.5).sum() - 4800
    ints[1] = np.asarray((big > 0.5).sum() - 4800)  # a 0-d array casts (wraps)
    expected[1] = numpy.asarray((h > 0.5).sum() - 4800)
    numpy.testing.assert_array_equal(numpy.asarray(ints), expected)
