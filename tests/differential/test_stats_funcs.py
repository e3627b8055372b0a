"""tracer/statfuncs.py against NumPy: NaN-aware reductions, isclose and friends, rounding,
differences, averages, covariance and select; dtypes exact, NaN positions exact."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracer
import tracer.numpy as tnp

from tracer import statfuncs as S


def _data():
    rng = np.random.default_rng(0)
    f = rng.standard_normal((4, 5))
    f[0, 1] = np.nan
    f[1, 3] = np.inf
    f[2, :] = np.nan  # an all-NaN row
    f[:, 4] = np.nan  # an all-NaN column
    f[3, 0] = np.nan
    i = rng.integers(-5, 6, (4, 5))
    return {"f64": f, "f32": f.astype(np.float32), "i64": i, "bool": i > 0}


D = _data()


def lz(x):
    return tnp.asarray(x) if isinstance(x, np.ndarray) else x


def same(got, want, rtol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "fc":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def check(name, *args, rtol=1e-6, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, name)(*args, **kw)
        got = getattr(S, name)(*[lz(a) for a in args], **kw)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, rtol)
    else:
        same(got, want, rtol)
    return got


def raises_like(name, *args, **kw):
    """NumPy and tracer raise the same exception type with the same message."""
    with pytest.raises(Exception) as want:
        getattr(np, name)(*args, **kw)
    with pytest.raises(type(want.value)) as got:
        getattr(S, name)(*[lz(a) for a in args], **kw)
    assert str(got.value) == str(want.value)


NAN_FUNCS = ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd"]


# ------------------------------------------------------------------ NaN-aware reductions

_FLOAT_CASES = [(f, "f64", 0, True) for f in NAN_FUNCS] + \
    [(f, "f32", -1, False) for f in ("nansum", "nanmax", "nanmean", "nanvar", "nanstd")] + \
    [(f, "f64", None, False) for f in ("nanprod", "nanmin", "nanmean", "nanvar")]


@pytest.mark.parametrize("func,dt,axis,keepdims", _FLOAT_CASES)
def test_nan_reductions_float(func, dt, axis, keepdims):
    got = check(func, D[dt], axis=axis, keepdims=keepdims, rtol=1e-5 if dt == "f32" else 1e-6)
    assert isinstance(got, tracer.ndarray)


@pytest.mark.parametrize("func", NAN_FUNCS)
def test_nan_reductions_int_bool_are_plain(func):
    check(func, D["i64"], axis=0)
    if func in ("nansum", "nanmax", "nanmean"):
        check(func, D["bool"], axis=1)


def test_all_nan_slices_give_nan():
    a = np.array([[np.nan, np.nan], [1.0, np.nan]])
    for func in ("nanmax", "nanmin", "nanmean"):
        got = np.asarray(getattr(S, func)(lz(a), axis=1))
        assert np.isnan(got[0]) and got[1] == 1.0
    assert np.asarray(S.nansum(lz(a), axis=1))[0] == 0.0
    assert np.asarray(S.nanprod(lz(a), axis=1))[0] == 1.0


@pytest.mark.parametrize("ddof", [0, 1, 2])
def test_nanvar_nanstd_ddof(ddof):
    # rows with 3, 2, 0 and 3 non-NaN values: ddof=2 leaves one slice with dof 0 -> NaN
    check("nanvar", D["f64"], axis=1, ddof=ddof)
    check("nanstd", D["f32"], axis=1, ddof=ddof, rtol=1e-5)
    check("nanvar", D["f64"], ddof=ddof)


def test_nanvar_correction_and_dtype():
    check("nanvar", D["f64"], axis=0, correction=1)
    check("nanvar", D["f32"], axis=1, dtype=np.float64)
    check("nansum", D["i64"], axis=1, dtype=np.int8)
    raises_like("nanvar", D["f64"], ddof=1, correction=1)
    raises_like("nanmean", D["f64"], dtype=np.int64)
    raises_like("nanvar", D["f64"], dtype=np.int64)


# evaluating the complex -> real cast warns in the runtime (NumPy's `.real` does not)
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_nanvar_complex():
    c = np.array([[1 + 2j, np.nan, 3 - 1j], [2j, 1, 1 + 1j]])
    check("nanvar", c, axis=1)
    check("nanmean", c, axis=0)
    check("nansum", c)


def test_nanmax_zero_size_and_initial():
    raises_like("nanmax", np.empty((3, 0)), axis=1)
    raises_like("nanmin", np.empty((0, 2)))
    check("nanmax", np.empty((3, 0)), axis=1, initial=5.0)
    check("nanmax", D["f64"], axis=1, initial=1.5)
    check("nanmin", D["f64"], axis=0, initial=np.nan)
    check("nanmax", D["i64"], axis=1, initial=3)


def test_nan_reductions_out():
    out = tnp.zeros(5)
    res = S.nansum(lz(D["f64"]), axis=0, out=out)
    assert res is out
    same(out, np.nansum(D["f64"], axis=0))
    host = np.zeros(4, np.float32)
    assert S.nanmax(lz(D["f64"]), axis=1, out=host) is host
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(host, np.nanmax(D["f64"], axis=1).astype(np.float32))
    raises_like("nanmean", D["f64"], axis=0, out=np.zeros(5, np.int64))


def test_nansum_where_falls_back():
    w = np.array([True, False, True, True, False])
    with pytest.warns(tracer.TracerFallbackWarning, match="nansum"):
        got = S.nansum(lz(D["f64"]), axis=1, where=w)
    same(got, np.nansum(D["f64"], axis=1, where=w))


# ------------------------------------------------------------------ count_nonzero

@pytest.mark.parametrize("dt,axis,keepdims", [("f64", None, False), ("i64", 0, False),
                                              ("bool", 1, True), ("f64", (0, 1), True)])
def test_count_nonzero(dt, axis, keepdims):
    got = S.count_nonzero(lz(D[dt]), axis=axis, keepdims=keepdims)
    want = np.count_nonzero(D[dt], axis=axis, keepdims=keepdims)
    same(got, np.asarray(want, dtype=np.intp))
    assert isinstance(S.count_nonzero(lz(D["f64"])), tracer.ndarray)
    assert int(S.count_nonzero(lz(D["f64"]))) == np.count_nonzero(D["f64"])


# ------------------------------------------------------------------ isclose and friends

def test_isclose():
    a = np.array([1.0, np.inf, -np.inf, np.nan, 1e-8, 1.0, 0.0])
    b = np.array([1.0 + 1e-6, np.inf, np.inf, np.nan, 0.0, 1.1, -0.0])
    check("isclose", a, b)
    check("isclose", a, b, equal_nan=True)
    check("isclose", a.astype(np.float32), b.astype(np.float32))
    check("isclose", a, b, rtol=0.2, atol=0.0)
    check("isclose", D["i64"], D["i64"] + 1, atol=1)
    check("isclose", D["i64"], 2)
    check("isclose", 2, D["f32"])
    check("isclose", D["bool"], D["bool"])
    check("isclose", np.array([1e-8, 1e-7]), 0.0, atol=np.array([1e-7, 1e-9]))
    check("isclose", 1.0, 1.0 + 1e-9)


def test_isclose_invalid_tolerance_warns():
    with pytest.warns(RuntimeWarning, match="One of rtol or atol is not valid"):
        S.isclose(lz(D["f64"]), 1.0, atol=np.nan)


def test_allclose_and_array_equal_return_python_bools():
    a = D["f64"]
    b = np.where(np.isnan(a), a, a * (1 + 1e-9))
    for eq in (False, True):
        assert S.allclose(lz(a), lz(b), equal_nan=eq) is np.allclose(a, b, equal_nan=eq)
        assert S.array_equal(lz(a), lz(a), equal_nan=eq) is np.array_equal(a, a, equal_nan=eq)
        assert S.array_equal(lz(a), lz(b), equal_nan=eq) is np.array_equal(a, b, equal_nan=eq)
    c = a.copy()
    c[0, 1] = 7.0  # NaNs in different places
    assert S.array_equal(lz(a), lz(c), equal_nan=True) is False
    assert S.array_equal(lz(D["i64"]), D["i64"].astype(np.float64), equal_nan=True) is True
    assert S.array_equal(lz(D["i64"]), lz(D["i64"] + 1)) is False


def test_array_equal_different_shapes_do_not_evaluate():
    x = tnp.asarray(D["f64"]) + 1
    evals = tracer.stats().evaluations
    assert S.array_equal(x, x[:2]) is False
    assert S.array_equal(x, [1, 2]) is False
    assert tracer.stats().evaluations == evals


# ------------------------------------------------------------------ rounding

@pytest.mark.parametrize("decimals", [-2, -1, 0, 1, 3, 23])
def test_around_floats(decimals):
    x = np.random.default_rng(1).standard_normal(16) * 10.0 ** np.arange(-8, 8)
    x[:4] = [0.5, 1.5, 2.5, -0.5]  # half to even
    x[4:6] = [np.nan, -np.inf]
    for dt in (np.float64, np.float32):
        got = S.around(lz(x.astype(dt)), decimals)
        want = np.around(x.astype(dt), decimals)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)  # bit for bit
    np.testing.assert_array_equal(np.asarray(S.round(lz(x), decimals)), np.round(x, decimals))


def test_around_integers_and_bools():
    i = np.array([15, 25, -35, 44, 127], np.int8)
    for d in (-1, 0, 2):
        check("around", i, d)
    check("around", D["i64"], -1)
    check("around", np.array([15, 250], np.uint8), -1)
    check("around", D["bool"], 0)  # rint of bool: float16, as in NumPy
    raises_like("around", D["bool"], 1)
    raises_like("around", D["i64"], 1.5)


def test_around_out_and_complex():
    x = np.random.default_rng(2).standard_normal(6) * 10
    out = tnp.zeros(6, np.float32)
    assert S.around(lz(x), 2, out=out) is out
    np.testing.assert_array_equal(np.asarray(out), np.around(x, 2, out=np.zeros(6, np.float32)))
    c = np.array([1.25 + 2.55j, -0.5 + 0.5j])
    with pytest.warns(tracer.TracerFallbackWarning, match="around"):
        same(S.around(lz(c), 1), np.around(c, 1))


def test_fix():
    x = np.array([-1.5, -0.5, -0.0, 0.5, 2.5, np.nan, np.inf, -np.inf])
    check("fix", x)
    check("fix", x.astype(np.float32))
    check("fix", D["i64"])
    check("fix", D["bool"])
    check("fix", -0.5)
    assert np.signbit(np.asarray(S.fix(lz(x))))[1]  # -0.5 -> -0.0


# ------------------------------------------------------------------ ptp

def test_ptp():
    check("ptp", D["f64"], axis=0)
    check("ptp", D["f32"], axis=1, keepdims=True)
    check("ptp", D["i64"])
    check("ptp", np.array([-128, 127], np.int8))  # wraps, as in NumPy
    raises_like("ptp", D["bool"])
    out = tnp.zeros(4, np.int64)
    S.ptp(lz(D["i64"]), axis=1, out=out)
    same(out, np.ptp(D["i64"], axis=1))


# ------------------------------------------------------------------ average

def test_average_unweighted():
    a = np.where(np.isnan(D["f64"]), 1.0, D["f64"])
    check("average", a)
    check("average", a, axis=1, returned=True)
    check("average", D["i64"], axis=0, keepdims=True, returned=True)
    check("average", D["f32"], axis=(0, 1))


def test_average_weighted():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 5))
    w = rng.random((4, 5))
    check("average", a, axis=1, weights=w, returned=True)
    check("average", a, axis=0, weights=w[:, 0], returned=True)
    check("average", a, axis=(1, 0), weights=w.T, keepdims=True)
    check("average", D["i64"], axis=1, weights=w[0].astype(np.float32), returned=True)


def test_average_errors():
    a = np.ones((4, 5))
    raises_like("average", a, weights=np.ones(5))
    raises_like("average", a, axis=0, weights=np.ones(5))
    raises_like("average", a, axis=1, weights=np.array([1.0, -1.0, 0.0, 0.0, 0.0]))


# ------------------------------------------------------------------ diff, ediff1d

def test_diff():
    a = D["f64"]
    check("diff", a)
    check("diff", a, 2, 0)
    check("diff", a, 1, 0, prepend=0.5, append=a[:1])
    check("diff", D["i64"], 3)
    check("diff", D["bool"], axis=0)  # not_equal on bools
    check("diff", a.astype(np.float32), prepend=np.zeros((4, 2), np.float32))
    assert S.diff([1, 2], 0) == [1, 2]  # n=0 hands back the input, as NumPy does
    raises_like("diff", a, -1)
    raises_like("diff", np.float64(3.0))
    raises_like("diff", a, axis=2)


def test_ediff1d():
    check("ediff1d", D["f64"])
    check("ediff1d", D["i64"], to_begin=[-1, -2], to_end=5)
    check("ediff1d", np.array([1, 2, 4], np.int8), to_begin=1000)  # wraps into int8
    check("ediff1d", np.array([1.0]), to_end=[1, 2])
    raises_like("ediff1d", np.array([1, 2, 4], np.int8), to_begin=1.5)
    raises_like("ediff1d", np.array([1.0, 2.0]), to_end=1j)


# ------------------------------------------------------------------ cov, corrcoef

def _obs():
    rng = np.random.default_rng(4)
    return rng.standard_normal((3, 6)), rng.standard_normal(6)


def test_cov():
    m, y = _obs()
    check("cov", m)
    check("cov", m.T, rowvar=False)
    check("cov", m, y)
    check("cov", m[0], bias=True)
    check("cov", m, ddof=2)
    check("cov", m, dtype=np.float32, rtol=1e-5)
    check("cov", D["i64"])
    check("cov", m.T, y, rowvar=False)
    check("cov", m + 1j * m[::-1])
    same(S.cov(lz(np.zeros((0, 3)))), np.zeros((0, 0)))


def test_cov_errors_warnings_and_fallback():
    m, _ = _obs()
    raises_like("cov", np.zeros((2, 2, 2)))
    raises_like("cov", m, np.zeros((2, 2, 2)))
    raises_like("cov", m, ddof=1.5)
    with warnings.catch_warnings(record=True) as seen:  # NumPy warns twice here too
        warnings.simplefilter("always")
        got = S.cov(lz(m[:, :1]))
    assert {str(w.message) for w in seen} == {"Degrees of freedom <= 0 for slice",
                                              "divide by zero encountered in divide"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        same(got, np.cov(m[:, :1]))
    with pytest.warns(tracer.TracerFallbackWarning, match="cov"):
        got = S.cov(lz(m), fweights=np.array([1, 2, 1, 1, 3, 1]))
    same(got, np.cov(m, fweights=np.array([1, 2, 1, 1, 3, 1])))


def test_corrcoef():
    m, y = _obs()
    got = check("corrcoef", m)
    assert np.all(np.abs(np.asarray(got)) <= 1)
    check("corrcoef", m, y)
    check("corrcoef", m.T, rowvar=False)
    check("corrcoef", m, dtype=np.float32, rtol=1e-5)
    check("corrcoef", y)  # one variable: c / c
    check("corrcoef", np.ones(6))  # zero variance: NaN
    check("corrcoef", np.vstack([y, np.ones(6)]))
    c = m + 1j * m[::-1]
    with pytest.warns(tracer.TracerFallbackWarning, match="corrcoef"):
        same(S.corrcoef(lz(c)), np.corrcoef(c))


# ------------------------------------------------------------------ select

def test_select():
    x = D["i64"]
    check("select", [x > 2, x < -2], [x, x * 10])
    check("select", [x > 2, x < -2], [x, 1.5], default=-1)
    check("select", [x > 2], [np.int8(5)], default=np.zeros(5, np.int8))
    check("select", [x > 2, x[0] < 0], [x.astype(np.int8), 300])  # shapes broadcast
    check("select", [x[0] > 0], [np.arange(4)[:, None]])  # choice widens the result
    check("select", [x > 0, D["bool"]], [D["f32"], D["f64"]], default=np.nan)


def test_select_errors():
    x = D["i64"]
    raises_like("select", [x > 2], [x, x])
    raises_like("select", [], [])
    raises_like("select", [x], [x])
    raises_like("select", [x > 2, np.array([True, False])], [x, x])
    raises_like("select", [x > 2], [np.zeros(3)])


def test_names():
    assert len(set(S.NAMES)) == len(S.NAMES)
    for name in S.NAMES:
        assert callable(getattr(S, name)) and hasattr(np, name)
