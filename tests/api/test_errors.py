"""User errors: NumPy's exception type (and message, where tracer reproduces it), raised while
tracing, before anything is evaluated, with the traceback ending at the user's own line.

Each case is `f(m)` run once with numpy and once with tracer.numpy on inputs that are already
lazy arrays (made outside the measured call), so nothing but the failing call can evaluate.
"""
from __future__ import annotations

import os
import traceback

import numpy
import pytest

import tracer
import tracer.numpy as tnp
from tracer.store import flush

OUR_PACKAGES = tuple(os.sep + p + os.sep for p in ("tracer", "ir", "opt", "cuda_kernels"))
NUMPYS = os.path.dirname(numpy.__file__) + os.sep  # adaptive laziness raises from NumPy's code


def user_frames(excinfo):
    """Traceback frames outside tracer's own packages and NumPy's."""
    return [f for f in traceback.extract_tb(excinfo.tb)
            if not any(p in f.filename for p in OUR_PACKAGES) and
            not f.filename.startswith(NUMPYS)]


def compare(case, same_message=True):
    """Run case(numpy, inputs) and case(tnp, lazy inputs); both must raise alike."""
    fn, make = case
    with pytest.raises(Exception) as want:
        fn(numpy, *make(numpy))
    flush()  # earlier tests' pending values: an eager in-place write would compute them first
    args = make(tnp)
    ev = tracer.stats().evaluations
    with pytest.raises(Exception) as got:
        fn(tnp, *args)
    assert tracer.stats().evaluations == ev, "evaluated before raising"
    assert type(got.value) is type(want.value), (got.value, want.value)
    if same_message:
        assert str(got.value) == str(want.value)
    last = user_frames(got)[-1]   # the case's own lambda: the user's line
    assert (last.filename, last.lineno) == (__file__, fn.__code__.co_firstlineno), last
    return got


def ones(*shapes, dtype=float):
    return lambda m: [m.ones(s, dtype=dtype) for s in shapes]


# (fn, inputs, NumPy's message reproduced exactly)
CASES = {
    # broadcasting
    "add_shapes": (lambda m, a, b: a + b, ones((3, 4), (5,)), True),
    "mul_3d": (lambda m, a, b: a * b, ones((2, 3, 4), (3, 1, 5)), True),
    "ufunc_fn": (lambda m, a, b: m.maximum(a, b), ones((3, 4), (3,)), True),
    "comparison": (lambda m, a, b: a < b, ones((2,), (3,)), True),
    "where_shapes": (lambda m, a, b: m.where(a > 0, a, b), ones((3,), (4,)), True),
    "inplace_broadcast": (lambda m, a, b: a.__iadd__(b), ones((4,), (3, 4)), True),
    "out_shape": (lambda m, a, b: m.add(a, 1, out=b), ones((3, 4), (4,)), True),
    "where_kw_shape": (lambda m, a, b: m.add(a, 1, out=a, where=b > 0), ones((2, 3), (4,)),
                       True),
    "broadcast_to": (lambda m, a: m.broadcast_to(a, (2, 4)), ones((3,)), True),
    "broadcast_to_fewer_dims": (lambda m, a: m.broadcast_to(a, (3,)), ones((2, 3)), True),
    "broadcast_arrays": (lambda m, a, b: m.broadcast_arrays(a, b), ones((3,), (4,)), False),
    "setitem_shape": (lambda m, a, b: a.__setitem__(0, b), ones((2, 3), (4,)), True),
    "setitem_rows": (lambda m, a, b: a.__setitem__(slice(None), b), ones((2, 3), (3, 3)), True),
    # reshape
    "reshape": (lambda m, a: a.reshape(4, 2), ones(6), True),
    "reshape_unknown": (lambda m, a: a.reshape(-1, 4), ones(6), True),
    "reshape_two_unknown": (lambda m, a: a.reshape(-1, -1), ones(6), True),
    "reshape_fn": (lambda m, a: m.reshape(a, (5,)), ones((2, 3)), True),
    "reshape_order": (lambda m, a: a.reshape(6, order="X"), ones((2, 3)), True),
    "reshape_order_K": (lambda m, a: a.reshape(6, order="K"), ones((2, 3)), True),
    # axes
    "sum_axis": (lambda m, a: a.sum(axis=2), ones((2, 3)), True),
    "sum_negative_axis": (lambda m, a: m.sum(a, axis=-3), ones((2, 3)), True),
    "max_axis_tuple": (lambda m, a: m.max(a, axis=(0, 2)), ones((2, 3)), True),
    "duplicate_axis": (lambda m, a: m.sum(a, axis=(0, 0)), ones((2, 3)), True),
    "mean_axis": (lambda m, a: m.mean(a, axis=5), ones((2, 3)), True),
    "var_axis": (lambda m, a: m.var(a, axis=(1, -3)), ones((2, 3)), True),
    "argmax_axis": (lambda m, a: m.argmax(a, axis=2), ones((2, 3)), True),
    "concatenate_axis": (lambda m, a: m.concatenate([a, a], axis=1), ones(3), True),
    "stack_axis": (lambda m, a: m.stack([a, a], axis=3), ones(3), True),
    "expand_dims_axis": (lambda m, a: m.expand_dims(a, 3), ones(3), True),
    "squeeze_axis": (lambda m, a: m.squeeze(a, axis=2), ones((1, 3)), True),
    "squeeze_not_one": (lambda m, a: m.squeeze(a, axis=1), ones((1, 3)), True),
    "swapaxes": (lambda m, a: m.swapaxes(a, 0, 2), ones((1, 3)), True),
    "moveaxis": (lambda m, a: m.moveaxis(a, 0, 2), ones((1, 3)), True),
    "flip_axis": (lambda m, a: m.flip(a, 2), ones((1, 3)), True),
    # transpose
    "transpose_repeated": (lambda m, a: a.transpose(0, 0), ones((2, 3)), True),
    "transpose_length": (lambda m, a: m.transpose(a, (0, 1, 2)), ones((2, 3)), True),
    "transpose_out_of_range": (lambda m, a: m.transpose(a, (0, 2)), ones((2, 3)), True),
    # matmul
    "matmul_core": (lambda m, a, b: a @ b, ones((2, 3), (4, 2)), True),
    "matmul_vectors": (lambda m, a, b: a @ b, ones(3, 4), True),
    "matmul_mat_vec": (lambda m, a, b: m.matmul(a, b), ones((2, 3), 4), True),
    "matmul_vec_mat": (lambda m, a, b: m.matmul(a, b), ones(2, (3, 4)), True),
    "matmul_batch": (lambda m, a, b: m.matmul(a, b), ones((2, 2, 3), (3, 3, 4)), True),
    "matmul_scalar": (lambda m, a: m.matmul(a, 2.0), ones(3), True),
    "dot_aligned": (lambda m, a, b: m.dot(a, b), ones((2, 3), (2, 3)), True),
    "dot_vectors": (lambda m, a, b: m.dot(a, b), ones(3, 2), True),
    "imatmul_shape": (lambda m, a, b: a.__imatmul__(b), ones((2, 3), (3, 4)), True),
    "imatmul_vector": (lambda m, a, b: a.__imatmul__(b), ones((3, 3), 3), True),
    # indexing
    "index_out_of_bounds": (lambda m, a: a[2], ones((2, 3)), True),
    "index_negative_out_of_bounds": (lambda m, a: a[:, -4], ones((2, 3)), True),
    "setitem_out_of_bounds": (lambda m, a: a.__setitem__((0, 3), 1.0), ones((2, 3)), True),
    "too_many_indices": (lambda m, a: a[0, 0], ones(3), True),
    "too_many_with_slice": (lambda m, a: a[:, 1], ones(3), True),
    "two_ellipses": (lambda m, a: a[..., ...], ones(3), True),
    "float_index": (lambda m, a: a[1.0], ones(3), True),
    "string_index": (lambda m, a: a["x"], ones(3), True),
    "index_0d": (lambda m, a: a[0], lambda m: [m.asarray(1.0)], True),
    # dtypes
    "subtract_bools": (lambda m, a, b: m.subtract(a, b), ones(3, 3, dtype=bool), True),
    "bool_minus_op": (lambda m, a: a - True, ones(3, dtype=bool), True),
    "negative_bool": (lambda m, a: -a, ones(3, dtype=bool), True),
    "float_bitwise_and": (lambda m, a: a & 1, ones(3), True),
    "float_shift": (lambda m, a: a << a, ones(3), True),
    "float_invert": (lambda m, a: ~a, ones(3), True),
    "int_negative_power": (lambda m, a: a ** -1, ones(3, dtype=int), True),
    "int8_python_overflow": (lambda m, a: a + 1000, ones(3, dtype=numpy.int8), True),
    "uint8_negative": (lambda m, a: a + (-1), ones(3, dtype=numpy.uint8), True),
    "huge_python_int": (lambda m, a: a + 2**70, ones(3, dtype=int), True),
    "astype_safe": (lambda m, a: a.astype(m.int32, casting="safe"), ones(3), True),
    "out_casting": (lambda m, a, b: m.add(a, 1, out=b), lambda m: [m.ones(3),
                                                               m.zeros(3, dtype=int)], True),
    "inplace_casting": (lambda m, a: a.__iadd__(1.5), ones(3, dtype=int), True),
    "inplace_true_divide": (lambda m, a: a.__itruediv__(2), ones(3, dtype=int), True),
    "exp_out_int": (lambda m, a, b: m.exp(a, out=b), lambda m: [m.ones(3),
                                                             m.zeros(3, dtype=int)], True),
    "ufunc_bad_dtype": (lambda m, a: m.sqrt(a, dtype=m.int64), ones(3), True),
    # creation
    "zeros_negative": (lambda m: m.zeros(-1), lambda m: [], True),
    "zeros_float_shape": (lambda m: m.zeros(2.5), lambda m: [], True),
    "full_overflow": (lambda m: m.full(3, 1000, dtype=m.int8), lambda m: [], True),
    "arange_zero_step": (lambda m: m.arange(0, 10, 0), lambda m: [], True),
    # joining
    "concatenate_shapes": (lambda m, a, b: m.concatenate([a, b]), ones((2, 3), (2, 4)), True),
    "concatenate_ndim": (lambda m, a, b: m.concatenate([a, b]), ones((2, 3), 3), True),
    "concatenate_0d": (lambda m, a: m.concatenate([a, a]), lambda m: [m.asarray(1.0)], True),
    "concatenate_nothing": (lambda m: m.concatenate([]), lambda m: [], True),
    "stack_shapes": (lambda m, a, b: m.stack([a, b]), ones(2, 3), True),
    "stack_nothing": (lambda m: m.stack([]), lambda m: [], True),
    # reductions
    "max_of_empty": (lambda m, a: a.max(axis=1), ones((2, 0)), True),
    "argmax_of_empty": (lambda m, a: a.argmax(axis=1), ones((2, 0)), True),
    "min_of_empty": (lambda m, a: a.min(), ones(0), True),
    # conversions
    "len_0d": (lambda m, a: len(a), lambda m: [m.asarray(1.0)], True),
    "iter_0d": (lambda m, a: iter(a), lambda m: [m.asarray(1.0)], True),
    "float_of_array": (lambda m, a: float(a), ones(3), True),
    "int_of_array": (lambda m, a: int(a), ones(2), True),
    "bool_ambiguous": (lambda m, a: bool(a), ones(3), True),
    "bool_empty": (lambda m, a: bool(a), ones(0), True),
    "item_of_array": (lambda m, a: a.item(), ones(3), True),
    "item_out_of_bounds": (lambda m, a: a.item(7), ones(3), True),
    "index_of_float": (lambda m, a: [0, 1][a], lambda m: [m.asarray(1.0)], True),
    "hash": (lambda m, a: hash(a), ones(3), False),
    # calls
    "ufunc_argument_count": (lambda m, a: m.add(a), ones(3), True),
    "ufunc_unknown_keyword": (lambda m, a: m.add(a, 1, foo=1), ones(3), True),
    "clip_no_bounds_bool": (lambda m, a: m.clip(a > 0), ones(3), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_raises_like_numpy_while_tracing(name):
    fn, make, same_message = CASES[name]
    compare((fn, make), same_message)


def test_shape_mismatch_traceback_ends_at_the_users_line():
    a, b = tnp.ones((3, 4)), tnp.ones((5,))
    ev = tracer.stats().evaluations
    with pytest.raises(ValueError) as info:
        a + b
    assert tracer.stats().evaluations == ev
    mine = user_frames(info)
    assert mine[-1].filename == __file__ and mine[-1].line == "a + b"
    assert "operands could not be broadcast together with shapes (3,4) (5,)" in str(info.value)


def test_errors_inside_a_longer_lazy_program():
    x = tnp.ones((3, 4)) * 2
    y = x.sum(axis=0)                 # (4,)
    z = tnp.exp(y)[None, :] + x       # fine: (3, 4)
    ev = tracer.stats().evaluations
    with pytest.raises(ValueError) as info:
        z @ y[:3]                     # core dimension 4 != 3
    assert tracer.stats().evaluations == ev
    assert user_frames(info)[-1].line == "z @ y[:3]                     # core dimension 4 != 3"
    with pytest.raises(numpy.exceptions.AxisError) as info:
        z.mean(axis=(0, 2))
    assert isinstance(info.value, (ValueError, IndexError))   # AxisError's bases, as NumPy's
    assert user_frames(info)[-1].filename == __file__
    # the program still evaluates correctly afterwards
    numpy.testing.assert_allclose(numpy.asarray(z), numpy.full((3, 4), numpy.exp(6.0) + 2.0))


def test_error_state_is_clean_after_a_failed_write():
    a = tnp.zeros((2, 3), dtype=numpy.int8)
    with pytest.raises(OverflowError):
        a[0] = 300
    with pytest.raises(ValueError):
        a[0] = [1, 2]
    with pytest.raises(TypeError):
        a += 1.5
    a[1] = 7
    numpy.testing.assert_array_equal(numpy.asarray(a), [[0, 0, 0], [7, 7, 7]])


def test_axis_error_is_numpys_and_catchable_as_index_error():
    a = tnp.ones((2, 3))
    for call in (lambda: a.sum(axis=2), lambda: tnp.argmin(a, axis=-3),
                 lambda: tnp.expand_dims(a, 4), lambda: tnp.moveaxis(a, 3, 0)):
        with pytest.raises(numpy.exceptions.AxisError):
            call()
        with pytest.raises(IndexError):
            call()


@pytest.mark.lazy
def test_data_dependent_errors_raise_at_evaluation():
    """NumPy raises for an integer power with a negative exponent in the data: tracer can only
    know at evaluation, and must still raise (never return garbage)."""
    h = numpy.array([1, 2, 3])
    e = numpy.array([1, -1, 2])
    with pytest.raises(ValueError) as want:
        numpy.power(h, e)
    r = tnp.power(tnp.asarray(h), tnp.asarray(e) * 1)  # an exponent computed lazily
    with pytest.raises(ValueError) as got:
        numpy.asarray(r)
    assert str(got.value) == str(want.value)
