"""The interpreter's slice writes in place (ir.interp.inplace_updates, store.writable_leaves):
a write goes into the buffer its array alone holds when nothing else reads the old values;
every other reader still sees them. Side by side with NumPy."""
from __future__ import annotations

import numpy
import pytest

import tracer.numpy as tnp
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # the interpreter's writes into recorded graphs' leaves


@pytest.fixture(autouse=True)
def interpreted():
    with context(small_graph=1 << 20):
        yield


def host(a):
    return a._var.node.attrs[0][1].host


def test_loop_writes_into_one_buffer():
    h = numpy.arange(36.0).reshape(6, 6) + 10 * numpy.eye(6)
    a = tnp.array(h)
    for k in range(5):
        a[k + 1:, k] = a[k + 1:, k] / a[k, k]
        a[k + 1:, k + 1:] = a[k + 1:, k + 1:] - tnp.outer(a[k + 1:, k], a[k, k + 1:])
        if k == 1:
            numpy.asarray(a)
            buf = host(a)
        h[k + 1:, k] = h[k + 1:, k] / h[k, k]
        h[k + 1:, k + 1:] = h[k + 1:, k + 1:] - numpy.outer(h[k + 1:, k], h[k, k + 1:])
    numpy.testing.assert_allclose(numpy.asarray(a), h, rtol=1e-12)
    assert host(a) is buf  # the evaluations after the first wrote into the array they made


def test_pending_reader_keeps_old_values():
    h = numpy.arange(12.0).reshape(3, 4)
    a = tnp.array(h)
    a[0] = 1.0
    numpy.asarray(a)  # evaluated: the new buffer is a's own
    b = a * 2  # pending, reads a's buffer
    a[1:] = a[1:] + 5
    got_a = numpy.asarray(a)
    h[0] = 1.0
    want_b = h * 2
    h[1:] = h[1:] + 5
    numpy.testing.assert_array_equal(got_a, h)
    numpy.testing.assert_array_equal(numpy.asarray(b), want_b)


def test_reader_in_same_graph_after_write():
    h = numpy.arange(12.0).reshape(3, 4)
    a = tnp.array(h)
    a[0] = 1.0
    numpy.asarray(a)  # evaluated: the new buffer is a's own
    a[1] = 7.0
    c = a[2] + a[1]  # reads the write's result
    h[0] = 1.0
    h[1] = 7.0
    numpy.testing.assert_array_equal(numpy.asarray(c), h[2] + h[1])
    numpy.testing.assert_array_equal(numpy.asarray(a), h)


def test_two_arrays_one_graph():
    h = numpy.arange(20.0).reshape(4, 5)
    a = tnp.array(h)
    a[0] = 3.0
    numpy.asarray(a)  # evaluated: the new buffer is a's own
    old = a.copy()  # another array over the old values, pending with the write
    a[1:3] = -a[1:3]
    got = numpy.asarray(a), numpy.asarray(old)
    h[0] = 3.0
    want_old = h.copy()
    h[1:3] = -h[1:3]
    numpy.testing.assert_array_equal(got[0], h)
    numpy.testing.assert_array_equal(got[1], want_old)


def test_exported_values_follow_numpy():
    """np.asarray of an array and later writes: NumPy's asarray is the array itself."""
    h = numpy.arange(6.0)
    a = tnp.array(h)
    a[0] = 1.0
    first = numpy.asarray(a).copy()
    a[1:] = a[1:] * 3
    h[0] = 1.0
    numpy.testing.assert_array_equal(first, h)
    h[1:] = h[1:] * 3
    numpy.testing.assert_array_equal(numpy.asarray(a), h)


def test_error_after_write_keeps_values():
    """A graph that may raise as it runs writes nothing in place: the values that did not
    fail are computed from the old ones, and the failing one raises again where read."""
    h = numpy.arange(6, dtype=numpy.int64)
    a = tnp.array(h)
    a[0] = 1
    numpy.asarray(a)  # evaluated: the new buffer is a's own
    e = tnp.array(numpy.array([-1, 2, 3, 4, 5, 6]))[::1] * 1
    a[1:] = a[1:] + 1
    p = a ** e  # negative exponent: raises when it runs
    with pytest.raises(ValueError, match="negative integer powers"):
        numpy.asarray(p)
    h[0] = 1
    h[1:] = h[1:] + 1
    numpy.testing.assert_array_equal(numpy.asarray(a), h)
    with pytest.raises(ValueError, match="negative integer powers"):
        numpy.asarray(p)


def test_later_reader_in_same_graph():
    """A value evaluated along (a few ops past the graph) reads the first write's result after
    the second write runs: the second write copies."""
    h = numpy.arange(12.0).reshape(3, 4)
    a = tnp.array(h)
    a[0] = 1.0
    numpy.asarray(a)  # evaluated: the new buffer is a's own
    a[0] = 5.0
    old = a * 1
    a[1:] = 0.0
    got = numpy.asarray(a)
    h[0] = 5.0
    want_old = h * 1
    h[1:] = 0.0
    numpy.testing.assert_array_equal(got, h)
    numpy.testing.assert_array_equal(numpy.asarray(old), want_old)
