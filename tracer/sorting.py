"""Sorting, searching, cumulative sums and products, and set functions, with NumPy 2.x's results,
dtypes and errors. The order statistics (percentile, quantile, median and their nan versions,
histogram, bincount, digitize, nanargmax, nanargmin) are in tracer/orderstats.py, which
builds on this module.

Lazy: `sort`, `argsort`, `partition`, `argpartition`, `searchsorted`, `cumsum`, `cumprod` are
library ops (ir/library_ops.py): recorded, then run by NumPy's own routine between kernels, so
the tie order of unstable sorts, NaN placement (last) and accumulation order are NumPy's.
`nancumsum` and `nancumprod` replace NaN lazily first. `isin` (and NumPy 2.3's deprecated
`in1d`) is lazy: the test values are sorted, the elements searched in them and compared with
the value found, in the dtype NumPy compares in (with `assume_unique=True`, NumPy's own
sort-path steps). `isin` runs NumPy (fallback) where its answer depends on which algorithm
NumPy picks from the data: integer arrays with `assume_unique=True`, uint64 mixed with signed
integers, and 64-bit integer elements against float test values on NumPy's sort path;
`kind="table"` with signed or 64-bit test values evaluates their range, which decides NumPy's
errors.

Evaluate first (the result's length depends on the data): `unique`, `intersect1d`, `union1d`,
`setdiff1d`, `setxor1d` run NumPy on the evaluated inputs and return realized lazy arrays.

`order=` and `out=` run NumPy (fallback); a lazy `out` receives the result.

Methods: `.sort()` and `.partition()` write the result back through the view, as NumPy sorts
in place; `.argsort()`, `.argpartition()`, `.searchsorted()`, `.cumsum()`, `.cumprod()` are
the functions above.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from . import graph as G
from . import reductions as R
from .array import asarray_node, evaluate, lazy, ndarray
from .creation import full, zeros
from .manipulation import concatenate, ravel
from .recording import traced
from .fallback import _to_host, _wrap, fallback_call, fallback_method
from .indexing import setitem
from .store import to_numpy
from .statfuncs import _replace_nan
from .ufuncs import apply_ufunc


def _u(uf, *args):
    return apply_ufunc(uf, args)


def _op(name: str, inputs, **attrs) -> ndarray:
    return ndarray._from_node(G._typed(name, tuple(x._node for x in inputs),
                                       tuple(attrs.items())))


def _probe(a: ndarray, writeable: bool = True) -> np.ndarray:
    """A one-element stand-in of a's dtype and rank: NumPy's own errors for axis, kind and the
    like come from running the call on it."""
    p = np.zeros((1,) * a.ndim, a.dtype)
    p.flags.writeable = writeable
    return p


def _along(a: ndarray, axis) -> tuple[ndarray, int]:
    """The array and axis NumPy works along: axis=None, and any axis of a 0-d array (once the
    probe accepted it), flatten."""
    if axis is None or a.ndim == 0:
        return ravel(a), 0
    return a, normalize_axis_index(axis, a.ndim)


def _numpy_out(name: str, fn, args: tuple, kwargs: dict, out):
    """NumPy's computation into `out` (its loop dtype may follow out's): runs NumPy
    (fallback); a lazy `out` receives the result."""
    if not isinstance(out, ndarray):
        fallback_call(name, fn, args, {**kwargs, "out": out})
        return out
    host = np.array(to_numpy(out))
    host.flags.writeable = out._view.writeable  # NumPy's own error for a read-only out
    fallback_call(name, fn, args, {**kwargs, "out": host})
    setitem(out, Ellipsis, host)
    return out


# ------------------------------------------------------------------ sorting

def _sort_kind(kind, stable):
    return "stable" if stable else kind


def _sort_op(name: str, npfn, a, axis, kind, order, stable):
    """sort or argsort: NumPy's checks on a stand-in, then the library op (order= runs NumPy)."""
    if order is not None:
        return fallback_call(name, npfn, (a, axis, kind, order), {"stable": stable})
    a = lazy(a)
    npfn(_probe(a), axis, kind, stable=stable)
    x, ax = _along(a, axis)
    return _op(name, (x,), axis=ax, kind=_sort_kind(kind, stable))


@traced
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    return _sort_op("sort", np.sort, a, axis, kind, order, stable)


@traced
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    return _sort_op("argsort", np.argsort, a, axis, kind, order, stable)


def _kth(a: ndarray, kth, run) -> int | tuple[int, ...]:
    """kth checked as NumPy does: `run(kth_stand_in)` raises NumPy's errors for kind, axis and
    kth's type (on a one-element probe, with zeros for kth); the bounds need the axis length.
    `run` returns the axis length (the flat size for axis=None)."""
    k = np.asarray(kth)
    n = run(np.zeros_like(k) if k.ndim <= 1 else kth)
    ks = tuple(int(v) for v in k.astype(np.intp).ravel())
    if a.size:  # NumPy checks bounds only for non-empty arrays
        for v in ks:
            v = v + n if v < 0 else v
            if not 0 <= v < n:
                raise ValueError(f"kth(={v}) out of bounds ({n})")
    return ks if k.ndim else ks[0]


def _partition_op(name: str, a: ndarray, kth, axis, kind, probe_fn, writeable=True) -> ndarray:
    def run(k):
        probe_fn(_probe(a, writeable), k, axis, kind)
        return a.size if axis is None or a.ndim == 0 else a.shape[normalize_axis_index(axis,
                                                                                      a.ndim)]
    ks = _kth(a, kth, run)
    x, ax = _along(a, axis)
    return _op(name, (x,), kth=ks, axis=ax, kind=kind)


@traced
def partition(a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        return fallback_call("partition", np.partition, (a, kth, axis, kind, order), {})
    return _partition_op("partition", lazy(a), kth, axis, kind, np.partition)


@traced
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        return fallback_call("argpartition", np.argpartition, (a, kth, axis, kind, order), {})
    return _partition_op("argpartition", lazy(a), kth, axis, kind, np.argpartition)


@traced
def searchsorted(a, v, side="left", sorter=None):
    """`v` is compared in the dtype NumPy finds for it (a Python float as float64). A sorter
    index out of range raises NumPy's ValueError when the result is evaluated, as NumPy raises
    it only where the search reads it."""
    a = lazy(a)
    vn = asarray_node(v)
    s = None if sorter is None else lazy(sorter)
    ps = None if s is None else np.zeros((1,) * s.ndim, s.dtype)
    np.searchsorted(_probe(a), np.zeros((), vn.dtype), side=side, sorter=ps)
    if s is not None and s.size != a.size:
        raise ValueError("sorter.size must equal a.size")
    ins = (a._node, vn) if s is None else (a._node, vn, s._node)
    return ndarray._from_node(G._typed("searchsorted", ins, (("side", side),)))


# ------------------------------------------------------------------ cumulative sums, products

def _cumulative(name: str, a, axis, dtype, out):
    if out is not None:
        return _numpy_out(name, getattr(np, name), (a,), {"axis": axis, "dtype": dtype}, out)
    a = lazy(a)
    dt = getattr(np, name)(_probe(a), axis=axis, dtype=dtype).dtype  # NumPy's dtype rules
    x, ax = _along(a, axis)
    return _op(name, (x,), axis=ax, dtype=dt.str)


@traced
def cumsum(a, axis=None, dtype=None, out=None):
    return _cumulative("cumsum", a, axis, dtype, out)


@traced
def cumprod(a, axis=None, dtype=None, out=None):
    return _cumulative("cumprod", a, axis, dtype, out)


@traced
def nancumsum(a, axis=None, dtype=None, out=None):
    return cumsum(_replace_nan(lazy(a), 0)[0], axis, dtype, out)


@traced
def nancumprod(a, axis=None, dtype=None, out=None):
    return cumprod(_replace_nan(lazy(a), 1)[0], axis, dtype, out)


# ------------------------------------------------------------------ set functions

def _eager(fn):
    """A NumPy function whose result's length depends on the data: run on evaluated inputs."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        return _wrap(fn(*_to_host(args), **_to_host(kwargs)))
    return traced(run)


unique = _eager(np.unique)
intersect1d = _eager(np.intersect1d)
union1d = _eager(np.union1d)
setdiff1d = _eager(np.setdiff1d)
setxor1d = _eager(np.setxor1d)


def _member(ar1: ndarray, ar2: ndarray, dt) -> ndarray:
    """ar1 in ar2, comparing in dtype dt: each value looked up in the sorted ar2."""
    x = ar1.astype(dt, copy=False)
    t = sort(ar2.astype(dt, copy=False))
    i = _u(np.minimum, searchsorted(t, x), ar2.size - 1)
    return _u(np.equal, t[i], x)


def _isin_sorted(ar1: ndarray, ar2: ndarray, invert: bool) -> ndarray:
    """NumPy's sort path with assume_unique=True, step by step: with duplicates its answer is
    not membership, and it is NumPy's."""
    ar = concatenate((ar1, ar2))
    order = argsort(ar, kind="mergesort")
    sar = ar[order]
    flag = _u(np.not_equal if invert else np.equal, sar[1:], sar[:-1])
    flag = concatenate((flag, np.array([invert])))
    ret = zeros(ar.shape, np.bool_)
    setitem(ret, order, flag)
    return ret[:ar1.size]


def _isin(element, test_elements, assume_unique, invert, kind, name="isin"):
    kw = dict(assume_unique=assume_unique, invert=invert, kind=kind)
    try:
        ar1, ar2 = ravel(lazy(element)), ravel(lazy(test_elements))
    except TypeError:  # a set, strings or objects: NumPy compares them as objects
        return fallback_call(name, np.isin, (element, test_elements), kw).reshape(-1)
    if kind not in {None, "sort", "table"}:
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    ints = ar1.dtype.kind in "uib" and ar2.dtype.kind in "uib"
    if kind == "table" and not ints:
        raise ValueError("The 'table' method is only supported for boolean or integer arrays. "
                         "Please select 'sort' or None for kind.")
    dt = np.result_type(ar1.dtype, ar2.dtype)
    # NumPy's answer depends on the algorithm it picks from the data: uint64 with signed
    # integers compares in float64 on its sort path only, and assume_unique changes the
    # answer (for non-unique input) off its table path
    if ints and (dt.kind == "f" or assume_unique and kind is None):
        return fallback_call(name, np.isin, (ar1, ar2), kw)
    if ar2.size == 0:
        return full(ar1.shape, bool(invert), np.bool_)
    if kind == "table" and (ar2.dtype.kind == "i" or ar2.dtype.itemsize == 8):
        hi, lo = evaluate(R.max(ar2), R.min(ar2))
        span = int(hi) - int(lo)
        if span > np.iinfo(ar2.dtype).max:
            raise RuntimeError(
                "You have specified kind='table', but the range of values in `ar2` or `ar1` "
                "exceed the maximum integer of the datatype. Please set `kind` to None or "
                "'sort'.")
        if span >= np.iinfo(np.intp).max:  # NumPy's lookup table would have span + 1 entries
            raise ValueError("Maximum allowed dimension exceeded")
    if ar1.size == 0:
        return full(ar1.shape, False, np.bool_)
    loop = ar2.size < 10 * ar1.size ** 0.145  # NumPy compares value by value there
    if assume_unique and kind != "table" and not loop:
        return _isin_sorted(ar1, ar2, invert)
    if not loop and kind != "table" and ar1.dtype.kind in "iu" and ar1.dtype.itemsize == 8 \
            and dt.kind in "fc":  # NumPy's sort path: distinct values of ar1 may meet in dt
        return fallback_call(name, np.isin, (ar1, ar2), kw)
    found = _member(ar1, ar2, dt)
    return _u(np.logical_not, found) if invert else found


@traced
def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    shape = element.shape if isinstance(element, ndarray) else np.shape(element)
    return _isin(element, test_elements, assume_unique, invert, kind).reshape(shape)


@traced
def in1d(ar1, ar2, assume_unique=False, invert=False, *, kind=None):
    """NumPy 2.0-2.3's deprecated in1d (removed in NumPy 2.4): isin of the flattened input."""
    warnings.warn("`in1d` is deprecated. Use `np.isin` instead.", DeprecationWarning,
                  stacklevel=2)
    return _isin(ar1, ar2, assume_unique, invert, kind, "in1d")


# ------------------------------------------------------------------ ndarray methods

def _method_fallback(self, name, *args, **kwargs):
    return fallback_method(self, name)(*args, **kwargs)


@traced
def _sort_method(self, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        return _method_fallback(self, "sort", axis, kind, order, stable=stable)
    _probe(self, self._view.writeable).sort(axis, kind, stable=stable)
    x, ax = _along(self, axis)
    setitem(self, Ellipsis, _op("sort", (x,), axis=ax, kind=_sort_kind(kind, stable)))


@traced
def _partition_method(self, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        return _method_fallback(self, "partition", kth, axis, kind, order)
    res = _partition_op("partition", self, kth, axis, kind,
                        lambda p, k, ax, kd: p.partition(k, ax, kd), self._view.writeable)
    setitem(self, Ellipsis, res)


METHODS = {
    "sort": _sort_method,
    "argsort": lambda self, axis=-1, kind=None, order=None, *, stable=None:
        argsort(self, axis, kind, order, stable=stable),
    "partition": _partition_method,
    "argpartition": lambda self, kth, axis=-1, kind="introselect", order=None:
        argpartition(self, kth, axis, kind, order),
    "searchsorted": lambda self, v, side="left", sorter=None: searchsorted(self, v, side, sorter),
    "cumsum": lambda self, axis=None, dtype=None, out=None: cumsum(self, axis, dtype, out),
    "cumprod": lambda self, axis=None, dtype=None, out=None: cumprod(self, axis, dtype, out),
}

NAMES: tuple[str, ...] = (
    "sort", "argsort", "partition", "argpartition", "searchsorted", "cumsum", "cumprod",
    "nancumsum", "nancumprod", "unique", "isin", "in1d", "intersect1d", "union1d", "setdiff1d",
    "setxor1d")
