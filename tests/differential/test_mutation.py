"""Views and writes as NumPy users write them, run side by side in NumPy and tracer; every array
involved is compared afterwards."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as tnp


def pair(shape=(4, 6), dtype=numpy.float64):
    h = numpy.arange(numpy.prod(shape), dtype=dtype).reshape(shape)
    return h, tnp.asarray(h)


def same(t, h):
    got = numpy.asarray(t)
    assert got.shape == h.shape and got.dtype == h.dtype
    numpy.testing.assert_array_equal(got, h)


SCENARIOS = {
    "slice_assign_seen_by_base": lambda a: a[1:3].__setitem__(slice(None), 0),
    "write_through_T": lambda a: a.T.__setitem__(0, -1),
    "write_through_reshape_view": lambda a: a.reshape(3, 8).__setitem__((1, 2), 99),
    "strided_reversed": lambda a: a[::2, ::-1].__setitem__(Ellipsis, 7),
    "chained_views": lambda a: a[1:][::2].__setitem__((slice(None), 0), -5),
    "T_row": lambda a: a.T[0].__setitem__(slice(None), 3),
    "newaxis_view": lambda a: a[..., None].__setitem__((0, 0, 0), 42),
    "int_index_row": lambda a: a[1].__setitem__(slice(None), 8),
    "scalar_element": lambda a: a.__setitem__((2, 3), -1),
    "broadcast_value_row": lambda a: a.__setitem__(0, numpy.arange(6)),
    "broadcast_value_col": lambda a: a.__setitem__((slice(None), 0), 5),
    "fill": lambda a: a.fill(3),
    "flat_view_write": lambda a: a.ravel().__setitem__(slice(2, 5), 1),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_write_through_view(name):
    h, t = pair()
    SCENARIOS[name](h)
    SCENARIOS[name](t)
    same(t, h)


def test_views_of_the_same_base_see_each_others_writes():
    h, t = pair()
    hv, tv = h[1:3], t[1:3]
    hw, tw = h[:, 2], t[:, 2]
    hv[:] = -1
    tv[:] = -1
    same(tw, hw)
    hw += 100
    tw += 100
    same(tv, hv)
    same(t, h)


@pytest.mark.parametrize("op", ["__iadd__", "__imul__", "__isub__", "__ifloordiv__",
                                "__itruediv__"])
def test_inplace_on_view_and_base(op):
    h, t = pair()
    getattr(h[1:, ::2], op)(3)
    getattr(t[1:, ::2], op)(3)
    getattr(h, op)(2)
    getattr(t, op)(2)
    same(t, h)


def test_int_inplace_true_divide_raises_like_numpy():
    h, t = pair(dtype=numpy.int64)
    with pytest.raises(TypeError) as want:
        h += 1.5
    with pytest.raises(TypeError) as got:
        t += 1.5
    assert type(got.value) is type(want.value)
    same(t, pair(dtype=numpy.int64)[0])  # nothing was written


def test_ufunc_out_and_where():
    h, t = pair()
    hb, tb = h.copy(), t.copy()
    numpy.add(h, 1, out=hb)
    tnp.add(t, 1, out=tb)
    same(tb, hb)
    numpy.multiply(h[1:], 2, out=h[:-1])
    tnp.multiply(t[1:], 2, out=t[:-1])
    same(t, h)
    mask = h > 20
    numpy.subtract(h, 1000, out=h, where=mask)
    tnp.subtract(t, 1000, out=t, where=tnp.asarray(mask))
    same(t, h)


def test_write_after_evaluation_and_old_views():
    h, t = pair()
    hv, tv = h[2], t[2]
    tracer.evaluate(t)
    h[2, 1] = -7
    t[2, 1] = -7
    same(tv, hv)
    same(t, h)


def test_broadcast_view_is_read_only():
    _, t = pair((3,))
    b = tnp.broadcast_to(t, (4, 3))
    with pytest.raises(ValueError, match="read-only"):
        b[0, 0] = 1
    with pytest.raises(ValueError, match="read-only"):
        numpy.asarray(b)[0, 0] = 1


def test_reshape_of_non_contiguous_view_is_a_copy():
    h, t = pair()
    hr = h.T.reshape(-1)  # NumPy must copy here
    tr = t.T.reshape(-1)
    hr[0] = 1000
    tr[0] = 1000
    same(t, h)
    same(tr, hr)
    assert not numpy.shares_memory(hr, h)


def test_copy_is_independent():
    h, t = pair()
    hc, tc = h.copy(), t.copy()
    hc[0] = -1
    tc[0] = -1
    same(t, h)
    same(tc, hc)


def test_python_int_overflow_on_assignment():
    h, t = pair(dtype=numpy.int8)
    with pytest.raises(OverflowError):
        h[0, 0] = 300
    with pytest.raises(OverflowError):
        t[0, 0] = 300
    h[0, 0] = 3.7
    t[0, 0] = 3.7
    same(t, h)


def test_advanced_indexing_reads_and_writes_lazily():
    h, t = pair()
    fallbacks = tracer.stats().fallbacks
    r = t[[0, 2]]
    assert tracer.stats().fallbacks == fallbacks  # a lazy gather
    same(r, h[[0, 2]])
    r2 = t[[0, 2]]
    r2[0] = -1  # advanced indexing copies: the base is untouched
    same(t, h)
    h[h > 10] = 0
    t[t > 10] = 0
    assert tracer.stats().fallbacks == fallbacks
    same(t, h)


def test_numpy_asarray_of_lazy_is_read_only_snapshot():
    h, t = pair()
    snap = numpy.asarray(t)
    t[0, 0] = 55
    assert snap[0, 0] == h[0, 0]  # the snapshot is not aliased to later writes
    with pytest.raises(ValueError):
        snap[0, 0] = 1
