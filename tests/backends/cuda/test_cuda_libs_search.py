"""cuda/libs.py's partitions and searchsorted on the cuda backend. First the dispatch, through
the fake CuPy (tests/fake_cupy.py) on the simulator: which path, what the library is handed,
the counters. Then the semantics: libs.py's own code run with NumPy as the array module (it is
xp-generic: CuPy on a GPU) over dtype pairs, sides, NaNs, ties and sorters. What CuPy's own
kernels do is not tested here (no GPU); libs.py's docstring says which of their rules this code
relies on."""
from __future__ import annotations

import itertools

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels.cuda import libs
from tracer.ir.stats import STATS

from fake_cupy import calls, rand, run, use_fake

# recorded nodes are the subject (on the simulator)
pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim")]


@pytest.fixture
def fake(monkeypatch):
    return use_fake(monkeypatch)


def test_without_the_library_the_host_runs_them():
    """The simulator (or no CuPy): NumPy's own answers through the host, counted."""
    assert not libs.usable()
    h = rand((7,), numpy.float64)
    for fn, ref in [(lambda x: np.partition(x, 3), lambda x: numpy.partition(x, 3)),
                    (lambda x: np.argpartition(x, -2), lambda x: numpy.argpartition(x, -2)),
                    (lambda x: np.searchsorted(numpy.arange(3.0), x, "right"),
                     lambda x: numpy.searchsorted(numpy.arange(3.0), x, "right"))]:
        got, d = run(fn, h)
        numpy.testing.assert_array_equal(got, ref(h))
        assert (d.library_calls, d.library_fallbacks) == (0, 1)


def _is_partition(got, x, kth, axis=-1):
    """got is a partition of x at every kth as NumPy promises one: the kth values in their
    sorted places, no greater value before, no smaller one after (NaN as the greatest)."""
    s = numpy.sort(x, axis=axis)
    got, s = numpy.moveaxis(got, axis, -1), numpy.moveaxis(s, axis, -1)
    numpy.testing.assert_array_equal(numpy.sort(got, -1), s)  # the same values
    for k in numpy.atleast_1d(kth) % x.shape[axis]:
        numpy.testing.assert_array_equal(got[..., k], s[..., k])
        # (NaN as inf and inf as the greatest float: the order stays)
        g, kv = (numpy.nan_to_num(y, nan=numpy.inf) for y in (got, s[..., k:k + 1]))
        assert not (g[..., :k] > kv).any() and not (g[..., k + 1:] < kv).any()


def test_partitions(fake, no_host):
    h = numpy.array([3.0, -numpy.nan, 1.0, numpy.nan, 1.0, -0.0, 0.0, -numpy.inf], numpy.float32)
    for kth in (2, -1, (0, 3, 6)):
        got, d = run(lambda x: np.partition(x, kth), h)
        _is_partition(got, h, kth)
        assert (d.library_calls, d.library_fallbacks, d.kernels_launched) == (1, 0, 0)
        got, d = run(lambda x: np.argpartition(x, kth), h)
        assert got.dtype == numpy.intp and d.library_calls == 1
        _is_partition(h[got], h, kth)
    assert not numpy.signbit(got[numpy.isnan(got)]).any()  # (nan_last ran on the keys)
    h2 = rand((4, 5), numpy.int32)
    got, d = run(lambda x: np.partition(x, [1, 3], axis=0), h2)
    _is_partition(got, h2, [1, 3], axis=0)
    got, _ = run(lambda x: np.argpartition(x, 7, axis=None), h2)
    _is_partition(h2.ravel()[got], h2.ravel(), 7)
    assert calls(fake, "argsort")[-1][4]["axis"] == 0  # (the flattened array's one axis)


def test_median_partitions_on_the_device(fake):
    h = rand((6, 5), numpy.float64)
    got, d = run(lambda x: np.median(x, axis=1), h)
    numpy.testing.assert_array_equal(got, numpy.median(h, axis=1))
    assert (d.library_calls, d.library_fallbacks) == (1, 0) and calls(fake, "copyto")


def test_searchsorted(fake, no_host):
    a = numpy.array([-numpy.inf, -1.0, 0.0, 0.0, 2.5, numpy.inf, numpy.nan, numpy.nan])
    v = numpy.array([[numpy.nan, -0.0, 2.5], [numpy.inf, -9.0, 1e300]])
    for side in ("left", "right"):
        got, d = run(lambda x, y: np.searchsorted(x, y, side=side), a, v)
        numpy.testing.assert_array_equal(got, numpy.searchsorted(a, v, side=side))
        assert got.dtype == numpy.intp and got.shape == (2, 3)
        assert (d.library_calls, d.library_fallbacks, d.kernels_launched, d.host_waits) == \
            (1, 0, 0, 1)  # (the one wait: the result's way down)
        assert calls(fake, "searchsorted")[-1][4] == {"side": side}
    # compared in NumPy's common dtype, cast before the call: int8 with float64 in float64,
    # int64 with uint64 in float64 (2**53 + 1 rounds to 2**53)
    for ha, hv in [(numpy.arange(5, dtype=numpy.int8), numpy.array([1.5, 300.0])),
                   (numpy.array([2**53, 2**53 + 1]), numpy.array([2**53 + 1], numpy.uint64))]:
        got, d = run(np.searchsorted, ha, hv)
        numpy.testing.assert_array_equal(got, numpy.searchsorted(ha, hv))
        x, y = calls(fake, "searchsorted")[-1][3]
        assert x.dtype == y.dtype == numpy.float64 and d.library_calls == 1
    assert numpy.searchsorted(numpy.array([2**53, 2**53 + 1]), numpy.uint64(2**53 + 1)) == 0


def test_searchsorted_with_a_sorter(fake, no_host):
    ha = rand((9,), numpy.int64)
    perm = numpy.argsort(ha, kind="stable")
    hv = numpy.array([-3, 0, 0, 5, 20])
    got, d = run(lambda a, v, s: np.searchsorted(a, v, "right", s), ha, hv, perm)
    numpy.testing.assert_array_equal(got, numpy.searchsorted(ha, hv, "right", perm))
    # the range check's count read back: one more wait and 8 bytes down, no host round trip
    assert (d.library_calls, d.host_waits, d.d2h_copies, d.d2h_bytes) == (1, 2, 2, 8 + 5 * 8)
    assert [c[0] for c in fake.log if c[0] != "wrap"] == ["count_nonzero", "searchsorted",
                                                           "copyto"]


def test_searchsorted_sorter_out_of_range_raises_numpys_error(fake):
    a, s = np.asarray(numpy.arange(6.0)), np.asarray(numpy.array([0, 1, 2, 3, 4, 99]))
    tracer.reset_stats()
    with pytest.raises(ValueError, match="Sorter index out of range"):
        numpy.asarray(np.searchsorted(a, 9.0, sorter=s))
    assert (STATS.library_calls, STATS.library_fallbacks) == (0, 1)
    assert libs._BROKEN == {} and not calls(fake, "searchsorted")  # asked again next time
    got, d = run(lambda a, s: np.searchsorted(a, 2.0, sorter=s), numpy.arange(6.0),
                  numpy.arange(6))
    assert got == 2 and d.library_calls == 1


def test_complex_searchsorted_stays_on_the_host(fake):
    ha = numpy.array([1 + 1j, 2 + 0j])
    got, d = run(lambda a: np.searchsorted(a, 1.5), ha)
    assert got == numpy.searchsorted(ha, 1.5)
    assert (d.library_calls, d.library_fallbacks) == (0, 1) and fake.log == []


# ---------------------------------------------------------------- the semantics, NumPy as xp

DTYPES = ["bool", "int8", "uint8", "int64", "uint64", "float32", "float64"]


def _values(dt, n, rng):
    dt = numpy.dtype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, n).astype(dt)
    if dt.kind in "iu":
        lo = 0 if dt.kind == "u" else -100
        x = rng.integers(lo, 100, n).astype(dt)
        if dt.itemsize == 8:  # values beyond float64's integers
            x[:2] = [2**53 + 1, 2**53] if dt.kind == "i" else [2**63 + 1, 2**53 + 1]
        return x
    x = numpy.round(rng.standard_normal(n) * 3).astype(dt)  # rounded: ties
    x[:4] = [numpy.nan, numpy.inf, -0.0, -numpy.nan]
    return x


def _search(a, v, side, sorter=None):
    """libs.searchsorted with NumPy as xp, on the node tracer records for these inputs."""
    args = (a, v) if sorter is None else (a, v, sorter)
    n = np.searchsorted(*(np.asarray(x) for x in args[:2]), side,
                        None if sorter is None else np.asarray(sorter))._node
    out = numpy.empty(v.shape, numpy.intp)
    libs.searchsorted(numpy, n, list(args), out)
    return out


@pytest.mark.parametrize("da,dv", list(itertools.product(DTYPES, DTYPES)))
def test_searchsorted_matches_numpy(da, dv):
    rng = numpy.random.default_rng(0)
    a = numpy.sort(_values(da, 16, rng))
    v = _values(dv, 12, rng).reshape(3, 4)
    for side in ("left", "right"):
        numpy.testing.assert_array_equal(_search(a, v, side),
                                         numpy.searchsorted(a, v, side=side), err_msg=side)


@pytest.mark.parametrize("dt", ["int64", "float32"])
def test_searchsorted_with_each_sorter_dtype(dt):
    rng = numpy.random.default_rng(1)
    a, v = _values(dt, 10, rng), _values(dt, 7, rng)
    for sdt in (numpy.int32, numpy.uint16, numpy.intp):
        perm = numpy.argsort(a, kind="stable").astype(sdt)
        for side in ("left", "right"):
            numpy.testing.assert_array_equal(_search(a, v, side, perm),
                                             numpy.searchsorted(a, v, side, perm))


@pytest.mark.parametrize("bad", [99, -1])
def test_sorter_out_of_range_is_declined(bad):
    a = numpy.arange(6.0)
    s = numpy.array([0, 1, 2, 3, 4, bad])
    with pytest.raises(libs.Declined):
        _search(a, numpy.array(9.0), "left", s)


def test_empty_arrays():
    e = numpy.zeros(0)
    numpy.testing.assert_array_equal(_search(e, numpy.array([1.0, numpy.nan]), "left"), [0, 0])
    assert _search(e, numpy.array([1.0]), "right", numpy.zeros(0, numpy.intp)).tolist() == [0]


@pytest.mark.parametrize("dt", ["float32", "float64", "int16", "bool"])
def test_partitions_are_numpys_partitions(dt):
    """The device's partition (a sort after nan_last) against NumPy's contract at every kth,
    and the kth values against np.partition's."""
    rng = numpy.random.default_rng(2)
    x = _values(dt if dt != "int16" else "int8", 40, rng).astype(dt).reshape(5, 8)
    rng.shuffle(x, axis=1)
    for axis, kth in [(-1, 0), (-1, 7), (-1, [1, 4, 6]), (0, -1), (0, (0, 2))]:
        n = np.partition(np.asarray(x), kth, axis=axis)._node
        got = numpy.empty_like(x)
        libs._CALLS["partition"](numpy, n, [x], got)
        want = numpy.partition(x, kth, axis=axis)
        idx = numpy.empty(x.shape, numpy.intp)
        libs._CALLS["argpartition"](numpy, np.argpartition(np.asarray(x), kth, axis)._node, [x],
                                    idx)
        for k in numpy.atleast_1d(kth):
            sel = [slice(None)] * 2
            sel[axis] = k
            numpy.testing.assert_array_equal(got[tuple(sel)], want[tuple(sel)])
            numpy.testing.assert_array_equal(numpy.take_along_axis(x, idx, axis)[tuple(sel)],
                                             want[tuple(sel)])
        # the sides: a sorted array is partitioned at every kth (NumPy's argsort here is not
        # stable, CuPy's is: the indices are checked through the values they give)
        numpy.testing.assert_array_equal(got, numpy.sort(x, axis))
        numpy.testing.assert_array_equal(numpy.take_along_axis(x, idx, axis), got)
        assert (numpy.sort(idx, axis) == numpy.arange(x.shape[axis]).reshape(
            (-1, 1) if axis == 0 else (1, -1))).all()
