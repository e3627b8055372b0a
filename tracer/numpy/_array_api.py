"""The array API (2024.12) in tracer.numpy.

`FUNCTIONS`: NumPy 2's array-API functions tracer.numpy lacked, lazy (compositions of tracer's
ops) where NumPy's are compositions; `sort`/`argsort` take the standard's `descending`.

`namespace()`: what `__array_namespace__` returns. It is to tracer.numpy what
array_api_compat.numpy is to NumPy: the same functions on the same arrays, where NumPy's
answers are not the standard's made the standard's: a NumPy scalar (NumPy's reductions of
small realized arrays, see tracer/eager.py) comes back as a 0-d tracer array, so that
array-API code sees one namespace; `unique_*` are sorted (NumPy 2.3's are in hash order,
which code written for array_api_compat.numpy does not expect); `sort`/`argsort` are stable
unless told otherwise; `clip(x, lo)` needs no upper bound; `diff` takes None for no prepend/append; `vecdot` is linalg's (lazy
along any axis, where the gufunc's axis= runs NumPy).
"""
from __future__ import annotations

import functools
import sys
import types

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from .. import creation as _C
from .. import manipulation as _M
from ..array import lazy
from ..dispatch import LAZY
from ..recording import traced
from ..sorting import _eager


def unstack(x, /, *, axis=0):
    x = lazy(x)
    if x.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    y = _M.moveaxis(x, axis, 0)
    return tuple(y[i] for i in range(y.shape[0]))


def matrix_transpose(x, /):
    x = lazy(x)
    if x.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim}")
    return _M.swapaxes(x, -1, -2)


def _cumulative(name: str, uf: np.ufunc, x, axis, dtype, out, include_initial):
    """NumPy's _cumulative_func: cumsum/cumprod, the identity first where asked."""
    x = LAZY["atleast_1d"](x)
    if axis is None:
        if x.ndim >= 2:
            raise ValueError("For arrays which have more than one dimension "
                             "``axis`` argument is required.")
        axis = 0
    if out is not None and include_initial:
        item = [slice(None)] * x.ndim
        item[axis] = slice(1, None)
        LAZY[name](x, axis=axis, dtype=dtype, out=out[tuple(item)])
        item[axis] = 0
        out[tuple(item)] = uf.identity
        return out
    res = LAZY[name](x, axis=axis, dtype=dtype, out=out)
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        res = _M.concatenate([_C.full_like(res, uf.identity, shape=shape), res], axis=axis)
    return res


@traced
def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative("cumsum", np.add, x, axis, dtype, out, include_initial)


@traced
def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative("cumprod", np.multiply, x, axis, dtype, out, include_initial)


def real(val):
    try:
        return val.real
    except AttributeError:
        return _C.asanyarray(val).real


def imag(val):
    try:
        return val.imag
    except AttributeError:
        return _C.asanyarray(val).imag


def _descending(x, axis, run):
    """A descending sort along axis that keeps equal elements in order: the ascending one of
    the flipped array, flipped back (array_api_compat's way for NumPy)."""
    flip = LAZY["flip"]
    return flip(run(flip(x, axis=axis)), axis=axis)


def sort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    if not descending:
        return LAZY["sort"](a, axis, kind, order, stable=stable)
    a = lazy(a)
    return _descending(a, axis, lambda f: LAZY["sort"](f, axis, kind, order, stable=stable))


def argsort(a, axis=-1, kind=None, order=None, *, stable=None, descending=False):
    if not descending:
        return LAZY["argsort"](a, axis, kind, order, stable=stable)
    a = lazy(a)
    r = _descending(a, axis, lambda f: LAZY["argsort"](f, axis, kind, order, stable=stable))
    n = a.size if axis is None else a.shape[normalize_axis_index(axis, a.ndim)]
    return (n - 1) - r  # positions in the flipped array, counted from the other end


FUNCTIONS = dict(
    unstack=unstack, matrix_transpose=matrix_transpose, cumulative_sum=cumulative_sum,
    cumulative_prod=cumulative_prod, real=real, imag=imag,
    # the result's length depends on the data: NumPy runs on the evaluated input
    unique_all=_eager(np.unique_all), unique_counts=_eager(np.unique_counts),
    unique_inverse=_eager(np.unique_inverse), unique_values=_eager(np.unique_values))


# ---------------------------------------------------------------- the namespace

def _as_array(r):
    """A result as the standard has it: a NumPy scalar as a 0-d tracer array."""
    if isinstance(r, np.generic) and r.dtype.kind in "biufc":
        return _C.asarray(r)
    if isinstance(r, tuple):
        items = [_as_array(x) for x in r]
        return type(r)(*items) if hasattr(r, "_fields") else tuple(items)
    return r


def _returning_arrays(fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        return _as_array(fn(*args, **kwargs))
    return call


class _Namespace(types.ModuleType):
    """A namespace over a module of tracer.numpy: its functions, returning arrays."""

    def __init__(self, name: str, source, overrides: dict):
        super().__init__(name, source.__doc__)
        self._source = source
        self.__dict__.update(overrides)

    def __getattr__(self, name: str):
        obj = getattr(self._source, name)
        if callable(obj) and not isinstance(obj, type):
            obj = _returning_arrays(obj)
        setattr(self, name, obj)
        return obj

    def __dir__(self):
        return sorted({*dir(self._source), *vars(self)} - {"_source"})


def _sort(x, /, *, axis=-1, descending=False, stable=True):
    return sort(x, axis, stable=stable, descending=descending)


def _argsort(x, /, *, axis=-1, descending=False, stable=True):
    return argsort(x, axis, stable=stable, descending=descending)


def _diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The standard's None: nothing to prepend or append (NumPy would take None as a value)."""
    more = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return LAZY["diff"](x, n, axis, **more)


def _clip(x, /, min=None, max=None):
    """The standard's bounds: either may be left out (NumPy's clip(x, lo) wants a_max)."""
    return LAZY["clip"](x, min=min, max=max)


def _unique(x, **flags):
    return LAZY["unique"](x, equal_nan=False, **flags)


def _unique_all(x, /):
    values, indices, inverse, counts = _unique(x, return_index=True, return_inverse=True,
                                               return_counts=True)
    return _SETOPS.UniqueAllResult(values, indices, inverse.reshape(np.shape(x)), counts)


def _unique_counts(x, /):
    return _SETOPS.UniqueCountsResult(*_unique(x, return_counts=True))


def _unique_inverse(x, /):
    values, inverse = _unique(x, return_inverse=True)
    return _SETOPS.UniqueInverseResult(values, inverse.reshape(np.shape(x)))


def _unique_values(x, /):
    return _unique(x)


_SETOPS = np.lib._arraysetops_impl  # (where NumPy keeps its result types)


@functools.cache
def namespace() -> _Namespace:
    tnp = sys.modules["tracer.numpy"]
    ns = _Namespace("tracer.array_api", tnp, dict(
        sort=_sort, argsort=_argsort, clip=_clip, diff=_diff, vecdot=tnp.linalg.vecdot, unique_all=_unique_all, unique_counts=_unique_counts,
        unique_inverse=_unique_inverse, unique_values=_unique_values))
    ns.linalg = _Namespace("tracer.array_api.linalg", tnp.linalg, {})
    ns.fft = _Namespace("tracer.array_api.fft", tnp.fft, {})
    return ns
