"""Float sums on the cpu backend add in NumPy's order (cuda_kernels/cpu/pairwise.py), so sum,
mean, var, std and the sums inside row kernels are NumPy's to the bit: runs shorter than 8,
one leaf (8..128), the pairwise recursion (> 128), a full sum's parallel subtrees (> 2**17),
runs over several axes (staged), outer reduced axes, size-1 axes, column sums (a run of 1),
inf/nan/-0.0, float32 overflow. Kernels serve every size with the same 1/n pattern, so the
sizes below reuse a few kernels each."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as tnp

pytestmark = pytest.mark.lazy  # the compiled kernels are the subject

# (shape, axis): several sizes per kernel structure
CASES = [
    *[((n,), None) for n in (0, 1, 5, 8, 100, 128, 129, 300, 4099, 150_001, 1_048_579)],
    *[((3, n), 1) for n in (0, 2, 7, 64, 200, 5000)],         # rows: a run along the last axis
    *[((n, 5), 0) for n in (3, 300)],                       # columns: rows added in order
    *[((m, n), None) for m, n in ((3, 5), (7, 300), (301, 1000), (0, 4), (4, 0))],  # 2 axes
    ((4, 6, 50), (1, 2)), ((4, 6, 50), (0, 2)), ((4, 6, 50), (0, 1)), ((4, 6, 50), 1),
    ((40, 1, 30), None), ((200, 1), 0), ((1, 200), 1), ((5, 1, 70), (0, 1)), ((0, 6, 50), (1, 2)),
    ((3, 200, 40), (1, 2)), ((1, 6, 50), 2),
]


def _data(shape, dtype, seed=0) -> numpy.ndarray:
    """Values over many magnitudes, so any change of order shows in the result's bits."""
    rng = numpy.random.default_rng(seed)
    scale = 10.0 ** rng.integers(-3, 12 if dtype == numpy.float32 else 40, size=shape)
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _bitwise(got, want, where: str) -> None:
    got, want = numpy.asarray(got), numpy.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), where
    assert got.tobytes() == want.tobytes(), f"{where}: {got!r} != {want!r}"


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
def test_sums_are_numpys_bits(dtype):
    for shape, axis in CASES:
        h = _data(shape, dtype)
        _bitwise(tnp.asarray(h).sum(axis=axis), h.sum(axis=axis), f"sum{shape} axis={axis}")


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
def test_mean_var_std_are_numpys_bits(dtype):
    for shape, axis in [((1000,), None), ((7, 300), 1), ((7, 300), 0), ((7, 300), None),
                        ((4, 6, 50), (0, 2))]:
        h = _data(shape, dtype, seed=1) / 1e3
        x = tnp.asarray(h)
        for f in ("mean", "var", "std"):
            _bitwise(getattr(x, f)(axis=axis), getattr(h, f)(axis=axis), f"{f}{shape} {axis}")
    h = _data((7, 300), dtype, seed=2)
    h[2, ::5] = numpy.nan
    for f in (numpy.nansum, numpy.nanmean):
        _bitwise(getattr(tnp, f.__name__)(tnp.asarray(h), axis=1), f(h, axis=1), f.__name__)


def test_row_kernels_sum_in_numpys_order():
    """Normalizations fuse into one row kernel; their sums (of a stashed row too) are NumPy's."""
    h = _data((6, 300), numpy.float64, seed=2) / 1e30
    x = tnp.asarray(h)
    progs = [
        lambda m, a: (a - a.mean(axis=1, keepdims=True)) / a.std(axis=1, keepdims=True),
        lambda m, a: a / a.sum(axis=1, keepdims=True),
    ]
    for f in progs:
        got = f(tnp, x)
        assert "(row, cpu)" in str(tracer.explain(got))
        _bitwise(got, f(numpy, h), "row kernel")


def test_special_values():
    h = numpy.zeros(300)
    h[::2] = -0.0
    cases = [numpy.full(300, -0.0), numpy.full(6, -0.0), h,
             numpy.array([1.0, numpy.inf, 2.0] * 100), numpy.array([numpy.inf, -numpy.inf] * 150),
             numpy.array([1.0, numpy.nan] * 150), numpy.array([1e308, 1e308, -1e308] * 100),
             numpy.array([1e16, 1.0, -1e16] * 100)]
    for h in cases:
        for dt in (numpy.float64, numpy.float32):
            with numpy.errstate(all="ignore"):
                v = h.astype(dt)
                want = v.sum()
                _bitwise(tnp.asarray(v).sum(), want, f"sum of {v[:4]}...")
                m = v.reshape(3, -1)
                _bitwise(tnp.asarray(m).sum(axis=1), m.sum(axis=1), f"row sums of {v[:4]}...")


def test_float32_sums_round_and_overflow_in_float32():
    big = numpy.full(1000, 3e37, numpy.float32)
    with numpy.errstate(over="ignore"):
        assert numpy.isinf(big.sum())
        _bitwise(tnp.asarray(big).sum(), big.sum(), "overflow")
    h = numpy.full(20000, 0.1, numpy.float32)  # float32 rounding, not a float64 total
    _bitwise(tnp.asarray(h).sum(), h.sum(), "rounding")
    assert tnp.asarray(h).sum() != numpy.float32(h.astype(numpy.float64).sum())


def test_tall_column_sum():
    """Long columns, few of them: opt/tree_reduction leaves float sums in one stage."""
    h = _data((40_000, 3), numpy.float64, seed=3)
    _bitwise(tnp.asarray(h).sum(axis=0), h.sum(axis=0), "column sum")
