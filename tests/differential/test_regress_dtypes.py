"""Issue 17 items 11-16 and 19b: NEP 50 dtypes, casting and NumPy's exceptions at the user's
line, in the small-graph and compiled modes, against NumPy."""
from __future__ import annotations

import traceback
import warnings

import numpy
import pytest

import tracer.numpy as np
from tracer.ir.config import context


@pytest.fixture(autouse=True, params=["small_graph", "compiled"])
def mode(request):
    small = 4096 if request.param == "small_graph" else 0
    with context(small_graph=small, compile_mode="sync"):
        yield request.param


def outcome(fn, m):
    """fn(m)'s value (as a NumPy array) or its exception's type and message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = numpy.asarray(fn(m))
    except Exception as e:
        return type(e), str(e)
    return r.tolist(), r.dtype, r.shape


def same(fn):
    assert outcome(fn, np) == outcome(fn, numpy)


def raises_at_call(fn):
    """fn(np) raises NumPy's exception (type and message) before anything is read."""
    with pytest.raises(Exception) as want:
        fn(numpy)
    with pytest.raises(Exception) as got:
        fn(np)
    assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))
    return got


def line_of(marker: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if line.rstrip().endswith("# " + marker))


# ------------------------------------------------------------------ 11: power

@pytest.mark.parametrize("fn", [
    lambda m: m.array([1, 2, 3], m.int32) ** 2.0,
    lambda m: m.array([1, 2], m.int8) ** 1.0,
    lambda m: m.array([True, False]) ** 2.0,
    lambda m: m.power(m.array([True, False]), 2),
    lambda m: m.power(m.array([True, False]), 1),
    lambda m: m.array([1, 2], m.int8) ** 2,
    lambda m: m.array([1.5, -2], m.float32) ** 2,
    lambda m: m.array([1.5, -2], m.float32) ** 1,
], ids=["int32_float2", "int8_float1", "bool_float2", "power_bool_2", "power_bool_1",
        "int8_2", "float32_2", "float32_1"])
def test_power_by_a_python_scalar_follows_nep50_not_the_square_shortcut(fn):
    same(fn)


def test_inplace_power_of_an_int_array_by_a_float_raises_ufunc_type_error():
    def fn(m):
        a = m.array([1, 2, 3])
        a **= 2.0
    raises_at_call(fn)


# ------------------------------------------------------------------ 12: clip

@pytest.mark.parametrize("fn", [
    lambda m: m.clip(m.array([1, 2], m.int8), -2.5, m.array(-1., m.float32)),
    lambda m: m.clip(m.array([True, False]), 0, m.array([1, 2], m.int8)),
    lambda m: m.clip(m.array([1, 2], m.int8), -2.5, 1.5),
    lambda m: m.clip(m.array([1, 200], m.uint8), m.array(3, m.int8), 300),
], ids=["float32_bound", "bool_int8_bound", "weak_floats", "one_bound_dropped"])
def test_clip_promotes_the_array_and_both_bounds_together(fn):
    same(fn)


# ------------------------------------------------------------------ 13: scalars are immutable

def test_augmented_assignment_to_an_element_casts_back_into_the_array():
    def fn(m):
        a = m.array([1, 2, 3])
        a[1] += 1.5
        return a
    same(fn)


def test_inplace_op_on_a_scalar_result_makes_a_new_scalar():
    def fn(m):
        a = m.array([1.0, 2.0, 3.0])
        s, r = a[1], a.sum()
        s0, r0 = s, r
        s += 1
        r *= 2
        return [s0, s, r0, r, a[1]]
    same(fn)


def test_inplace_op_on_a_0d_array_writes_it():
    def fn(m):
        z, b, c = m.zeros(()), m.array(1.0), m.array(2.0).copy()
        v = m.zeros(3)[..., 1]
        aliases = (z, b, c)
        for x in (z, b, c, v):
            x += 1
        return [*aliases, v]
    same(fn)


# ------------------------------------------------------------------ 14: exception types

@pytest.mark.parametrize("fn", [
    lambda m: m.logical_or(m.array([1, 0]), 2**70),
    lambda m: m.logical_and(m.array([1, 0], m.uint8), 2**63),
    lambda m: m.add(m.array([1, 0], m.int8), 2**70),
    lambda m: m.add(m.array([1.0], m.float32), 2**1100),
    lambda m: m.array([1, 2], m.uint8) ** -1,
    lambda m: m.array([1, 2], m.int8) ** -1,
    lambda m: m.array([1, 2]) ** m.array([2, -1]),
], ids=["logical_or_2_70", "logical_and_2_63", "add_int8_2_70", "add_float32_2_1100",
        "uint8_power_minus_1", "int8_power_minus_1", "power_known_negative_exponent"])
def test_scalar_conversion_and_data_errors_raise_numpy_exception_at_the_call(fn):
    raises_at_call(fn)


def test_negative_power_of_an_empty_int_array_is_empty():
    same(lambda m: m.zeros(0, int) ** -1)
    same(lambda m: m.zeros((0, 2), int) ** m.array([-1, 1]))


def test_inplace_divide_checks_casting_before_shapes():
    def fn(m):
        a = m.array([1, 2, 3])
        a /= m.array([1.0, 2.0])
    raises_at_call(fn)


@pytest.mark.parametrize("dt, v", [("int8", 2**31), ("int8", 300), ("uint8", -1),
                                   ("float16", -999.9), ("float32", 0.1), ("int64", 2**63),
                                   ("int8", 2**64)])
def test_ufunc_at_reads_a_python_scalar_as_a_numpy_array_not_a_weak_scalar(dt, v):
    def fn(m):
        a = m.full(3, 1000 if dt == "float16" else 3, dt)
        m.add.at(a, [0, 2, 2], v)
        return a
    same(fn)


# ------------------------------------------------------------------ 15: axes and sizes

@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "any", "all", "argmax",
                                  "argmin", "mean"])
@pytest.mark.parametrize("axis", [0, -1, (0,), 1, ()])
def test_reductions_of_a_0d_array_take_axis_0_and_minus_1_as_numpy_does(name, axis):
    same(lambda m: getattr(m, name)(m.array(5.0), axis=axis))
    same(lambda m: getattr(m, name)(m.array(5.0), axis=axis, keepdims=True))


@pytest.mark.parametrize("shape", [2**64, (0, 2**63 - 1), (2**40, 2**40)])
def test_creation_of_an_impossible_shape_raises_value_error(shape):
    for fn in (lambda m: m.zeros(shape), lambda m: m.full(shape, 300, m.int8)):
        raises_at_call(fn)


def test_creation_bigger_than_memory_raises_memory_error_at_once():
    try:
        numpy.empty(10**13)
    except MemoryError:
        pass
    else:
        pytest.skip("this machine's OS grants 72.8 TiB of address space")
    for fn in (lambda m: m.zeros(10**13), lambda m: m.full(10**13, True),
               lambda m: m.ones((10**7, 10**6))):
        raises_at_call(fn)


# ------------------------------------------------------------------ 16: data-dependent errors

@pytest.mark.parametrize("fn", [
    lambda m: m.add.at(m.zeros(3), m.array([0, 3]), 1),
    lambda m: m.zeros(3)[m.array([[0], [3]])],
    lambda m: m.zeros(3).__setitem__(m.array([0, 3]), 1),
    lambda m: m.zeros(12).put(m.array([[1, 40]]), 5),
    lambda m: m.choose(m.array([0, 3]), [m.zeros(2), 1, 2]),
], ids=["add_at", "getitem", "setitem", "put", "choose"])
def test_a_realized_index_out_of_bounds_raises_at_the_call(fn):
    raises_at_call(fn)


@pytest.mark.lazy
def test_a_computed_out_of_bounds_index_raises_at_read_naming_the_at_line():
    c = np.zeros(3)
    i = np.arange(3) + 1
    np.add.at(c, i, 1)  # at-line
    with pytest.raises(IndexError, match="index 3 is out of bounds") as got:
        numpy.asarray(c)
    assert any(f"{__file__}:{line_of('at-line')}" in n for n in got.value.__notes__)


@pytest.mark.lazy
def test_a_computed_negative_exponent_raises_at_read_naming_the_power_line():
    x = np.arange(3)
    y = x ** (x - 1)  # power-line
    with pytest.raises(ValueError, match="negative integer powers") as got:
        numpy.asarray(y)
    assert any(f"{__file__}:{line_of('power-line')}" in n for n in got.value.__notes__)
    frames = [f for f in traceback.extract_tb(got.tb) if f.filename == __file__]
    assert frames[-1].lineno == line_of("power-line")


# ------------------------------------------------------------------ 19b: positional out

def test_ufunc_output_passed_positionally_is_written():
    def fn(m):
        z, w = m.arange(3.0), m.zeros(3)
        assert m.multiply(z, z, z) is z
        assert m.add(z, 1, out=(w,)) is w
        return [z, w, m.sqrt(z, None)]
    same(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.add(m.zeros(2), 1, m.zeros(2), m.zeros(2)),
    lambda m: m.add(m.zeros(2), 1, m.zeros(2), out=m.zeros(2)),
    lambda m: m.add(m.zeros(2), 1, (m.zeros(2),)),
    lambda m: m.add(m.zeros(2)),
], ids=["too_many", "both", "tuple_positional", "too_few"])
def test_ufunc_positional_out_errors_match_numpy(fn):
    raises_at_call(fn)
