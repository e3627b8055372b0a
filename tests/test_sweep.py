"""A sweep generated from the op registry: every elementwise ufunc and every reduction, for every
supported dtype, against NumPy on the cpu backend: values, dtype and shape, with NaN, +-inf, -0.0,
integer extremes (wrap-around), division by zero, empty and 0-d inputs.

One evaluation per (op, dtype) covers every special value at once (the inputs are the cross
product of the values), so each case compiles exactly one kernel.
"""
from __future__ import annotations

import itertools
import warnings

import numpy
import pytest

import tracer
import tracer.numpy as tnp
from tracer.ir.registry import OPS, Kind

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint32", "uint64", "float32",
          "float64"]
FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -1.5, 2.5, 3.0, -7.0, 0.3, 100.0, 1e-30, 1e30,
                  numpy.inf, -numpy.inf, numpy.nan]
# results compared bit for bit (besides NaN payloads): no libm in their kernels
EXACT = {"add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod",
         "negative", "positive", "absolute", "fabs", "sign", "square", "reciprocal",
         "conjugate", "sqrt", "floor", "ceil", "trunc", "rint", "maximum", "minimum", "fmax",
         "fmin", "isnan", "isinf", "isfinite", "signbit", "copysign", "heaviside", "equal",
         "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
         "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
         "invert", "left_shift", "right_shift", "gcd", "lcm"}
SIGNED_ZERO = {"floor", "ceil", "trunc", "rint", "copysign", "negative", "floor_divide",
               "remainder", "fmod", "sqrt", "maximum", "minimum"}
UFUNCS = sorted(n for n, d in OPS.items() if d.kind is Kind.ELEMENTWISE and d.ufunc is not None)


def specials(dtype: str) -> numpy.ndarray:
    dt = numpy.dtype(dtype)
    if dt.kind == "b":
        return numpy.array([False, True])
    if dt.kind == "f":
        return numpy.array(FLOAT_SPECIALS, dtype=dt)
    info = numpy.iinfo(dt)
    vals = [0, 1, 2, 3, 7, 100, info.max, info.max - 1, 64 if dt.itemsize > 1 else 5]
    if dt.kind == "i":
        vals += [-1, -2, -7, info.min, info.min + 1]
    return numpy.array(sorted(set(vals)), dtype=dt)


def inputs(nin: int, dtype: str) -> list[numpy.ndarray]:
    v = specials(dtype)
    if nin == 1:
        return [v]
    grid = list(itertools.product(v, repeat=nin))
    return [numpy.array([g[k] for g in grid], dtype=v.dtype) for k in range(nin)]


def numpy_result(fn, args):
    with warnings.catch_warnings(), numpy.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def assert_matches(name: str, got: numpy.ndarray, want: numpy.ndarray) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    if want.dtype.kind not in "fc":
        numpy.testing.assert_array_equal(got, want)
        return
    if name in EXACT:
        numpy.testing.assert_array_equal(got, want)
        if name in SIGNED_ZERO:
            zeros = want == 0
            numpy.testing.assert_array_equal(numpy.signbit(got[zeros]), numpy.signbit(want[zeros]))
        return
    eps = numpy.finfo(want.dtype).eps
    numpy.testing.assert_allclose(got, want, rtol=8 * eps, atol=8 * eps, equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UFUNCS)
def test_ufunc_against_numpy(name, dtype):
    uf = getattr(numpy, name)
    args = inputs(uf.nin, dtype)
    try:
        want = numpy_result(uf, args)
    except Exception as e:  # NumPy rejects this dtype: tracer must raise the same
        with pytest.raises(type(e)):
            tracer.evaluate(getattr(tnp, name)(*[tnp.asarray(a) for a in args]))
        return
    lazy = getattr(tnp, name)(*[tnp.asarray(a) for a in args])
    assert isinstance(lazy, tracer.ndarray)
    assert lazy.dtype == want.dtype and lazy.shape == want.shape  # known before evaluation
    got = numpy.asarray(lazy)
    assert_matches(name, got, want)


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
@pytest.mark.parametrize("shape", [(), (0,), (3, 0)])
def test_empty_and_0d(dtype, shape):
    h = numpy.ones(shape, dtype=dtype)
    t = tnp.asarray(h)
    for lazy, want in [(t + t, h + h), (tnp.sum(t, axis=-1 if shape else None),
                                        numpy.sum(h, axis=-1 if shape else None)),
                       (tnp.logical_not(t), numpy.logical_not(h))]:
        got = numpy.asarray(lazy)
        assert got.dtype == want.dtype and got.shape == numpy.shape(want)
        numpy.testing.assert_array_equal(got, want)


REDUCTIONS = ["sum", "prod", "max", "min", "any", "all", "argmax", "argmin"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", REDUCTIONS)
def test_reduction_against_numpy(fn, dtype):
    v = specials(dtype)
    if numpy.dtype(dtype).kind == "f":
        v = v[numpy.isfinite(v) | numpy.isnan(v) if fn.startswith("arg") else slice(None)]
    h = numpy.resize(v, (4, 2 * len(v) + 1))  # rows start at different specials
    t = tnp.asarray(h)
    for axis in (None, 1):
        want = numpy_result(lambda x: getattr(numpy, fn)(x, axis=axis), [h])
        got = numpy.asarray(getattr(tnp, fn)(t, axis=axis))
        want = numpy.asarray(want)
        assert got.dtype == want.dtype and got.shape == want.shape
        if fn == "sum" and want.dtype.kind == "f":
            # tracer accumulates float32 in float64: compare with a float64 reference
            ref = numpy_result(lambda x: x.astype(numpy.float64).sum(axis=axis), [h])
            numpy.testing.assert_allclose(got, ref.astype(want.dtype), rtol=1e-6, equal_nan=True)
        elif fn == "prod" and want.dtype.kind == "f":
            ref = numpy_result(lambda x: x.astype(numpy.float64).prod(axis=axis), [h])
            numpy.testing.assert_allclose(got, ref.astype(want.dtype), rtol=1e-6, equal_nan=True)
        else:
            numpy.testing.assert_array_equal(got, want)


def test_complex_runs_through_the_interpreter():
    h = numpy.array([1 + 2j, -3j, numpy.nan + 1j], numpy.complex128)
    t = tnp.asarray(h)
    before = tracer.stats().interpreted_nodes
    got = numpy.asarray(tnp.exp(t) * 2 + t.sum())
    numpy.testing.assert_allclose(got, numpy.exp(h) * 2 + h.sum(), equal_nan=True)
    assert tracer.stats().interpreted_nodes > before


REQUIRED = ("name", "kind", "nin", "shape_rule", "dtype_rule", "ref")
NO_KERNEL = {"nextafter", "spacing", "ldexp"}


def test_every_registry_entry_is_complete():
    for name, d in OPS.items():
        for f in REQUIRED:
            assert getattr(d, f) is not None or (d.kind is Kind.LEAF and f == "ref"), (name, f)
        if d.kind is Kind.ELEMENTWISE and name not in NO_KERNEL:
            assert d.template is not None, name
        if name.startswith("reduce_"):
            assert d.identity is not None and d.combine, name


def test_kernel_coverage_is_what_we_say():
    """Which (ufunc, dtype) loops run as kernels; the rest use the NumPy interpreter."""
    none = set()
    for name in UFUNCS:
        d = OPS[name]
        for dt in ("float64", "int64"):
            try:
                loop = d.ufunc.resolve_dtypes((numpy.dtype(dt),) * d.ufunc.nin + (None,))
            except TypeError:
                continue
            if d.template is None or d.template(loop[:d.ufunc.nin], loop[-1], "cpu") is None:
                none.add(f"{name}:{dt}")
    assert none == {"nextafter:float64", "nextafter:int64", "spacing:float64", "spacing:int64",
                    "ldexp:int64", "power:int64", "reciprocal:int64"}
