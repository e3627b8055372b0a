"""Reductions by their registry properties: every reduction with a ufunc (sum, prod, max, min,
any, all and those with no NumPy function of their own, such as logaddexp's) runs lazily through
`ufunc.reduce`, with axes and keepdims, against NumPy: on the cpu backend compiled and through
the small-graph interpreter, and on the cuda backend under Numba's simulator (tiny shapes)."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as tnp
from tracer.ir.config import context
from tracer.ir.registry import OPS, Kind, names

MODES = {"compiled": dict(small_graph=0), "small": dict(small_graph=4096),
         "cuda": dict(small_graph=0, backend="cuda", cuda_sim=True)}
REDUCTIONS = names(lambda d: d.kind is Kind.REDUCE and d.ufunc is not None)
AXES = (None, 0, 1, (0, 1), ())


def _data(dtype, shape=(3, 4), seed=0) -> numpy.ndarray:
    rng = numpy.random.default_rng(seed)
    if numpy.dtype(dtype).kind == "b":
        return rng.random(shape) > 0.5
    if numpy.dtype(dtype).kind in "iu":
        return rng.integers(-4, 5, shape).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


def _same(got, want, where: str, signed_zeros: bool = False) -> None:
    got, want = numpy.asarray(got), numpy.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), where
    if want.dtype.kind == "f":
        rtol = 64 * numpy.finfo(want.dtype).eps  # orders differ: float64 or blocked sums
        numpy.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=where)
        if signed_zeros:  # (NumPy's max/min may return either zero)
            zero = want == 0
            assert (numpy.signbit(got[zero]) == numpy.signbit(want[zero])).all(), where
    else:
        numpy.testing.assert_array_equal(got, want, err_msg=where)


def _check(uf, h, signed_zeros=False, **kw) -> None:
    with numpy.errstate(invalid="ignore"):
        want = uf.reduce(h, **kw)
        got = numpy.asarray(uf.reduce(tnp.asarray(h), **kw))
    _same(got, want, f"{uf.__name__}.reduce({kw}) of {h.dtype}", signed_zeros)


# on the cuda simulator (about 0.3 ms a thread), the reductions test_cuda_sim.py does not run
CUDA_TOO = {"reduce_prod", "reduce_logaddexp"}


@pytest.mark.parametrize("name,mode", [(n, m) for n in REDUCTIONS for m in MODES
                                       if m != "cuda" or n in CUDA_TOO])
def test_ufunc_reduce_axes_and_keepdims(name, mode):
    uf = OPS[name].ufunc
    # the simulator costs about 0.3 ms a thread: on cuda one dtype, keepdims once (a reshape)
    cases = [(dt, ax, kd) for dt in ("float32", "float64") for ax in AXES for kd in (False, True)
             if mode != "cuda" or dt == "float32" and (not kd or ax == 1)]
    with context(**MODES[mode]):
        for dtype, axis, keepdims in cases:
            _check(uf, _data(dtype), axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("mode", list(MODES))
def test_logaddexp_reduce(mode):
    """np.logaddexp.reduce, a reduction only the registry names (identity -inf, in the dtype,
    in order): NumPy starts at the identity, so -0.0 becomes 0.0, an empty reduction is -inf,
    and NaN and inf propagate as logaddexp's do."""
    uf = numpy.logaddexp
    specials = numpy.array([[-0.0, -numpy.inf, 1.5], [numpy.inf, 2.0, -numpy.inf],
                            [numpy.nan, 0.5, -0.0], [-numpy.inf, -numpy.inf, -numpy.inf]])
    with context(**MODES[mode]):
        for dtype in ("float32",) if mode == "cuda" else ("float32", "float64"):
            h = specials.astype(dtype)
            for axis in (None, 0, 1, ()):
                _check(uf, h, True, axis=axis)
            _check(uf, numpy.array([-0.0], dtype), True)
            _check(uf, numpy.zeros((0, 3), dtype), axis=0)
        _check(uf, _data("int16"), axis=1)      # int16 reduces in float32, uint8 in float16
        _check(uf, _data("uint8"), axis=0, keepdims=True)


def test_logaddexp_reduce_is_a_kernel():
    """Compiled, the reduction and its producer are kernels: no node is interpreted."""
    h = _data("float32", (50, 40))
    with context(small_graph=0):
        launched, interpreted = tracer.stats().kernels_launched, tracer.stats().interpreted_nodes
        got = numpy.asarray(numpy.logaddexp.reduce(tnp.asarray(h) * 2, axis=1))
        _same(got, numpy.logaddexp.reduce(h * 2, axis=1), "compiled")
    assert tracer.stats().kernels_launched > launched
    assert tracer.stats().interpreted_nodes == interpreted
