"""Order statistics with NumPy 2.x's results, dtypes and errors, composed of tracer's lazy ops
(the sorts and searches of tracer/sorting.py among them) step by step as NumPy computes them
(numpy/lib/_function_base_impl.py, _nanfunctions_impl.py, _histograms_impl.py), so rounding
and dtypes follow NumPy's. Results NumPy returns as scalars are lazy 0-d arrays here.

- `percentile`, `quantile`, `median`: lazy. Which order statistics NumPy reads depends only on
  shapes and q, so a lazy partition at NumPy's positions gives them; NaN results where NumPy
  gives NaN. A lazy q is evaluated (NumPy checks its range first). One corner has a dtype that
  depends on the data: a 0-d result of a float array with a non-weak q of a wider dtype is
  the array's NaN where there is one; that check evaluates.
- `nanpercentile`, `nanquantile`, `nanmedian`: lazy, from a lazy sort (NaN last) and each
  slice's count of non-NaN values, following NumPy's per-path arithmetic (nanmedian's along a
  short axis differs from its 1-d path). No "All-NaN slice" warnings (they need the data). A
  float32/float16 array with a float64 q array has NumPy's data-dependent dtype (the array's
  when the first slice is all NaN): that check evaluates.
- `digitize`: lazy searchsorted; a lazy `bins` is evaluated (NumPy checks monotonicity).
- `histogram`: counts are lazy (NumPy's bin arithmetic, then a scatter-add or a sorted search;
  weighted sums in NumPy's order). Evenly spaced bins without `range` evaluate the data's min
  and max (NumPy builds the edges from them and raises for a non-finite range); a lazy `bins`
  sequence is evaluated. `density` divides by a lazy sum (float sums as tracer's sum).
- `bincount`: evaluates first (its length depends on the data).
- `nanargmax`, `nanargmin`: lazy, but NumPy's "All-NaN slice encountered" check evaluates.
- Run NumPy (fallback): methods other than "linear", `weights=`, `out=` (a lazy `out` receives
  the result), string `bins`, complex histogram data or weights.
"""
from __future__ import annotations

import warnings

import numpy as np
from numpy.lib import _function_base_impl as _fb
from numpy.lib import _histograms_impl as _hist
from numpy.lib.array_utils import normalize_axis_tuple

from . import reductions as R
from .array import evaluate, lazy, ndarray
from .creation import arange, asarray, zeros
from .manipulation import concatenate, moveaxis, ravel
from .selection import where
from .recording import traced
from .fallback import fallback_call
from .gather import ufunc_at_or_numpy
from .store import to_numpy
from .sorting import _eager, _numpy_out, argsort, cumsum, partition, searchsorted, sort
from .statfuncs import _replace_nan, diff, nanmean
from .ufuncs import apply_ufunc


def _u(uf, *args, **kw):
    return apply_ufunc(uf, args, **kw)


def _cast(x: ndarray, dt) -> ndarray:
    return x.astype(dt, copy=False)


def _nan_as(last: ndarray, res: ndarray) -> ndarray:
    """NumPy's `np.copyto(res, last, where=isnan(last))`."""
    return where(_u(np.isnan, last), _cast(last, res.dtype), res)


# ------------------------------------------------------------------ NumPy's _ureduce

def _ureduce(a: ndarray, axis):
    """(array, axis, axes): axis None, one axis, or several merged into a last one (-1)."""
    if axis is None:
        return a, None, tuple(range(a.ndim))
    axes = normalize_axis_tuple(axis, a.ndim)
    if len(axes) == 1:
        return a, axes[0], axes
    keep = [i for i in range(a.ndim) if i not in axes]
    m = moveaxis(a, keep, list(range(len(keep))))
    return m.reshape(m.shape[:len(keep)] + (-1,)), -1, axes


def _kd(keepdims) -> bool:
    return keepdims is not np._NoValue and bool(keepdims)


def _keepdims(r: ndarray, axes, nd: int, keepdims) -> ndarray:
    if not _kd(keepdims):
        return r
    return r[(Ellipsis,) + tuple(None if i in axes else slice(None) for i in range(nd))]


# ------------------------------------------------------------------ NumPy's interpolation

def _lerp(a: ndarray, b: ndarray, t, t1, half) -> ndarray:
    """NumPy's _lerp: a + (b-a)*t, or b - (b-a)*(1-t) where t >= 0.5; t1 is 1-t and `half`
    the t >= 0.5 mask, computed as NumPy computes them."""
    diff_b_a = _u(np.subtract, b, a)
    lerp = _u(np.add, a, _u(np.multiply, diff_b_a, t))
    hi = _u(np.subtract, b, _u(np.multiply, diff_b_a, t1), dtype=lerp.dtype)
    return where(half, hi, lerp)


def _q(q, percent: bool, name: str):
    """NumPy's q array (checked) and whether q was a Python scalar (weak for the result)."""
    weak = type(q) in (int, float)
    if isinstance(q, ndarray):
        q = to_numpy(q)  # NumPy checks the range before anything else
    q = np.true_divide(q, 100, out=...) if percent else np.asanyarray(q)
    if not _fb._quantile_is_valid(q):
        raise ValueError(f"{name} must be in the range [0, {100 if percent else 1}]")
    return q, weak


def _quantile(arr: ndarray, q: np.ndarray, axis, weak: bool) -> ndarray:
    """NumPy's _quantile_ureduce_func and _quantile for method "linear" (shape q + rest)."""
    if q.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    if axis is None:
        arr, axis = ravel(arr), 0
    n = arr.shape[axis]
    arr = moveaxis(arr, axis, 0)
    nans = arr.dtype.kind == "f"
    vi = np.asanyarray((n - 1) * q)
    if np.issubdtype(vi.dtype, np.integer):
        part = partition(arr, np.concatenate((vi.ravel(), [-1])) if nans else vi.ravel(), axis=0)
    else:
        prev, nxt = _fb._get_indexes(np.empty(0, arr.dtype), vi, n)
        part = partition(arr, np.unique(np.concatenate(([0, -1], prev.ravel(), nxt.ravel()))),
                         axis=0)
    last = part[-1] if nans else None  # (read before the values, as NumPy does)
    if np.issubdtype(vi.dtype, np.integer):
        res = part[vi]
    else:
        gamma = np.asanyarray(vi - prev, dtype=vi.dtype)
        t = float(gamma) if weak else gamma.reshape(vi.shape + (1,) * (arr.ndim - 1))
        res = _lerp(part[prev], part[nxt], t, 1 - t, t >= 0.5)
    if not nans:
        return res
    if res.ndim == 0 and res.dtype != arr.dtype:  # NumPy returns the array's own NaN scalar
        return last if bool(_u(np.isnan, last)) else res
    return _nan_as(last, res)


def _median(a: ndarray, axis) -> ndarray:
    """NumPy's _median: the mean of the middle one or two values of a partition."""
    sz = a.size if axis is None else a.shape[axis]
    kth = [sz // 2 - 1, sz // 2] if sz % 2 == 0 else [(sz - 1) // 2]
    nans = a.dtype.kind == "f"
    part = partition(a, kth + [-1] if nans else kth, axis=axis)
    axis = 0 if axis is None else axis % part.ndim
    index = part.shape[axis] // 2
    mid = slice(index, index + 1) if part.shape[axis] % 2 == 1 else slice(index - 1, index + 1)
    lead = (slice(None),) * axis
    rout = R.mean(part[lead + (mid,)], axis=axis)
    if nans and sz > 0:
        rout = _nan_as(part[lead + (-1,)], rout)
    return rout


def _quantile_api(name, a, q, axis, out, overwrite_input, method, keepdims, weights):
    nan = name.startswith("nan")
    if out is not None or weights is not None or method != "linear":
        kw = dict(axis=axis, overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                  weights=weights)
        if out is None:
            return fallback_call(name, getattr(np, name), (a, q), kw)
        return _numpy_out(name, getattr(np, name), (a, q), kw, out)
    a = lazy(a)
    if a.dtype.kind == "c":
        raise TypeError("a must be an array of real numbers")
    q, weak = _q(q, name.endswith("percentile"), "Percentiles" if name.endswith("percentile")
                 else "Quantiles")
    if nan and a.size == 0:
        return nanmean(a, axis, keepdims=_kd(keepdims))
    arr, ax, axes = _ureduce(a, axis)
    if nan and a.dtype.kind == "f":
        res = _nanquantile(arr, q, ax, weak)
    else:
        res = _quantile(arr, q, ax, weak)
        if nan and ax is not None and arr.ndim > 1:
            res = _apply_layout(res, q.ndim, ax, arr.ndim)
    return _keepdims(res, axes, a.ndim, keepdims)


# ------------------------------------------------------------------ the nan versions

def _slices(a: ndarray, axis):
    """(values sorted along axis 0 with NaN last, count of non-NaN values per slice)."""
    arr = ravel(a) if axis is None else moveaxis(a, axis, 0)
    count = R.sum(_u(np.logical_not, _u(np.isnan, arr)), 0, np.intp)
    return sort(arr, axis=0), count


def _pick(s: ndarray, idx: ndarray) -> ndarray:
    """s[idx[..., j], j] for s (n,) + S and idx Q + S: each slice's value at its index."""
    rest = s.shape[1:]
    lead = idx.ndim - len(rest)
    key = tuple(np.arange(d).reshape((1,) * (lead + k) + (d,) + (1,) * (len(rest) - k - 1))
                for k, d in enumerate(rest))
    return s[(idx,) + key]


def _apply_layout(res: ndarray, qnd: int, axis: int, nd: int) -> ndarray:
    """NumPy's apply_along_axis layout of the per-slice results, then its moveaxis of the q
    axes to the front (from `axis + i`, which for merged axes, axis -1, is not the inverse)."""
    if not qnd:
        return res
    at = axis % nd
    res = moveaxis(res, list(range(qnd)), list(range(at, at + qnd)))
    return moveaxis(res, [axis + i for i in range(qnd)], list(range(qnd)))


def _nanquantile(a: ndarray, q: np.ndarray, axis, weak: bool) -> ndarray:
    """NumPy's _nanquantile_1d on every slice: _quantile on the slice's c non-NaN values."""
    if q.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    one_d = axis is None or a.ndim == 1
    s, c = _slices(a, None if one_d else axis)
    qb = q.reshape(q.shape + (1,) * c.ndim)
    cm1 = _u(np.subtract, c, 1)  # NumPy's Python int n - 1: weak against q's dtype
    vi = _u(np.multiply, _cast(cm1, q.dtype), qb)
    if np.issubdtype(q.dtype, np.integer):
        res = _pick(s, vi)
    else:
        prev = _u(np.floor, vi)
        nxt = _u(np.add, prev, 1)
        above, below = _u(np.greater_equal, vi, _cast(cm1, q.dtype)), _u(np.less, vi, 0)
        prev = _cast(where(below, 0, where(above, -1, prev)), np.intp)
        nxt = _cast(where(below, 0, where(above, -1, nxt)), np.intp)
        gamma = _cast(_u(np.subtract, vi, prev), vi.dtype)
        if weak:  # float(gamma), a float64 Python float, weak against the values' dtype
            t, t1 = _cast(gamma, a.dtype), _cast(_u(np.subtract, 1.0, gamma), a.dtype)
            half = _u(np.greater_equal, gamma, 0.5)
        else:
            t, t1, half = gamma, _u(np.subtract, 1, gamma), _u(np.greater_equal, gamma, 0.5)
        at = [where(_u(np.less, i, 0), _u(np.add, i, c), i) for i in (prev, nxt)]  # -1: last
        res = _lerp(_pick(s, at[0]), _pick(s, at[1]), t, t1, half)
    res = where(_u(np.equal, c, 0), np.array(np.nan, a.dtype), res)
    if res.dtype != a.dtype and bool(_u(np.equal, c.reshape(-1)[0], 0)):
        res = _cast(res, a.dtype)  # NumPy's result takes the dtype of the first slice's
    return res if one_d else _apply_layout(res, q.ndim, axis, a.ndim)


def _nanmedian(a: ndarray, axis) -> ndarray:
    """NumPy's _nanmedian: np.median of each slice's non-NaN values for one slice or long
    axes (the mean of the middle one or two), np.ma.median's (x + y) / 2 in the dtype (x + x
    for an odd count) along shorter ones."""
    one_d = axis is None or a.ndim == 1
    s, c = _slices(a, None if one_d else axis)
    lo = _pick(s, _u(np.maximum, _u(np.floor_divide, _u(np.subtract, c, 1), 2), 0))
    hi = _pick(s, _u(np.floor_divide, c, 2))
    odd = _u(np.equal, _u(np.remainder, c, 2), 1)
    if not one_d and a.shape[axis] < 600:
        med = _u(np.true_divide, _u(np.add, lo, where(odd, lo, hi)), 2.0)
        return where(_u(np.equal, c, 0), np.array(np.nan, a.dtype), med)
    acc = np.float32 if a.dtype == np.float16 else a.dtype  # np.mean's accumulator
    pair = _u(np.true_divide, _u(np.add, _cast(lo, acc), _cast(hi, acc)), 2)
    med = where(odd, lo, _cast(pair, a.dtype))
    last = (ravel(a) if one_d else moveaxis(a, axis, 0))[-1]  # NumPy's arr1d[-1]
    return where(_u(np.equal, c, 0), last, med)


# ------------------------------------------------------------------ public functions

@traced
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    return _quantile_api("percentile", a, q, axis, out, overwrite_input, method, keepdims,
                         weights)


@traced
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
    return _quantile_api("quantile", a, q, axis, out, overwrite_input, method, keepdims,
                         weights)


@traced
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=np._NoValue, *, weights=None):
    return _quantile_api("nanpercentile", a, q, axis, out, overwrite_input, method, keepdims,
                         weights)


@traced
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=np._NoValue, *, weights=None):
    return _quantile_api("nanquantile", a, q, axis, out, overwrite_input, method, keepdims,
                         weights)


@traced
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if out is not None:
        return _numpy_out("median", np.median, (a, axis), dict(
            overwrite_input=overwrite_input, keepdims=keepdims), out)
    a = lazy(a)
    arr, ax, axes = _ureduce(a, axis)
    return _keepdims(_median(arr, ax), axes, a.ndim, keepdims)


@traced
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=np._NoValue):
    if out is not None:
        return _numpy_out("nanmedian", np.nanmedian, (a, axis), dict(
            overwrite_input=overwrite_input, keepdims=keepdims), out)
    a = lazy(a)
    if a.size == 0:
        return nanmean(a, axis, keepdims=_kd(keepdims))
    arr, ax, axes = _ureduce(a, axis)
    # without NaN NumPy's paths agree with median's (integers: means in float64)
    res = _nanmedian(arr, ax) if a.dtype.kind == "f" else _median(arr, ax)
    return _keepdims(res, axes, a.ndim, keepdims)


@traced
def digitize(x, bins, right=False):
    x = lazy(x)
    bins = to_numpy(bins) if isinstance(bins, ndarray) else np.asarray(bins)
    if x.dtype.kind == "c":
        raise TypeError("x may not be complex")
    mono = _fb._monotonicity(bins)
    if mono == 0:
        raise ValueError("bins must be monotonically increasing or decreasing")
    side = "left" if right else "right"  # backwards: the arguments below are swapped
    if mono == -1:
        return _u(np.subtract, len(bins), searchsorted(bins[::-1], x, side=side))
    return searchsorted(bins, x, side=side)


bincount = _eager(np.bincount)


def _nanarg(fill, plain, a, axis, out, keepdims):
    a, mask = _replace_nan(lazy(a), fill)
    if mask is not None and mask.size and bool(R.any(R.all(mask, axis))):
        raise ValueError("All-NaN slice encountered")
    return plain(a, axis, out, keepdims=_kd(keepdims))


@traced
def nanargmax(a, axis=None, out=None, *, keepdims=np._NoValue):
    return _nanarg(-np.inf, R.argmax, a, axis, out, keepdims)


@traced
def nanargmin(a, axis=None, out=None, *, keepdims=np._NoValue):
    return _nanarg(np.inf, R.argmin, a, axis, out, keepdims)


# ------------------------------------------------------------------ histogram

_BLOCK = 65536  # NumPy's: weighted sums are added block by block


def _uniform_bins(a: ndarray, w, edges: np.ndarray, uniform, ntype) -> ndarray:
    """NumPy's equal-width bin arithmetic, values outside the range into a spare last bin."""
    first, last, nb = uniform
    norm_denom = _hist._unsigned_subtract(last, first)
    keep = _u(np.logical_and, _u(np.greater_equal, a, first), _u(np.less_equal, a, last))
    x = where(keep, _cast(a, edges.dtype), edges[0])  # dropped values: any in-range value
    dt = np.result_type(np.empty(0, x.dtype), first)
    f = _u(np.multiply, _u(np.true_divide, _u(np.subtract, x, first, dtype=dt), norm_denom), nb)
    idx = _cast(f, np.intp)
    idx = where(_u(np.equal, idx, nb), _u(np.subtract, idx, 1), idx)
    e = asarray(edges)
    idx = where(_u(np.less, x, e[idx]), _u(np.subtract, idx, 1), idx)
    inc = _u(np.logical_and, _u(np.greater_equal, x, e[_u(np.add, idx, 1)]),
             _u(np.not_equal, idx, nb - 1))
    idx = where(keep, where(inc, _u(np.add, idx, 1), idx), nb)
    if w is None:
        counts = zeros(nb + 1, np.intp)
        ufunc_at_or_numpy(np.add, counts, idx, 1)
        return counts[:nb]
    # bincount's float64 sums per block, in index order (a two-index add.at runs NumPy's
    # sequential loop), cast to ntype and added block after block in ntype
    nblk = -(-a.size // _BLOCK)
    blk = arange(nblk).reshape(-1, 1)._broadcast_view((nblk, _BLOCK)).reshape(-1)[:a.size]
    sums = zeros((nblk, nb + 1), np.float64)
    ufunc_at_or_numpy(np.add, sums, (blk, idx), _cast(w, np.float64))
    return cumsum(_cast(sums[:, :nb], ntype), axis=0, dtype=ntype)[-1]


def _sorted_bins(a: ndarray, w, edges: np.ndarray, ntype) -> ndarray:
    """NumPy's cumulative histogram over a sorted block for bins given as edges."""
    def inclusive(sa):  # NumPy's _search_sorted_inclusive
        return concatenate((searchsorted(sa, edges[:-1], "left"),
                              searchsorted(sa, edges[-1:], "right")))
    if w is None:  # counts add up exactly: one sort of everything
        return diff(_cast(inclusive(sort(a)), ntype))
    cum_n = zeros(edges.shape, ntype)
    for i in range(0, a.size, _BLOCK):
        tmp_a, tmp_w = a[i:i + _BLOCK], w[i:i + _BLOCK]
        order = argsort(tmp_a)
        cw = concatenate((np.zeros(1, ntype), cumsum(tmp_w[order])))
        _u(np.add, cum_n, cw[inclusive(tmp_a[order])], out=cum_n)
    return diff(cum_n)


@traced
def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002 (NumPy's name)
    a = lazy(a)
    w = None if weights is None else lazy(weights)
    if isinstance(bins, str) or a.dtype.kind == "c" or w is not None and w.dtype.kind == "c":
        return fallback_call("histogram", np.histogram, (a, bins, range, density, weights), {})
    if a.dtype == np.bool_:
        warnings.warn(f"Converting input from {a.dtype} to {np.uint8} for compatibility.",
                      RuntimeWarning, stacklevel=3)
        a = _cast(a, np.uint8)
    if w is not None:
        if w.shape != a.shape:
            raise ValueError("weights should have the same shape as a.")
        w = ravel(w)
    a = ravel(a)
    if isinstance(bins, ndarray):
        bins = to_numpy(bins)
    stand_in = np.empty(0, a.dtype)  # NumPy reads only its dtype, and min and max if needed
    if np.ndim(bins) == 0 and range is None and a.size:
        lo, hi = evaluate(R.min(a), R.max(a))
        stand_in = np.array([to_numpy(lo)[()], to_numpy(hi)[()]], a.dtype)
    edges, uniform = _hist._get_bin_edges(stand_in, bins, range, None)
    ntype = np.dtype(np.intp) if w is None else w.dtype
    if uniform is not None:
        n = _uniform_bins(a, w, edges, uniform, ntype)
    else:
        n = _sorted_bins(a, w, edges, ntype)
    if density:
        db = np.array(np.diff(edges), float)
        return _u(np.true_divide, _u(np.true_divide, n, db), R.sum(n)), asarray(edges)
    return n, asarray(edges)


NAMES: tuple[str, ...] = (
    "percentile", "quantile", "median", "nanpercentile", "nanquantile", "nanmedian", "digitize",
    "bincount", "histogram", "nanargmax", "nanargmin")
