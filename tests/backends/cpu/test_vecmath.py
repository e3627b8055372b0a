"""The cpu backend's vectorizable exp, log, sin, cos and tanh (cpu/helpers.py), over the
whole float range and its specials, in ulps against NumPy and against the correctly rounded
value (the float64 result rounded, for float32)."""
from __future__ import annotations

import re

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels.cpu.helpers import HELPERS

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject

F32 = ["exp", "log", "log2", "log10", "sin", "cos", "tanh"]
F64 = ["exp", "log"]


def _line(x: numpy.ndarray) -> numpy.ndarray:
    """Floats as int64 in order, one step per ulp (-0.0 and 0.0 both at 0)."""
    i = x.view(numpy.int32 if x.dtype == numpy.float32 else numpy.int64).astype(numpy.int64)
    return numpy.where(i < 0, -(i & numpy.int64(2 ** 63 - 1)), i)


def ulps(got: numpy.ndarray, want: numpy.ndarray) -> numpy.ndarray:
    """Distance in ulps, exact in int64 where the signs agree (float64 would round distances
    between float64 bit patterns near 2**62 to multiples of 64)."""
    assert (numpy.isnan(got) == numpy.isnan(want)).all(), "NaN in different places"
    a, b = _line(got), _line(want)
    with numpy.errstate(over="ignore"):
        d = numpy.where((a >= 0) == (b >= 0), numpy.abs(a - b).astype(numpy.float64),
                        numpy.abs(a.astype(numpy.float64) - b.astype(numpy.float64)))
    d[numpy.isnan(want)] = 0
    return d


SPECIALS = [0.0, -0.0, numpy.inf, -numpy.inf, numpy.nan, 1.0, -1.0, 0.5, 2e-4, -2e-4,
            88.72, 88.73, -87.33, -103.97, -104.0, 65535.9, 65536.0, -65536.0, 1e-45, -1e-45,
            1.17549435e-38, 3.4028235e38, -3.4028235e38, 709.78, -745.1, 710.0, -746.0,
            numpy.pi, numpy.pi / 2, 1e7, 1e30, -1e30]


@pytest.fixture(scope="module")
def x32():
    rng = numpy.random.default_rng(7)
    bits = rng.integers(0, 2 ** 32, 1 << 20, dtype=numpy.uint64).astype(numpy.uint32)
    return numpy.concatenate([numpy.array(SPECIALS, numpy.float32),
                              bits.view(numpy.float32),  # every exponent, signs, subnormals
                              rng.uniform(-100, 100, 1 << 18).astype(numpy.float32),
                              rng.uniform(0, 2, 1 << 16).astype(numpy.float32)])


@pytest.fixture(scope="module")
def x64():
    rng = numpy.random.default_rng(8)
    bits = rng.integers(0, 2 ** 63, 1 << 19, dtype=numpy.int64)
    return numpy.concatenate([numpy.array(SPECIALS + [5e-324, 2.2250738585072014e-308,
                                                      1.7976931348623157e308]),
                              bits.view(numpy.float64), -bits[:1 << 17].view(numpy.float64),
                              rng.uniform(-750, 750, 1 << 18), rng.uniform(0, 2, 1 << 16)])


@pytest.mark.parametrize("name", F32)
def test_float32_within_an_ulp_of_correct_rounding(name, x32):
    with numpy.errstate(all="ignore"):
        got = numpy.asarray(getattr(np, name)(np.asarray(x32)))
        rounded = getattr(numpy, name)(x32.astype(numpy.float64)).astype(numpy.float32)
        ref = getattr(numpy, name)(x32)
    assert got.dtype == numpy.float32
    assert ulps(got, rounded).max() <= 1
    assert ulps(got, ref).max() <= 4  # NumPy's own float32 loops are up to ~3 ulp off
    zero = ref == 0
    assert (numpy.signbit(got[zero]) == numpy.signbit(ref[zero])).all()


@pytest.mark.parametrize("name", F64)
def test_float64_within_an_ulp_of_numpy(name, x64):
    with numpy.errstate(all="ignore"):
        got = numpy.asarray(getattr(np, name)(np.asarray(x64)))
        ref = getattr(numpy, name)(x64)
    assert ulps(got, ref).max() <= 1
    assert ((got == ref) | numpy.isnan(ref)).mean() > 0.9


def test_float64_common_values_are_exact():
    x = numpy.array([0.0, 1.0, 2.0, 10.0, -1.0, 0.5])
    assert (numpy.asarray(np.exp(np.asarray(x))) == numpy.exp(x)).all()
    assert (numpy.asarray(np.log(np.asarray(x[1:4]))) == numpy.log(x[1:4])).all()


def test_kernels_call_no_libm_for_them():
    for dt in (numpy.float32, numpy.float64):
        x = np.asarray(numpy.linspace(0.5, 2, 50).astype(dt))
        names = F32 if dt == numpy.float32 else F64
        src = "".join(k.source for k in tracer.explain(*[getattr(np, n)(x) for n in names]).kernels)
        # flat sin/cos loops call libm only in blocks with an argument past 2**16
        src = re.sub(r"if nbig:.*?else:", "", src, flags=re.S)
        assert not any(f"math.{n}(" in src for n in names)


def test_sin_blocks_with_large_arguments_take_the_exact_reduction():
    """One large argument in a block of small ones, and an output sharing the input's buffer."""
    h = numpy.linspace(-3, 3, 10000).astype(numpy.float32)
    h[5000] = 1e30
    h[9999] = 70000.5
    want = numpy.sin(h) * 2
    x = np.asarray(h.copy())
    src = tracer.explain(np.sin(x) * 2).kernels[0].source
    assert "_vsin32s(" in src and "math.sin(" in src  # both variants, picked per block
    assert ulps(numpy.asarray(np.sin(x) * 2), want).max() <= 1
    np.sin(x, out=x)
    assert ulps(numpy.asarray(x), numpy.sin(h)).max() <= 1


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_full_range_sin_cos_in_loops_that_are_not_flat(name, x32):
    """A transposed 2-D read is not a flat loop: its kernel inlines the branch-free helper
    with the Payne-Hanek reduction for every argument."""
    h = x32[:(x32.size // 64) * 64].reshape(-1, 64)
    with numpy.errstate(all="ignore"):
        got = numpy.asarray(getattr(np, name)(np.asarray(h).T))
        rounded = getattr(numpy, name)(h.T.astype(numpy.float64)).astype(numpy.float32)
    assert "_vtrig_red32(" in tracer.explain(getattr(np, name)(np.asarray(h).T)).kernels[0].source
    assert ulps(got, rounded).max() <= 1


def test_float64_exp_constants():
    """_exp_f64's ln(2)/64 split: hi has its low 20 bits clear (k * hi exact for |k| < 2**20)
    and hi + lo is ln(2)/64 to far below float64's precision."""
    from decimal import Decimal, localcontext
    hi, lo = 0.010830424695086549, 1.162596423439437e-12
    assert f"_fma(k, -{lo!r}, _fma(k, -{hi!r}, dc))" in HELPERS["_exp_f64"]
    assert numpy.array([hi]).view(numpy.int64)[0] & ((1 << 20) - 1) == 0
    with localcontext() as ctx:
        ctx.prec = 40
        assert abs(Decimal(hi) + Decimal(lo) - Decimal(2).ln() / 64) < Decimal(1e-28)
