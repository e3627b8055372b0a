"""Issue 17, fuzzer findings B3, C, D, E, F, G: writes as NumPy does them (an element write is
NumPy's scalar read-modify-write, boolean-mask and advanced-index writes, ufunc.at, and 0-d
arrays that are arrays, not scalars)."""
from __future__ import annotations

import warnings

import numpy

import tracer
import tracer.numpy as np
from tracer.ir.config import context
from regress import modes, quiet  # noqa: F401  (quiet: an autouse fixture)
from tracer.array import stands_for_scalar



def outcome(fn, m):
    """fn(m)'s result as NumPy values (dtype, shape, bits, and whether it is an array) or its
    exception (type and message)."""
    try:
        r = fn(m)
    except Exception as e:  # noqa: BLE001  (the exception is the result compared)
        return type(e).__name__, str(e)
    arr = isinstance(r, (tracer.ndarray, numpy.ndarray)) and not (
        isinstance(r, tracer.ndarray) and stands_for_scalar(r))
    x = numpy.asarray(r)
    return arr, x.dtype, x.shape, x.tobytes()


def same(fn):
    assert outcome(fn, np) == outcome(fn, numpy)


def _host(m, values, dtype=None):
    return m.array(numpy.array(values, dtype))


# ------------------------------------------------------------------ C: element writes

def _op_element(m, values, dtype, key, op, v):
    a = _host(m, values, dtype)
    t = a[key]
    a[key] = op(t, v)
    return a


@modes("small", "compiled")
def test_element_read_modify_write_checks_the_value_as_numpy_scalar_setitem(mode):
    mul, sub = (lambda x, y: x * y), (lambda x, y: x - y)
    with context(**mode):
        same(lambda m: _op_element(m, 200, None, (), mul, float("nan")))   # ValueError
        same(lambda m: _op_element(m, -3, "int8", (), sub, numpy.uint8(200)))  # OverflowError
        same(lambda m: _op_element(m, [1, 2], None, 0, mul, 1e308))
        same(lambda m: _op_element(m, [[3], [2**63 - 1]], None, (-1, -1), mul,
                                   numpy.float16(-1.5)))
        same(lambda m: _op_element(m, [1, 2], "int8", 1, mul, 100.0))  # in range: no error
        same(lambda m: _op_element(m, [1, 2], "uint8", 1, mul, -3.0))  # uint wraps
        same(lambda m: _op_element(m, [1, 2], "int8", 1, mul, 2))


@modes("small", "compiled")
def test_element_augmented_assignment_statement_checks_the_value(mode):
    def prog(m):
        a = _host(m, [1, 2])
        a[0] *= 1e308
        return a

    def inrange(m):
        a = _host(m, [1, 2], "int16")
        a[1] += 7.9
        a[0] -= 1
        return a
    with context(**mode):
        same(prog)
        same(inrange)


@modes("small", "compiled")
def test_element_writes_of_computed_values_in_a_loop_give_numpy_values(mode):
    def prog(m):
        a = m.arange(4, dtype="int8")
        for i in range(4):
            a[i] *= 3
            a[i] += a[i - 1]
        return a
    with context(**mode):
        same(prog)


def _set_element(m, a, key, v):
    a[key] = v
    return a


@modes("small", "compiled")
def test_sequence_into_one_element_raises_numpy_exception_by_target_dtype(mode):
    def whole(m):
        v = m.arange(4, dtype="complex128")
        v[3] = v  # TypeError: only 0-dimensional arrays ...
        return v

    def product(m):
        v = m.array(numpy.complex64(1j))
        v[()] *= m.array(numpy.array([[2, 1, 2]], "uint8"))
        return v
    with context(**mode):
        same(whole)
        same(product)
        same(lambda m: _set_element(m, m.zeros(3, "int8"), 0, m.arange(2)))  # ValueError
        same(lambda m: _set_element(m, m.zeros(3, "int8"), 0, m.arange(1)))


@modes("small", "compiled")
def test_size_one_array_into_one_bool_element_is_allowed(mode):
    def prog(m):
        v = _host(m, [True])
        v[-1] = v.view("bool")
        return v
    with context(**mode):
        same(prog)


@modes("small", "compiled")
def test_zero_d_array_into_one_element_casts_but_scalar_checks(mode):
    with context(**mode):
        same(lambda m: _set_element(m, m.zeros(2, "int8"), 0, m.array(200, "int16")))
        same(lambda m: _set_element(m, m.zeros(2, "int8"), 0, m.array([200], "int16")[0]))


@modes("small", "compiled")
def test_scalar_standing_value_written_into_a_region_checks_like_numpy_scalar(mode):
    def prog(m):
        v8 = m.array(1e308)[None][0]
        v5 = m.zeros((2, 3), "int64")
        v5[:, ...] = v8
        return v5
    with context(**mode):
        same(prog)
        same(lambda m: _set_element(m, m.zeros(2, "int8"), slice(None), m.array(3.5)[None][0]))


# ------------------------------------------------------------------ D: mask writes

@modes("small", "compiled")
def test_mask_of_another_shape_gives_numpys_shape_mismatch(mode):
    def prog(m, mask_shape, value_shape):
        a = m.zeros((2, 3))
        a[m.asarray(numpy.zeros(mask_shape, bool))] = m.ones(value_shape)
        return a
    with context(**mode):
        for mask_shape in [(2, 0), (0, 0)]:
            for value_shape in [(1, 3), (2, 3)]:
                same(lambda m: prog(m, mask_shape, value_shape))


@modes("small", "compiled")
def test_mask_over_all_axes_refuses_a_value_of_ndim_above_one(mode):
    def fits(m):
        v1 = _host(m, [[2], [6]], "uint64")[1:2:1, :]
        v1[v1 > 0] = v1
        return v1

    def mismatch(m):
        v0 = _host(m, [[0, 8, 8], [2, 4, 3]], "uint8")
        v1 = m.arctan(v0)
        v0[v1 > 0] = v1
        return v0

    def first_axis(m):
        a = m.zeros((2, 3))
        a[numpy.array([True, False])] = m.ones((1, 3))
        return a
    with context(**mode):
        same(fits)
        same(mismatch)
        same(first_axis)


# ------------------------------------------------------------------ E: advanced index, None

@modes("small", "compiled")
def test_write_through_advanced_index_followed_by_none(mode):
    def inplace(m):
        a = _host(m, [1, 2, 3])
        a[[0, 1], None] -= 1
        return a

    def flat(m):
        a = _host(m, [1, 2, 3])
        a[[0, 1], None] = [5, 6]  # NumPy: shape mismatch
        return a
    with context(**mode):
        same(inplace)
        same(flat)


# ------------------------------------------------------------------ F, B3: ufunc.at

@modes("small", "compiled")
def test_ufunc_at_refuses_value_with_extra_leading_unit_axis(mode):
    def prog(m):
        v3 = _host(m, [[4.5, -1.8, 4.1]], "float32")
        v5 = v3[-1, :4:1]
        m.subtract.at(v5, [0, -1, -1], v3)
        return v5
    with context(**mode):
        same(prog)


@modes("small", "compiled")
def test_ufunc_at_complex_value_into_real_array_turns_negative_zero_positive(mode):
    def prog(m):
        v0 = _host(m, [[-0.0, -0.3, -5.5]], "float16")
        m.add.at(v0, [-1, -1], numpy.complex64(1j))
        return v0
    with context(**mode):
        same(prog)


# ------------------------------------------------------------------ G: 0-d arrays

@modes("small", "compiled")
def test_ellipsis_view_of_zero_d_array_is_written_in_place(mode):
    def mul(m):
        v0 = _host(m, 2.2)
        v6 = v0[...]
        v6 *= 2.5e-3
        return v0

    def div(m):
        v1 = _host(m, -1, "int32")[...]
        v1 /= 2**63 - 1  # UFuncTypeError (same_kind)
        return v1
    with context(**mode):
        same(mul)
        same(div)
        same(lambda m: _host(m, 2.0)[...])


@modes("small", "compiled")
def test_zero_d_where_result_is_an_array(mode):
    def div(m):
        v0 = _host(m, -1, "int32")
        v1 = m.where(v0 > 0, v0, v0)
        v1 /= v1
        return v1

    def floordiv(m):
        v0 = _host(m, 1.5)
        v1 = m.where(v0 > 0, v0, v0)
        v1 //= v1
        return v1
    with context(**mode):
        same(div)
        same(floordiv)


@modes("small", "compiled")
def test_zero_d_scalar_results_still_rebind(mode):
    def prog(m):
        a = _host(m, [1, 2], "int32")
        s = a[1]
        s += 1.5
        u = m.add(m.array(1), 1)
        u /= 2
        return a, s, u
    with context(**mode):
        assert outcome(lambda m: prog(m)[0], np) == outcome(lambda m: prog(m)[0], numpy)
        assert outcome(lambda m: prog(m)[1], np) == outcome(lambda m: prog(m)[1], numpy)
        assert outcome(lambda m: prog(m)[2], np) == outcome(lambda m: prog(m)[2], numpy)


@modes("small", "compiled")
def test_no_op_views_of_zero_d_array_write_through_and_of_scalar_do_not(mode):
    def of_array(m, view):
        a = _host(m, 2.0)
        v = view(a)
        v *= 3
        return a

    def of_scalar(m, view):
        s = _host(m, [2.0])[0]
        v = view(s)
        v *= 3
        return s, v
    views = [lambda x: x.reshape(()), lambda x: x.T, lambda x: x.view(),
             lambda x: x.transpose(), lambda x: x[...]]
    with context(**mode):
        for view in views:
            same(lambda m: of_array(m, view))
            same(lambda m: of_scalar(m, view)[0])
            same(lambda m: of_scalar(m, view)[1])


@modes("small", "compiled")
def test_computed_scalar_into_an_int_element_is_checked_at_the_line(mode):
    def nan_from_a_view(m):
        v0 = m.array(numpy.array(2**63 - 1, "int64"))
        v0[()] += v0.view("float64")
        return v0

    def nan_after_a_write(m):
        v0 = m.array(numpy.array([[4], [-3]], "int8"))
        v0[-5:1:-1, 0] = True
        v0[2::-2, 0][0] *= float("nan")
        return v0

    def out_of_range(m):
        v0 = m.array(numpy.array([[4], [-3]], "int8"))
        v0[0, 0] = (v0 * 2)[1, 0] - numpy.uint8(200)
        return v0

    def in_range(m):
        a = m.arange(5)
        a[0] = (a * 1.5)[3]
        return a
    with context(**mode):
        for prog in (nan_from_a_view, nan_after_a_write, out_of_range, in_range):
            same(prog)


@modes("small", "compiled")
def test_fallback_writes_back_only_what_numpy_wrote(mode):
    def at_with_a_view_of_itself(m):  # the view's unchanged copy must not undo the write
        v0 = m.array(numpy.array([[-2**63, 2, -5]], "int64"))
        m.subtract.at(v0, [-1, -1], v0.view("uint64"))
        return v0
    with context(**mode), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(at_with_a_view_of_itself)


@modes("small", "compiled")
def test_clip_of_a_0d_array_is_a_scalar_in_writes(mode):
    def prog(m):
        v0 = m.zeros((2, 3), "int16")
        v1 = m.array(numpy.array(-numpy.inf))
        v0[-1, :2] = m.clip(v1, -0.0, v1[()])  # a scalar -inf: OverflowError, as NumPy
        return v0

    def empty_target(m):  # an object value into nothing converts nothing
        v3 = m.zeros((2, 3), "int64")
        v3[-1:0, :2:-1] = m.array(2**64)
        return v3
    with context(**mode):
        same(prog)
        same(empty_target)


@modes("small", "compiled")
def test_an_empty_value_drops_its_leading_axes_in_an_index_write(mode):
    """NumPy writes an empty value into an empty index result whatever its leading axes
    (fuzzer seed 9801739: `v0[v1 > 0] = v1` with v1 of shape (2, 0)); a non-empty one must
    still broadcast."""
    def mask(m):
        v0 = m.array(numpy.array([[-2**63], [7]], "int64"))
        v1 = m.array(numpy.zeros((2, 0), "uint8"))
        v0[v1 > 0] = v1
        return v0

    def index(shape):
        def prog(m):
            a = m.arange(6)
            a[m.array(numpy.array([], int))] = numpy.zeros(shape)
            return a
        return prog
    with context(**mode):
        for prog in (mask, index((2, 3, 0)), index((3, 1)), index((0, 5))):
            same(prog)
