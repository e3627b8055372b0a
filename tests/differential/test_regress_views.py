"""Issue 17, items 6, 7, 10, 14a, 22: slices, views and writes through them as NumPy has them
(negative-step slices that start before element 0, writes through `.view(dtype)`, F-order
creations, NumPy scalars written into arrays, namedtuple values)."""
from __future__ import annotations

import collections
import itertools

import numpy
import pytest

import tracer.numpy as np
from tracer.ir.config import context
from regress import modes, quiet, same  # noqa: F401  (quiet: an autouse fixture)



# ------------------------------------------------------------------ item 6: negative steps

@modes()
def test_negative_step_slice_starting_before_zero_is_empty(mode):
    with context(**mode):
        same(lambda m: m.arange(3.0)[-5::-1])
        same(lambda m: m.arange(3.0)[-5::-1] + 1)
        same(lambda m: m.arange(12.0).reshape(3, 4)[:, -9:-1:-2] * 2)
        same(lambda m: m.arange(12.0).reshape(3, 4)[-4::-1, 1:].sum(axis=0))


def _write(m, key, shape=(2, 3)):
    a = m.arange(6.0).reshape(shape)
    a[key] = 5
    return a


@modes()
def test_write_through_negative_step_slice_before_zero_changes_nothing(mode):
    with context(**mode):
        same(lambda m: _write(m, slice(-3, None, -1)))
        same(lambda m: _write(m, (slice(None), slice(-7, None, -2))))
        same(lambda m: _write(m, slice(-4, None, -1), (6,)))
        same(lambda m: _write(m, slice(-1, -9, -1), (6,)))  # reaches element 0


def _slice_program(m, s0, s1):
    """A read, a write and a write through a view of a view, with these two slices."""
    a = m.arange(12.0).reshape(3, 4)
    r = a[s0, s1][::-1] + 1
    a[s0, s1] = -1
    v = a[:, s0]
    v[s1] = 7
    return r, a


@modes()
def test_every_slice_reads_and_writes_as_numpy(mode):
    ends = [None, -5, -2, -1, 0, 2, 5]
    slices = [slice(a, b, c) for a, b, c in itertools.product(ends, ends, [None, 2, -1, -3])]
    with context(**mode):
        for s0, s1 in zip(slices, slices[::-7]):
            same(lambda m: _slice_program(m, s0, s1))


# ------------------------------------------------------------------ item 7: .view(dtype)

@modes()
def test_write_through_dtype_view_reaches_the_base(mode):
    def zero_halves(m):
        z = m.ones(4, dtype=m.float32)
        z.view(m.int16)[...] = 0
        return z

    def assign_self(m):
        z = m.ones(4, dtype=m.float32)
        y = z.view(m.int32)
        y[:] = z
        return z, y

    def through_slice_of_view(m):
        z = m.arange(6, dtype=m.float32).reshape(2, 3)
        v = z.view(m.int16)
        v[:, 1::4] = 1
        return z, v, v.dtype, v.shape

    def wider_view_of_columns(m):
        z = m.zeros((2, 4), m.float32)
        w = z[:, :2].view(m.float64)
        w += 1.5
        return z, w, w.shape

    def transposed_same_size(m):
        z = m.arange(6.0).reshape(2, 3)
        v = z.T.view(m.int64)
        v[0] = 7
        return z, v, v.flags.c_contiguous, v.flags.f_contiguous

    with context(**mode):
        for fn in (zero_halves, assign_self, through_slice_of_view, wider_view_of_columns,
                   transposed_same_size):
            same(fn)


def test_dtype_view_errors_and_layout_are_numpy_s():
    same(lambda m: m.arange(6.0).reshape(2, 3).T.view(m.float32))  # last axis not contiguous
    same(lambda m: m.arange(3.0).view(m.float32).view(m.int64))
    same(lambda m: m.ones(3, m.int8).view(m.bool_))
    same(lambda m: m.arange(4.0).view().shape)
    for m in (numpy, np):
        a = m.arange(4.0)
        v = a.view()
        v[1] = 7
        assert v.base is a and not v.flags.owndata and a.view(a.dtype).base is a
        assert numpy.asarray(a).tolist() == [0.0, 7.0, 2.0, 3.0]
    for m in (numpy, np):
        z = m.ones((2, 4), m.float32)
        assert m.shares_memory(z, z.view(m.int16))
        assert not m.shares_memory(z[0], z.view(m.int16)[1])


# ------------------------------------------------------------------ item 10: F order

F_ORDER = {
    "zeros": lambda m: m.zeros((3, 4), order="F"),
    "ones": lambda m: m.ones((3, 4), order="F"),
    "empty": lambda m: m.empty((3, 4), order="F"),
    "full": lambda m: m.full((3, 4), 2.0, order="F"),
    "array_list": lambda m: m.array([[1, 2], [3, 4]], order="F"),
    "array_F_host": lambda m: m.array(numpy.ones((3, 4), order="F")),
    "asarray_F_host": lambda m: m.asarray(numpy.ones((3, 4), order="F")),
    "asarray_to_C": lambda m: m.asarray(numpy.ones((3, 4), order="F"), order="C"),
    "asarray_copy": lambda m: m.asarray(m.ones((3, 4), order="F"), m.float32, copy=True),
    "array_lazy_F": lambda m: m.array(m.ones((3, 4)), order="F"),
    "copy_K": lambda m: m.copy(m.ones((3, 4), order="F")),
    "copy_F": lambda m: m.copy(m.ones((3, 4)), order="F"),
    "method_copy_F": lambda m: m.ones((3, 4)).copy(order="F"),
    "method_copy_C": lambda m: m.ones((3, 4), order="F").copy(),
    "astype_K": lambda m: m.ones((3, 4), order="F").astype(m.float32),
    "zeros_like": lambda m: m.zeros_like(m.ones((3, 4), order="F")),
    "full_like_C": lambda m: m.full_like(m.ones((3, 4), order="F"), 3, order="C"),
    "row": lambda m: m.ones((1, 4), order="F"),
    "lowercase": lambda m: m.zeros((3, 4), order="f"),
    "T": lambda m: m.ones((3, 4), order="F").T,
    "K_of_transposed": lambda m: m.ones((2, 3, 4)).transpose(1, 0, 2).copy(order="K"),
}


@pytest.mark.parametrize("name", F_ORDER)
def test_fortran_order_creation_has_numpy_s_flags(name):
    def flags(m):
        a = F_ORDER[name](m)
        return (m.isfortran(a), a.flags.f_contiguous, a.flags.c_contiguous, a.flags["FNC"],
                a.reshape(-1, order="A").flags.owndata, a.ravel(order="K"))
    same(flags)


@pytest.mark.parametrize("order", ["K", "A", "X"])
def test_creation_refuses_an_order_as_numpy(order):
    same(lambda m: m.zeros((3, 4), order=order))


# ------------------------------------------------------------------ items 14a and 22: values

@pytest.mark.parametrize("value", [numpy.uint8(200), numpy.int64(-300), numpy.float64("nan"),
                                   numpy.float32(3.7), numpy.int8(-3), numpy.float64(1e300)],
                         ids=repr)
@pytest.mark.parametrize("key", [Ellipsis, 0, slice(1, None)], ids=repr)
def test_numpy_scalar_written_converts_as_one_element(key, value):
    def write(m):
        a = m.zeros(3, m.int8)
        a[key] = value
        return a
    same(write)


def test_numpy_scalar_scattered_or_0d_array_wraps_as_numpy():
    def scatter(m):
        a = m.zeros(3, m.int8)
        a[[0, 1]] = numpy.uint8(200)
        a[2:] = numpy.array(200, numpy.uint8)
        return a
    same(scatter)


def test_namedtuple_value_assigns_its_fields():
    point = collections.namedtuple("point", "x y")

    def write(m):
        p = m.zeros((3, 2))
        p[0] = point(1.0, 2.0)
        p[1:] = [point(3.0, 4.0), point(5.0, m.float64(6.0))]
        return p, m.array([point(1, 2)])
    same(write)


RAVEL_CASES = [lambda m: m.arange(5)[::-1], lambda m: m.arange(12).reshape(3, 4)[::-1, ::2],
               lambda m: m.arange(12).reshape(3, 4).T, lambda m: m.arange(12).reshape(3, 4)[:, :2],
               lambda m: m.arange(5)[::2], lambda m: m.arange(12).reshape(2, 3, 2).transpose(2, 0, 1)]


@pytest.mark.parametrize("order", "CFAK")
@pytest.mark.parametrize("case", range(len(RAVEL_CASES)))
def test_ravel_is_a_view_only_where_numpys_is(case, order):
    a, b = RAVEL_CASES[case](numpy), RAVEL_CASES[case](np)
    ra, rb = a.ravel(order), b.ravel(order)
    assert numpy.shares_memory(ra, a) == np.shares_memory(rb, b)
    ra[...] = -1
    rb[...] = -1
    numpy.testing.assert_array_equal(numpy.asarray(b), a)
    numpy.testing.assert_array_equal(numpy.asarray(rb), ra)


@modes("small", "compiled")
def test_ravel_of_a_view_with_a_negative_stride_on_a_length_one_axis_is_a_view(mode):
    """NumPy's contiguity ignores length-1 axes' strides, negative ones too, so ravel gives a
    view and a write through it reaches the base (fuzzer seed 9808026: v1[4::-2, :].ravel())."""
    def prog(m):
        out = []
        for pick in (lambda a: a[4::-2, :], lambda a: a[::-1, :1][:1], lambda a: a[:, ::-1][:1],
                     lambda a: a.ravel()[::-1][:1], lambda a: a.ravel()[::-1]):
            b = m.array(numpy.arange(6, dtype="uint8").reshape(2, 3))
            r = pick(b).ravel()
            r *= r[..., ::-1]
            out.append(b)
        return m.stack(out)
    with context(**mode):
        same(prog)
