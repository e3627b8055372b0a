"""tracer/sorting.py and tracer/orderstats.py against NumPy: values, dtypes and shapes exact
(NaN positions, tie order of sorts), NumPy's exceptions, in-place methods through views, and
the lazy ones recording without evaluating."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracer
import tracer.numpy as tnp
from tracer.fallback import TracerFallbackWarning


def _data():
    rng = np.random.default_rng(0)
    f = np.round(rng.standard_normal((4, 6)), 1)  # rounded: ties
    f[0, 1] = f[2, 4] = f[3, 3] = np.nan
    f[1, 0] = np.inf
    i = rng.integers(-3, 4, (4, 6))
    return {"f64": f, "f32": f.astype(np.float32), "i64": i, "bool": i > 0}


D = _data()


def lz(x):
    return tnp.asarray(x) if isinstance(x, np.ndarray) else x


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def check(name, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = getattr(np, name)(*args, **kw)
        got = getattr(tnp, name)(*[lz(a) for a in args], **kw)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    else:
        same(got, want)
    return got


def raises_like(name, *args, **kw):
    """NumPy and tracer raise the same exception type with the same message."""
    with pytest.raises(Exception) as want:
        getattr(np, name)(*args, **kw)
    with pytest.raises(type(want.value)) as got:
        getattr(tnp, name)(*[lz(a) for a in args], **kw)
    assert str(got.value) == str(want.value)


# ------------------------------------------------------------------ sorting and searching

@pytest.mark.parametrize("dt", ["f64", "f32", "i64", "bool"])
@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sorts(dt, axis):
    a = D[dt]
    check("sort", a, axis=axis)  # NaN last
    check("argsort", a, axis=axis)  # NumPy's own (unstable) tie order
    check("argsort", a, axis=axis, kind="stable")
    check("argsort", a, axis=axis, stable=True)


@pytest.mark.parametrize("kth", [2, -1, (0, 3), [5, 1, -6]])
def test_partitions(kth):
    check("partition", D["f64"], kth)
    check("argpartition", D["i64"], kth)
    check("partition", D["f32"][:, :4], kth if np.ndim(kth) == 0 else [3, -4], axis=0)
    check("argpartition", D["f64"], kth, axis=None)


def test_zero_d_and_empty():
    z = np.float64(2.5)
    check("argsort", z)
    check("sort", z, axis=None)
    check("partition", z, 0, axis=None)
    check("cumsum", np.array(3), axis=0)  # NumPy flattens a 0-d array for accumulations
    e = np.zeros((0, 3))
    check("sort", e, axis=0)
    check("partition", e, 7, axis=0)  # NumPy checks kth only for a non-empty array
    check("searchsorted", e[:, 0], [1.0, 2.0])


def test_searchsorted():
    a = np.sort(D["f64"][1])  # inf and NaN at the end
    check("searchsorted", a, D["f64"])
    check("searchsorted", a, D["f64"], side="right")
    check("searchsorted", a, 0.5)
    check("searchsorted", np.array([0.1], np.float32), 0.1, side="right")  # 0.1 as float64
    check("searchsorted", np.arange(5, dtype=np.int8), [1.5, 300])
    perm = np.argsort(D["i64"][0], kind="stable")
    check("searchsorted", D["i64"][0], [-1, 2], sorter=perm)
    got = tnp.searchsorted(lz(D["i64"][0]), lz(D["i64"][1]), "right", lz(perm))
    same(got, np.searchsorted(D["i64"][0], D["i64"][1], "right", perm))
    with pytest.raises(ValueError, match="Sorter index out of range"):  # NumPy's error where
        # the search reads the sorter: at evaluation, or at the call under adaptive laziness
        np.asarray(tnp.searchsorted(lz(a), 9.0, sorter=tnp.asarray([0, 1, 2, 3, 4, 99])))


# ------------------------------------------------------------------ cumulative

@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.bool_, np.float32, np.int64])
def test_cumulative_dtypes(dt):
    a = np.array([[1, 0, 3], [2, 5, 1]]).astype(dt)
    check("cumsum", a)
    check("cumprod", a, axis=1)
    check("cumsum", a, axis=0, dtype=np.float32)


def test_nancumulative():
    for name in ("nancumsum", "nancumprod"):
        check(name, D["f64"])
        check(name, D["f32"], axis=1)
        check(name, D["i64"], axis=0)


def test_cumulative_out():
    a = D["i64"]
    with pytest.warns(TracerFallbackWarning):
        out = tnp.zeros((4, 6), np.int8)
        r = tnp.cumsum(lz(a), axis=1, out=out)
        host = np.zeros((4, 6), np.float32)
        assert tnp.cumprod(lz(a), axis=0, out=host) is host
    assert r is out
    same(out, np.cumsum(a, axis=1, out=np.zeros((4, 6), np.int8)))
    same(host, np.cumprod(a, axis=0, out=np.zeros((4, 6), np.float32)))


# ------------------------------------------------------------------ set functions

def test_unique_and_sets():
    f = D["f64"].copy()
    f[0, 3] = np.nan
    check("unique", D["i64"], return_index=True, return_inverse=True, return_counts=True)
    check("unique", f, return_inverse=True)  # NumPy 2: inverse has the input's shape
    check("unique", f, equal_nan=False)
    check("unique", D["i64"], axis=0, return_inverse=True)
    x, y = D["i64"][0], D["i64"][1]
    check("intersect1d", x, y, return_indices=True)
    for name in ("union1d", "setdiff1d", "setxor1d"):
        check(name, x, y)


@pytest.mark.parametrize("kind", [None, "sort", "table"])
@pytest.mark.parametrize("invert", [False, True])
def test_isin_integers(kind, invert):
    check("isin", D["i64"], [1, -3, 7], invert=invert, kind=kind)
    check("isin", D["i64"].astype(np.int8), np.array([200, 2], np.uint8), invert=invert,
          kind=kind)
    check("isin", D["bool"], [True], invert=invert, kind=kind)


def test_isin_floats():
    f = D["f64"]
    check("isin", f, f[1])  # NaN is in nothing, inf is found
    check("isin", f, f[1], invert=True)
    check("isin", f.astype(np.float32), [0.1, np.float32(0.1)])  # compared in float64
    check("isin", D["i64"], [1.0, 2.5])
    check("isin", f, [])
    check("isin", np.zeros((0, 2)), [1.0])
    # assume_unique with duplicates: NumPy's sort path gives its own answer, not membership
    dup = np.array([1.0, 1.0, 2.0, 3.0, 3.0, 5.0])
    check("isin", dup, np.arange(12.0) / 2, assume_unique=True)
    check("isin", dup, np.arange(12.0) / 2, assume_unique=True, invert=True)


@pytest.mark.lazy
def test_isin_data_dependent_cases():
    with pytest.warns(TracerFallbackWarning):  # NumPy's algorithm depends on the data
        check("isin", D["i64"], np.array([1, 2], np.uint64))
        check("isin", D["i64"], [1, 1, 2], assume_unique=True)
        big = np.array([2**60, 2**60 + 1])  # both meet 2.0**60 in float64 on the sort path
        check("isin", big, np.arange(12.0))
    raises_like("isin", np.array([1, 2], np.int8), np.array([-100, 100], np.int8), kind="table")
    raises_like("isin", np.array([1], np.uint64), np.array([0, 2**64 - 1], np.uint64),
                kind="table")
    with pytest.warns(DeprecationWarning, match="in1d"):
        got = tnp.in1d(lz(D["i64"]), [1, 2])
    same(got, np.isin(D["i64"], [1, 2]).ravel())


# ------------------------------------------------------------------ quantiles and medians

@pytest.mark.parametrize("dt", ["f64", "f32", "i64"])
def test_quantiles(dt):
    a = D[dt][:, :5] if dt == "i64" else np.nan_to_num(D[dt], posinf=7.0)
    check("percentile", a, 30)
    check("percentile", a, [10, 50.5, 100], axis=1)
    check("quantile", a, 0.25, axis=0, keepdims=True)
    check("quantile", a, np.array([0.5, 0.7]), axis=(0, 1))
    check("quantile", a, [[0.1, 1.0]], axis=1)  # 2-d q
    check("quantile", a, 1)  # integer q: the order statistic itself, in a's dtype
    check("median", a)
    check("median", a, axis=1, keepdims=True)
    check("median", a[:, :5], axis=(0, 1))


def test_quantiles_with_nan_and_inf():
    f = D["f64"]
    check("percentile", f, [20, 80], axis=1)  # rows with NaN give NaN
    check("median", f, axis=0)
    check("median", D["f32"])
    check("quantile", np.array([1.0, np.inf]), 1.0)  # NumPy's lerp gives NaN here
    check("quantile", D["f32"][1], np.float64(0.5))  # NaN-free: float64
    check("quantile", D["f32"][0], np.float64(0.5))  # with NaN: the array's float32 NaN
    check("median", np.array([], np.float32))
    check("median", np.array([[1.5, 2], [7, 8]], np.float16), axis=1)


def test_nan_quantiles():
    f = D["f64"].copy()
    f[3, :] = np.nan  # an all-NaN row
    for name, q in (("nanpercentile", [25, 50]), ("nanquantile", 0.4)):
        for axis in (None, 0, 1):
            check(name, f, q, axis=axis)
            check(name, f.astype(np.float32), q, axis=axis, keepdims=True)
    check("nanquantile", D["i64"], [0.3, 1.0], axis=1)
    check("nanquantile", f, 1, axis=1)  # integer q
    check("nanquantile", f.reshape(2, 2, 6), [[0.2, 0.6]], axis=(0, 2))  # NumPy's layout
    check("nanpercentile", np.zeros((0, 3)), 50, axis=0)
    # float32 with a float64 q array: float64, unless the first slice is all NaN (NumPy)
    check("nanquantile", f.astype(np.float32), np.array([0.5]), axis=1)
    check("nanquantile", f[::-1].astype(np.float32), np.array([0.5]), axis=1)


def test_nanmedian_paths():
    f = D["f64"].copy()
    f[3, :] = np.nan
    for axis in (None, 0, 1, (0, 1)):
        check("nanmedian", f, axis=axis)
    check("nanmedian", f.astype(np.float32), axis=1, keepdims=True)
    check("nanmedian", D["i64"], axis=1)
    # odd counts: x + x overflows in float16 along a short axis, not in the 1-d path
    h = np.array([[60000, np.nan, 60000, 60000]], np.float16)
    check("nanmedian", h, axis=1)
    check("nanmedian", h)
    long = np.tile(np.array([[1.0, np.nan, 3.0, 2.0]]), (2, 150))  # 600 long: 1-d path
    long[1] = np.nan
    check("nanmedian", long, axis=1)


# ------------------------------------------------------------------ histogram and friends

def test_histogram():
    f = np.nan_to_num(D["f64"], posinf=4.0)
    check("histogram", f)
    check("histogram", f.astype(np.float32), bins=3, range=(-1, 1.5))
    check("histogram", D["f64"], bins=4, range=(-2, 2), density=True)  # NaN, inf dropped
    check("histogram", D["i64"], bins=[-3, 0, 0.5, 2, 9])
    check("histogram", f, bins=[-2, 0, 1, 3], weights=D["i64"].astype(np.float32))
    check("histogram", D["i64"], bins=5, weights=D["f64"])
    check("histogram", D["i64"], bins=5, weights=D["i64"].astype(np.int8), density=True)
    check("histogram", np.array([2, 2, 2]), bins=2)  # one value: edges widened by 0.5
    check("histogram", D["bool"], bins=2)
    with pytest.warns(RuntimeWarning, match="Converting input from bool"):
        tnp.histogram(lz(D["bool"]))


def test_histogram_weighted_blocks():
    """Weighted sums per block of 65536 values, added in the weights' dtype as NumPy does."""
    rng = np.random.default_rng(1)
    a = rng.random(70000)
    w = rng.standard_normal(70000).astype(np.float32)
    check("histogram", a, bins=7, weights=w)
    check("histogram", a, bins=[0, 0.25, 0.5, 1], weights=w)


def test_digitize_bincount_nanarg():
    x = D["f64"]
    check("digitize", x, [-1.0, 0.0, 1.0])
    check("digitize", x, [1.0, 0.0, -1.0], right=True)
    check("digitize", D["i64"], [])
    check("bincount", np.array([0, 3, 3, 1]), weights=np.array([0.5, 1, 2, 3]), minlength=6)
    f = D["f64"]
    check("nanargmax", f)
    check("nanargmin", f, axis=1)
    check("nanargmax", f, axis=0, keepdims=True)
    check("nanargmin", D["i64"], axis=0)


# ------------------------------------------------------------------ ndarray methods

def test_inplace_sort_writes_through_views():
    base = D["f64"].copy()
    t = tnp.asarray(base)
    view = t[:, ::2]
    assert view.sort(axis=0) is None
    base[:, ::2].sort(axis=0)
    same(t, base)
    t.partition(2)
    base.partition(2)
    same(t, base)
    t[1].sort(stable=True)
    base[1].sort(stable=True)
    same(t, base)


def test_methods():
    a = D["i64"]
    t = tnp.asarray(a)
    same(t.argsort(axis=0), a.argsort(axis=0))
    same(t.argpartition(2, axis=None), a.argpartition(2, axis=None))
    s = tnp.sort(t[0])
    same(s.searchsorted([0, 2], side="right"), np.sort(a[0]).searchsorted([0, 2], "right"))
    same(t.cumsum(axis=1), a.cumsum(axis=1))
    same(t.cumprod(dtype=np.float32), a.cumprod(dtype=np.float32))


# ------------------------------------------------------------------ errors and laziness

@pytest.mark.parametrize("name,args,kw", [
    ("sort", (D["f64"],), {"axis": 2}),
    ("sort", (D["f64"],), {"kind": "fast"}),
    ("sort", (D["f64"],), {"kind": "stable", "stable": True}),
    ("sort", (np.float64(1),), {}),
    ("partition", (D["f64"], 6), {}),
    ("partition", (D["f64"], [1, -7]), {}),
    ("partition", (D["f64"], 1.5), {}),
    ("partition", (D["f64"], True), {}),
    ("partition", (D["f64"], 1), {"kind": "quick"}),
    ("argpartition", (D["f64"], 1), {"axis": 3}),
    ("searchsorted", (D["f64"], 1.0), {}),
    ("searchsorted", (D["f64"][0], 1.0), {"side": "middle"}),
    ("searchsorted", (D["f64"][0], 1.0), {"sorter": np.array([0, 1])}),
    ("searchsorted", (D["f64"][0], 1.0), {"sorter": np.zeros(6)}),
    ("cumsum", (D["f64"],), {"axis": 2}),
    ("isin", (D["f64"], [1.0]), {"kind": "table"}),
    ("isin", (D["i64"], [1]), {"kind": "hash"}),
    ("percentile", (D["f64"], 101), {}),
    ("quantile", (D["f64"], [[[0.5]]]), {}),
    ("quantile", (D["bool"], 0.5), {}),
    ("median", (D["f64"],), {"axis": (0, 0)}),
    ("digitize", (D["f64"], [1.0, 3.0, 2.0]), {}),
    ("digitize", (D["f64"], [[1.0]]), {}),
    ("histogram", (D["f64"],), {}),  # autodetected range of [nan, nan]
    ("histogram", (D["i64"],), {"bins": 0}),
    ("histogram", (D["i64"],), {"bins": [3, 1]}),
    ("histogram", (D["i64"],), {"range": (2, 1)}),
    ("histogram", (D["i64"],), {"weights": np.ones(3)}),
    ("nanargmax", (D["f64"],), {"axis": 3}),
])
def test_numpy_errors(name, args, kw):
    raises_like(name, *args, **kw)


def test_inplace_errors_and_nan_slices():
    t = tnp.broadcast_to(tnp.asarray(np.arange(3.0)), (2, 3))
    with pytest.raises(ValueError, match="sort array is read-only"):
        t.sort()
    with pytest.raises(ValueError, match="partition array is read-only"):
        t.partition(1)
    with pytest.raises(TypeError):
        tnp.asarray(np.arange(3.0)).sort(axis=None)
    f = D["f64"].copy()
    f[:, 2] = np.nan
    raises_like("nanargmin", f, axis=0)  # All-NaN slice encountered


def test_lazy_ones_record_without_evaluating():
    f, i = tnp.asarray(D["f64"]), tnp.asarray(D["i64"])
    before = tracer.stats().evaluations
    out = [tnp.sort(f * 2, axis=0), tnp.argsort(i), tnp.partition(f, (1, 3)),
           tnp.argpartition(i, 2, axis=None), tnp.searchsorted(tnp.sort(f[0]), f),
           tnp.cumsum(i, axis=1), tnp.cumprod(f), tnp.nancumsum(f), tnp.isin(i, i[0]),
           tnp.isin(f, [0.5, 1.0], assume_unique=True), tnp.percentile(f, [10, 90], axis=1),
           tnp.quantile(i, 0.3), tnp.median(f, axis=0), tnp.nanmedian(f, axis=1),
           tnp.nanmedian(f), tnp.nanquantile(f, 0.5, axis=0), tnp.nanpercentile(f, [5, 50]),
           tnp.histogram(f, bins=4, range=(-1, 1))[0], tnp.histogram(i, bins=[0, 1, 3])[0],
           tnp.digitize(f, [0.0, 1.0]), tnp.nanargmax(i, axis=1)]
    i.sort(axis=0)
    i.partition(1)
    assert tracer.stats().evaluations == before
    tracer.evaluate(*out, i)  # one evaluation, the verifier on (tests/conftest.py)
    assert tracer.stats().evaluations == before + 1


@pytest.mark.lazy
def test_library_ops_under_a_memory_budget():
    x = np.random.default_rng(2).standard_normal((64, 128))
    a = tnp.asarray(x)
    r = tnp.sort(a * 2, axis=1).sum(1) + tnp.cumsum(a, axis=1)[:, -1]
    with tracer.memory_budget(10**6):
        got = np.asarray(r)
    np.testing.assert_allclose(got, np.sort(x * 2, axis=1).sum(1) + np.cumsum(x, axis=1)[:, -1])
    assert 0 < tracer.stats().measured_peak_bytes <= 10**6
    with pytest.raises(tracer.MemoryBudgetError):
        with tracer.memory_budget(10**4):
            np.asarray(tnp.sort(a * 3, axis=1))
