"""Lazy NaN-aware reductions, comparisons, rounding, differences and statistics, composed of
tracer's lazy ops the way NumPy composes them (numpy/lib/_nanfunctions_impl.py,
numpy/_core/numeric.py, numpy/lib/_function_base_impl.py), so dtypes and rounding follow NumPy's.

Where NumPy's `out=` is given, the result is computed lazily and then written to `out` (casting
unsafely) as tracer's reductions do.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from . import reductions as R
from . import selection  # its where by name: `where` is a parameter here
from .array import lazy, ndarray
from .creation import array, asarray, empty, full
from .manipulation import atleast_2d, broadcast_to, concatenate, squeeze
from .products import matmul
from .selection import clip
from .recording import traced
from .fallback import fallback_call
from .ufuncs import apply_ufunc, call_ufunc


def _u(uf, *args):
    return apply_ufunc(uf, args)


def _cast(x: ndarray, dtype) -> ndarray:
    return x.astype(dtype, copy=False)


def _replace_nan(a: ndarray, val):
    """NumPy's _replace_nan: `a` with NaN replaced by `val`, and the NaN mask (None when `a` is
    not inexact, as NumPy then uses the plain reduction)."""
    if a.dtype.kind not in "fc":
        return a, None
    mask = _u(np.isnan, a)
    return selection.where(mask, val, a), mask


def _check_inexact(dtype, out):
    if dtype is not None and not issubclass(np.dtype(dtype).type, np.inexact):
        raise TypeError("If a is inexact, then dtype must be inexact")
    if out is not None and not issubclass(out.dtype.type, np.inexact):
        raise TypeError("If a is inexact, then out must be inexact")


# ------------------------------------------------------------------ NaN-aware reductions

def _nan_fill_reduce(name, red, fill, a, axis, dtype, out, keepdims, initial, where):
    """NumPy's nansum / nanprod: NaNs replaced by the reduction's identity."""
    if where is not True:
        return fallback_call(name, getattr(np, name), (a,), dict(
            axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where))
    arr, _ = _replace_nan(lazy(a), fill)
    return red(arr, axis, dtype, out, keepdims, initial)


@traced
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return _nan_fill_reduce("nansum", R.sum, 0, a, axis, dtype, out, keepdims, initial, where)


@traced
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return _nan_fill_reduce("nanprod", R.prod, 1, a, axis, dtype, out, keepdims, initial, where)


def _nan_extreme(uf, a, axis, out, keepdims, initial, where):
    """np.fmax.reduce / np.fmin.reduce, which is what NumPy's nanmax / nanmin run: NaNs are
    skipped and an all-NaN slice gives NaN (NumPy also warns then; that needs the data, so no
    warning here)."""
    name = "nanmax" if uf is np.fmax else "nanmin"
    a = lazy(a)
    if where is not True or a.dtype.kind == "c":  # complex max: NumPy orders NaNs its own way
        return fallback_call(name, getattr(np, name), (a,), dict(
            axis=axis, out=out, keepdims=keepdims, initial=initial, where=where))
    axes = R._axes(axis, a.ndim)
    if R._count(a.shape, axes) == 0:  # no data: NumPy's own answer (initial) or error
        empty = np.empty(a.shape, a.dtype)
        kw = {} if initial is np._NoValue else {"initial": initial}
        return R._finish(asarray(uf.reduce(empty, axis=axes, keepdims=keepdims, **kw)), out)
    plain = R.max if uf is np.fmax else R.min
    if a.dtype.kind != "f":
        return plain(a, axis, out, keepdims, initial)
    fill = -np.inf if uf is np.fmax else np.inf
    isnan = _u(np.isnan, a)
    res = plain(selection.where(isnan, fill, a), axis, None, keepdims)
    res = selection.where(R.all(isnan, axis, None, keepdims), np.nan, res)
    if initial is not np._NoValue:  # the reduction starts from `initial`
        res = _cast(_u(uf, initial, res), res.dtype)
    return R._finish(res, out)


@traced
def nanmax(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return _nan_extreme(np.fmax, a, axis, out, keepdims, initial, where)


@traced
def nanmin(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return _nan_extreme(np.fmin, a, axis, out, keepdims, initial, where)


@traced
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    if where is not True:
        return fallback_call("nanmean", np.nanmean, (a,), dict(
            axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where))
    arr, mask = _replace_nan(lazy(a), 0)
    if mask is None:
        return R.mean(arr, axis, dtype, out, keepdims)
    _check_inexact(dtype, out)
    cnt = R.sum(~mask, axis, np.intp, None, keepdims)
    tot = R.sum(arr, axis, dtype, None, keepdims)
    # NumPy divides into the sum's own buffer: computed in float64, stored in its dtype
    return R._finish(_cast(_u(np.true_divide, tot, cnt), tot.dtype), out)


def _ddof(ddof, correction):
    if correction is np._NoValue:
        return ddof
    if ddof != 0:
        raise ValueError("ddof and correction can't be provided simultaneously.")
    return correction


@traced
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
           mean=np._NoValue, correction=np._NoValue):
    """Where a slice has no more than `ddof` non-NaN values the result is NaN; NumPy's warning
    for that needs the data, so there is none here."""
    if where is not True or mean is not np._NoValue:
        return fallback_call("nanvar", np.nanvar, (a,), dict(
            axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where,
            mean=mean, correction=correction))
    return R._finish(_nanvar(lazy(a), axis, dtype, out, ddof, keepdims, correction), out)


def _nanvar(a, axis, dtype, out, ddof, keepdims, correction):
    ddof = _ddof(ddof, correction)
    arr, mask = _replace_nan(a, 0)
    if mask is None:
        return R.var(arr, axis, dtype, None, ddof, keepdims)
    _check_inexact(dtype, out)
    cnt = R.sum(~mask, axis, np.intp, None, True)
    avg = R.sum(arr, axis, dtype, None, True)
    avg = _cast(_u(np.true_divide, avg, cnt), avg.dtype)
    # NumPy subtracts in place: the deviations are stored in the input's dtype
    arr = selection.where(mask, 0, _cast(_u(np.subtract, arr, avg), a.dtype))
    if arr.dtype.kind == "c":
        sqr = _cast(_u(np.multiply, arr, _u(np.conjugate, arr)), np.finfo(arr.dtype).dtype)
    else:
        sqr = _u(np.multiply, arr, arr)
    var = R.sum(sqr, axis, dtype, None, keepdims)
    dof = _u(np.subtract, cnt.reshape(var.shape), ddof)
    var = _cast(_u(np.true_divide, var, dof), var.dtype)
    return selection.where(_u(np.less_equal, dof, 0), np.nan, var)


@traced
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
           mean=np._NoValue, correction=np._NoValue):
    """As nanvar: NaN without a warning where a slice has no more than `ddof` non-NaN values."""
    if where is not True or mean is not np._NoValue:
        return fallback_call("nanstd", np.nanstd, (a,), dict(
            axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where,
            mean=mean, correction=correction))
    var = _nanvar(lazy(a), axis, dtype, out, ddof, keepdims, correction)
    return R._finish(_u(np.sqrt, var), out)


@traced
def count_nonzero(a, axis=None, *, keepdims=False):
    """The number of nonzero values, as an intp array. NumPy returns a Python int when axis is
    None and keepdims is False; this returns a lazy 0-d array then (int() of it evaluates)."""
    return R.sum(lazy(a).astype(np.bool_, copy=False), axis, np.intp, None, keepdims)


# ------------------------------------------------------------------ comparisons

@traced
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A lazy bool array (0-d for scalar inputs). NumPy's check that atol and rtol are finite
    runs on host tolerances only; lazy ones are not evaluated for it."""
    x, y = (v if isinstance(v, (int, float, complex)) else lazy(v) for v in (a, b))
    if isinstance(y, ndarray):  # inexact y: no abs(MIN_INT) overflow, x is cast up
        y = _cast(y, np.result_type(y.dtype, 1.0))
    elif isinstance(y, int):
        y = float(y)
    host = [t for t in (atol, rtol) if not isinstance(t, ndarray)]
    if not all(np.all(np.isfinite(t)) for t in host):
        err_s = np.geterr()["invalid"]
        err_msg = f"One of rtol or atol is not valid, atol: {atol}, rtol: {rtol}"
        if err_s == "warn":
            warnings.warn(err_msg, RuntimeWarning, stacklevel=2)
        elif err_s == "raise":
            raise FloatingPointError(err_msg)
        elif err_s == "print":
            print(err_msg)
    atol, rtol = (t if isinstance(t, (int, float, complex)) else lazy(t) for t in (atol, rtol))
    within = _u(np.less_equal, _u(np.absolute, _u(np.subtract, x, y)),
                _u(np.add, atol, _u(np.multiply, rtol, _u(np.absolute, y))))
    res = _u(np.bitwise_or, _u(np.bitwise_and, within, _u(np.isfinite, y)), _u(np.equal, x, y))
    if equal_nan:
        res = _u(np.bitwise_or, res, _u(np.bitwise_and, _u(np.isnan, x), _u(np.isnan, y)))
    return res


@traced
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A Python bool, as NumPy returns: evaluates."""
    return bool(R.all(isclose(a, b, rtol, atol, equal_nan)))


@traced
def array_equal(a1, a2, equal_nan=False):
    """A Python bool, as NumPy returns: evaluates, except when the shapes differ."""
    try:
        x, y = lazy(a1), lazy(a2)
    except TypeError:  # a dtype tracer cannot hold (strings, objects): NumPy decides
        return fallback_call("array_equal", np.array_equal, (a1, a2), {"equal_nan": equal_nan})
    if x.shape != y.shape:
        return False
    if not equal_nan or (x.dtype.kind in "biu" and y.dtype.kind in "biu"):
        return bool(R.all(_u(np.equal, x, y)))
    if a1 is a2:
        return True
    xnan, ynan = _u(np.isnan, x), _u(np.isnan, y)
    # NaNs in the same places, and equal values everywhere else, in one evaluation
    same = _u(np.bitwise_and, _u(np.equal, xnan, ynan), _u(np.bitwise_or, _u(np.equal, x, y), xnan))
    return bool(R.all(same))


# ------------------------------------------------------------------ rounding

def _power_of_ten(n: int) -> float:
    """NumPy's C power_of_ten: exact up to 1e22, then repeated multiplication (10**23 differs)."""
    if n < 9:
        return float(10 ** n)
    ret = 1e9
    for _ in range(n - 9):
        ret *= 10.0
    return ret


@traced
def around(a, decimals=0, out=None):
    """NumPy's PyArray_Round step by step. Complex input, and a NumPy array as `out`, run NumPy
    (fallback)."""
    decimals = operator.index(decimals)
    a = lazy(a)
    if a.dtype.kind == "c" or not (out is None or isinstance(out, ndarray)):
        return fallback_call("around", np.around, (a, decimals), {"out": out})
    is_int = a.dtype.kind in "iu"
    if decimals >= 0 and is_int:
        if out is None:
            return a.copy()
        if not np.can_cast(a.dtype, out.dtype, "same_kind"):
            raise TypeError(f"Cannot cast array data from {a.dtype!r} to {out.dtype!r} according "
                            "to the rule 'same_kind'")
        return R._finish(a, out)
    if decimals == 0:
        return call_ufunc(np.rint, (a,), {"out": out})
    op1, op2 = (np.multiply, np.true_divide) if decimals >= 0 else (np.true_divide, np.multiply)
    buf = out if out is not None else empty(a.shape, np.float64 if is_int else a.dtype)
    f = _power_of_ten(abs(decimals))
    apply_ufunc(op1, (a, f), out=buf)
    apply_ufunc(np.rint, (buf,), out=buf)
    apply_ufunc(op2, (buf, f), out=buf)
    return _cast(buf, a.dtype) if is_int and out is None else buf


round = around  # noqa: A001  (np.round is np.around)


@traced
def fix(x, out=None):
    """np.fix is np.trunc in NumPy 2."""
    return call_ufunc(np.trunc, (x,), {"out": out})


@traced
def ptp(a, axis=None, out=None, keepdims=False):
    a = lazy(a)
    hi = R.max(a, axis, None, keepdims)
    if out is not None:  # NumPy reduces the maximum into `out` and subtracts there
        hi = _cast(hi, out.dtype)
    return R._finish(_u(np.subtract, hi, R.min(a, axis, None, keepdims)), out)


# ------------------------------------------------------------------ averages

@traced
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """With weights, NumPy raises ZeroDivisionError when a weight sum is zero: checking that
    evaluates the weight sums (the average itself stays lazy)."""
    a = lazy(a)
    if axis is not None:
        axis = normalize_axis_tuple(axis, a.ndim, argname="axis")
    if weights is None:
        avg = R.mean(a, axis, None, None, keepdims)
        scl = full(avg.shape, avg.dtype.type(a.size / avg.size), avg.dtype)
        return (avg, scl) if returned else avg
    wgt = lazy(weights)
    if a.shape != wgt.shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if wgt.shape != tuple(a.shape[ax] for ax in axis):
            raise ValueError("Shape of weights must be consistent with shape of a along "
                             "specified axis.")
        wgt = wgt.transpose(tuple(int(i) for i in np.argsort(axis)))
        wgt = wgt.reshape(tuple(s if ax in axis else 1 for ax, s in enumerate(a.shape)))
    if a.dtype.kind in "biu":
        result_dtype = np.result_type(a.dtype, wgt.dtype, "f8")
    else:
        result_dtype = np.result_type(a.dtype, wgt.dtype)
    scl = R.sum(wgt, axis, result_dtype, None, keepdims)
    if bool(R.any(_u(np.equal, scl, 0.0))):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    prod = apply_ufunc(np.multiply, (a, wgt), dtype=result_dtype)
    avg = _u(np.true_divide, R.sum(prod, axis, None, None, keepdims), scl)
    if not returned:
        return avg
    if scl.shape != avg.shape:
        scl = broadcast_to(scl, avg.shape).copy()
    return avg, scl


# ------------------------------------------------------------------ differences

@traced
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    a = lazy(a)
    nd = a.ndim
    if nd == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = normalize_axis_index(axis, nd)

    def edge(v):
        v = lazy(v)
        return v if v.ndim else broadcast_to(v, a.shape[:axis] + (1,) + a.shape[axis + 1:])

    parts = [a]
    if prepend is not np._NoValue:
        parts.insert(0, edge(prepend))
    if append is not np._NoValue:
        parts.append(edge(append))
    if len(parts) > 1:
        a = concatenate(parts, axis)
    lead = (slice(None),) * axis
    op = np.not_equal if a.dtype == np.bool_ else np.subtract
    for _ in range(n):
        a = _u(op, a[lead + (slice(1, None),)], a[lead + (slice(None, -1),)])
    return a


@traced
def ediff1d(ary, to_end=None, to_begin=None):
    ary = lazy(ary).reshape(-1)
    parts = []
    for name, v in (("to_begin", to_begin), ("to_end", to_end)):
        if v is not None:
            v = lazy(v)
            if not np.can_cast(v.dtype, ary.dtype, casting="same_kind"):
                raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under "
                                "the `same_kind` rule.")
            parts.append(_cast(v.reshape(-1), ary.dtype))
    parts.insert(1 if to_begin is not None else 0, _u(np.subtract, ary[1:], ary[:-1]))
    return parts[0] if len(parts) == 1 else concatenate(parts)


# ------------------------------------------------------------------ covariance

@traced
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """Lazy without fweights and aweights; with either, NumPy runs it (fallback)."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    if fweights is not None or aweights is not None:
        return fallback_call("cov", np.cov, (m, y, rowvar, bias, ddof, fweights, aweights),
                             {"dtype": dtype})
    m = lazy(m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = lazy(y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(m.dtype, *([] if y is None else [y.dtype]), np.float64)
    X = atleast_2d(_cast(m, dtype))
    if not rowvar and m.ndim != 1:
        X = X.T
    if X.shape[0] == 0:
        return array(np.array([]).reshape(0, 0))
    if y is not None:
        y = atleast_2d(_cast(y, dtype))
        if not rowvar and y.shape[0] != 1:
            y = y.T
        X = concatenate((X, y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    avg = R.mean(X, 1)
    fact = X.shape[1] - ddof
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    X = _u(np.subtract, X, avg[:, None])
    c = matmul(X, _u(np.conjugate, X.T) if X.dtype.kind == "c" else X.T)
    # NumPy scales in place by a float64 scalar, 1 / fact (with its warning for 1 / 0.0)
    c = _cast(_u(np.multiply, c, np.true_divide(1, fact)), c.dtype)
    return squeeze(c)


@traced
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Lazy for real data; complex data runs NumPy (fallback)."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.dtype.kind == "c":
        return fallback_call("corrcoef", np.corrcoef, (x, y, rowvar), {"dtype": dtype})
    if c.ndim == 0:  # one variable: NaN for a zero, NaN or inf variance, else 1
        return _u(np.true_divide, c, c)
    stddev = _u(np.sqrt, c.reshape(-1)[::c.shape[0] + 1])
    c = _u(np.true_divide, c, stddev[:, None])
    c = _u(np.true_divide, c, stddev[None, :])
    return clip(c, -1, 1)


# ------------------------------------------------------------------ select

@traced
def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    # Python scalars stay weak for the result dtype (NEP 50), as in NumPy
    choices = [c if type(c) in (int, float, complex) or isinstance(c, ndarray) else np.asarray(c)
               for c in list(choicelist) + [default]]
    try:
        dtype = np.result_type(*[c.dtype if isinstance(c, ndarray) else c for c in choices])
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") from None
    choices = [lazy(c) if isinstance(c, np.ndarray) else c for c in choices]
    conds = [lazy(c) for c in condlist]
    cond_shape = np.broadcast_shapes(*[c.shape for c in conds])
    choice_shape = np.broadcast_shapes(*[np.shape(c) for c in choices])
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    shape = np.broadcast_shapes(cond_shape, choice_shape)
    res = full(shape, choices[-1], dtype)
    for cond, choice in zip(conds[::-1], choices[-2::-1]):
        res = selection.where(cond, _cast(choice, dtype) if isinstance(choice, ndarray) else
                              choice, res)
    return res


NAMES = ("nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
         "count_nonzero", "isclose", "allclose", "array_equal", "around", "round", "fix", "ptp",
         "average", "diff", "ediff1d", "cov", "corrcoef", "select")
