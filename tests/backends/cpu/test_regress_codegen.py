"""Issue 17 items 3, 9 and 18, and the sweep of casts and special values that followed: values
from compiled kernels against NumPy's, NaN sign bits and signed zeros included. One array per
dtype holds all the special values, so each test compiles few kernels."""
from __future__ import annotations

import warnings

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject

MODES = {"small_graph": dict(small_graph=4096, compile_mode="sync"),
         "compiled": dict(small_graph=0, compile_mode="sync"),
         "tiered": dict(small_graph=0, compile_mode="tiered")}


@pytest.fixture(params=list(MODES))
def mode(request):
    with context(**MODES[request.param]):
        yield request.param


def numpy_call(fn, *args):
    with warnings.catch_warnings(), numpy.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def assert_bits(got, want, what=""):
    """Same dtype and values; floats NaN-aware with the sign bit of zeros and NaNs."""
    got = numpy.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if want.dtype.kind in "fc":
        numpy.testing.assert_array_equal(got, want, err_msg=what)
        sign = numpy.signbit(got.real) != numpy.signbit(want.real)
        assert not sign.any(), f"{what}: sign bit differs at {want[sign]} (got {got[sign]})"
    else:
        numpy.testing.assert_array_equal(got, want, err_msg=what, strict=True)


def special_values(dt) -> numpy.ndarray:
    """0, -0.0, +-1, the type's extremes, NaN, +-inf, 1e30, 2**63 and friends, converted to
    `dt` as NumPy converts them."""
    dt = numpy.dtype(dt)
    base = [0.0, -0.0, 1.0, -1.0, numpy.nan, numpy.inf, -numpy.inf, 1e30, -1e30, 2.0 ** 63,
            -2.0 ** 63, 2.0 ** 64, 127.0, 128.0, 255.0, 256.0, -129.0, 2.0 ** 31,
            -2.0 ** 31 - 1, 2.5, -2.5, 70000.0, 4e38]
    a = numpy_call(lambda: numpy.array(base).astype(dt))
    if dt.kind in "iu":
        info = numpy.iinfo(dt)
        return numpy.concatenate([a, numpy.array([info.min, info.max], dt)])
    if dt.kind == "f":
        fi = numpy.finfo(dt)
        return numpy.concatenate([a, numpy.array([fi.max, -fi.max, fi.smallest_subnormal], dt)])
    if dt.kind == "c":
        return numpy_call(lambda: a + 1j * a[::-1])
    return a


# ---------------------------------------------------------------- item 3

def test_row_value_output_of_a_row_kernel_is_stored(mode):
    """std(keepdims) is a per-row value of the row kernel that reduces it again (var over a
    length-1 axis); it was picked as the kernel's stash, which only reductions store, so the
    std output was never written."""
    h = numpy.array([[[-4, 5, 4]], [[4, 0, 5]]])
    x = np.array(h)
    a = np.std(x, keepdims=True)
    b = np.var(a, axis=2)
    tracer.evaluate(a, b, x)
    want_a = numpy.std(h, keepdims=True)
    numpy.testing.assert_allclose(numpy.asarray(a), want_a, rtol=1e-13)
    numpy.testing.assert_allclose(numpy.asarray(b), numpy.var(want_a, axis=2), rtol=1e-13)


# ---------------------------------------------------------------- item 18

def test_float32_sin_of_a_broadcast_scalar_into_bool(mode):
    """The float32 sin loop read its argument at the output's index: a 0-d argument
    broadcast into the output does not have that index."""
    b = np.zeros(5, bool)
    b[...] = np.sin(np.array(-1., np.float32))
    want = numpy.zeros(5, bool)
    want[...] = numpy.sin(numpy.array(-1., numpy.float32))
    assert_bits(tracer.evaluate(b), want)


# ---------------------------------------------------------------- item 9

def test_int64_arithmetic_wraps_before_a_comparison(mode):
    """Numba's signed +, -, * let LLVM assume no overflow: `float(x + x) > 0` became `x > 0`."""
    h = numpy.array([2 ** 62, 3, -2 ** 63, 2 ** 63 - 1, -5, 0])
    x = np.asarray(h)
    got = [np.heaviside(x + x, x), (x + x) > 0, (x - 1) < x, (x * 4) < 0, np.square(x) >= 0]
    tracer.evaluate(*got)
    want = numpy_call(lambda: [numpy.heaviside(h + h, h), (h + h) > 0, (h - 1) < h,
                               (h * 4) < 0, numpy.square(h) >= 0])
    for g, w in zip(got, want):
        assert_bits(g, w)


@pytest.mark.parametrize("dt", ["float64", "float32"])
def test_power_by_one_exponent_takes_numpy_fast_paths(mode, dt):
    """NumPy's power loop with one exponent for all elements computes x ** 0.5 as sqrt(x)
    (sqrt(-inf) is NaN, sqrt(-0.0) is -0.0) and x ** -1 as 1 / x; an exponent array with
    the same values goes through pow."""
    h = numpy.array([-numpy.inf, -0.0, 0.0, 4.0, -4.0, numpy.inf, numpy.nan, 3.0], dt)
    e = numpy.array([0.5] * 4 + [-1.0] * 4, dt)
    x = np.asarray(h)
    got = [x ** 0.5, x ** -1.0, np.power(x, np.asarray(e[:1])), np.power(x, np.asarray(e)),
           np.log10(np.array([0])) ** 0.5]
    tracer.evaluate(*got)
    want = numpy_call(lambda: [h ** 0.5, h ** -1.0, numpy.power(h, e[:1]), numpy.power(h, e),
                               numpy.log10(numpy.array([0])) ** 0.5])
    for g, w in zip(got, want):
        assert_bits(g, w)


@pytest.mark.parametrize("dt", ["float64", "float32"])
def test_nan_of_an_invalid_operation_has_the_sign_bit_set(mode, dt):
    """An invalid operation gives x86's default NaN, whose sign bit is set, in NumPy's loops:
    log of a negative, fmod and remainder by zero or of inf, floor_divide by NaN, asin out of
    its domain. A NaN input of fmod propagates with its sign; heaviside's NaN is positive."""
    h = numpy.array([-0.5, -1.0, 2.0, -numpy.inf, numpy.inf, 0.0, -0.0, numpy.nan, -numpy.nan,
                     3.0], dt)
    d = numpy.array([0.0, -0.0, 1.0, 2.0, -numpy.nan, numpy.nan, 1.0, 0.0, 5.0, -numpy.inf], dt)
    x, y = np.asarray(h), np.asarray(d)
    fns = [numpy.log, numpy.log2, numpy.log10, numpy.arcsin, numpy.arccos, numpy.sqrt]
    pairs = [numpy.fmod, numpy.remainder, numpy.floor_divide, numpy.heaviside]
    got = [getattr(np, f.__name__)(x) for f in fns] + \
        [getattr(np, f.__name__)(x, y) for f in pairs]
    tracer.evaluate(*got)
    want = [numpy_call(f, h) for f in fns] + [numpy_call(f, h, d) for f in pairs]
    for n, g, w in zip(fns + pairs, got, want):  # (other values: test_ops_sweep)
        g = numpy.asarray(g)
        assert (numpy.isnan(g) == numpy.isnan(w)).all(), n
        nan = numpy.isnan(w)
        if n not in pairs:  # NumPy's SIMD loops give NaN inputs either sign: only generated
            nan &= ~numpy.isnan(h)
        assert_bits(g[nan], w[nan], n)


def test_multiply_at_float16_by_an_int_that_overflows_float16(mode):
    """NumPy's ufunc.at reads a Python int as an int64 array: the loop is float64, where
    -0.0 * (2**63 - 1) is -0.0 (in float16 the int would be inf, and -0.0 * inf NaN)."""
    f = np.array([-0.0, 1.0], np.float16)
    np.multiply.at(f, [0], 2 ** 63 - 1)
    h = numpy.array([-0.0, 1.0], numpy.float16)
    numpy_call(lambda: numpy.multiply.at(h, [0], 2 ** 63 - 1))
    assert_bits(f, h)


# ---------------------------------------------------------------- the sweep: casts

CAST_DTYPES = ["bool", "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
               "float32", "float64", "complex64", "complex128"]


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("src", CAST_DTYPES)
def test_astype_of_special_values_matches_numpy(src):
    """Every cast from `src` in one kernel. float -> uint32 and uint64 were LLVM's fptoui,
    undefined out of range (all ones here); NumPy's cast goes through the signed type. (Out
    of range, float -> uint32 is undefined in C too: NumPy's vector loop and its scalar tail
    differ. The kernel follows the vector loop, which the tiled array takes for every value.)"""
    h = special_values(src)
    x = np.asarray(h)
    got = [x.astype(t) for t in CAST_DTYPES]
    tracer.evaluate(*got)
    for t, g in zip(CAST_DTYPES, got):
        assert_bits(g, numpy_call(lambda: numpy.tile(h, 16).astype(t)[:h.size]), f"{src} -> {t}")


# ---------------------------------------------------------------- scatter

def test_add_at_private_bins_keep_negative_zero():
    """Past PRIVATE_MIN_UPDATES, threads add into private bins that start at -0.0, the
    additive identity that keeps a bin's -0.0 (0.0 + -0.0 would be 0.0)."""
    from tracer.cuda_kernels.cpu.scatter import PRIVATE_MIN_UPDATES
    k = PRIVATE_MIN_UPDATES + 5
    h = numpy.array([-0.0, 1.0, -0.0])
    idx = numpy.arange(k) % 2
    v = numpy.full(k, -0.0)
    a = np.asarray(h.copy())
    np.add.at(a, np.asarray(idx), np.asarray(v))
    numpy.add.at(h, idx, v)
    assert_bits(a, h)


def test_float_to_int_casts_inside_fused_kernels():
    """LLVM's fptosi is undefined out of range and was exploited: a vector loop saturated
    float32 -> int8 (255**2 gave 127, NumPy 1), and a cast of an always-NaN value folded to
    0 (NumPy: int32's min)."""
    h = numpy.array([0.0, -0.0, 1.0, -1.0, numpy.nan, numpy.inf, -numpy.inf, 1e30, -3.5,
                     2.0 ** 63, 0.5, 7.0, -2.0 ** 31, 3e9, 255.0, -129.0], numpy.float32)
    u = numpy.tile(numpy.array([0, 1, 2, 255, 3, 100, 8, 7], numpy.uint8), 2)
    x, y = np.asarray(h), np.asarray(u)
    got = [np.floor(np.square(x).astype(np.int8)), ((x % x) // (y % y)).astype(np.int32),
           (x * 1e30).astype(np.int64) > 0]
    want = numpy_call(lambda: [numpy.floor(numpy.square(h).astype(numpy.int8)),
                               ((h % h) // (u % u)).astype(numpy.int32),
                               (h * 1e30).astype(numpy.int64) > 0])
    for g, w in zip(got, want):  # one kernel each: one output vectorizes, several did not
        assert_bits(g, w)
