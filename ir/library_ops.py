"""Library ops: recorded lazily, run between kernels as one call to NumPy's routine, so results
(tie order of unstable sorts, NaN placement, accumulation order) are NumPy's own.

Each takes its axis already normalized (tracer flattens for axis=None); `ref(*inputs, **attrs)`
is the NumPy call. Each is registered with kind LIBRARY and `props.library`, so the executor runs
it as a library call.
"""
from __future__ import annotations

import numpy as np

from .opdef import Kind, OpDef, Props, register

_LIB = Props(library=True)


def _same_shape(shapes, attrs):
    return tuple(shapes[0])


def _same_dtype(dts, attrs):
    return dts[0]


def _intp(dts, attrs):
    return np.dtype(np.intp)


def _attr_dtype(dts, attrs):
    return np.dtype(attrs["dtype"])


def _searchsorted_shape(shapes, attrs):
    if len(shapes[0]) != 1 or len(shapes) == 3 and shapes[2] != shapes[0]:
        raise ValueError(f"searchsorted wants a 1-d array (and sorter of its shape), got {shapes}")
    return tuple(shapes[1])


def _searchsorted(a, v, *sorter, side):
    return np.searchsorted(a, v, side=side, sorter=sorter[0] if sorter else None)


def _reduceat_shape(shapes, attrs):
    a, idx, ax = shapes[0], shapes[1], attrs["axis"]
    if len(idx) != 1 or not 0 <= ax < len(a):
        raise ValueError(f"reduceat wants 1-d indices and an axis of the array, got {shapes}")
    return tuple(a[:ax]) + tuple(idx) + tuple(a[ax + 1:])


def _reduceat(a, indices, *, ufunc, axis, dtype):
    return getattr(np, ufunc).reduceat(a, indices, axis=axis, dtype=np.dtype(dtype))


def _cumulative(name, fn):
    register(OpDef(name, Kind.LIBRARY, 1, _same_shape, _attr_dtype, ref=fn, props=_LIB))


# attrs: sort/argsort (axis, kind); partition/argpartition (kth, axis, kind);
# searchsorted (side) with an optional third input, the sorter; cumsum/cumprod (axis, dtype);
# reduceat (ufunc: its name, axis, dtype: the loop's) of the array and its intp indices
register(OpDef("sort", Kind.LIBRARY, 1, _same_shape, _same_dtype, ref=np.sort, props=_LIB))
register(OpDef("argsort", Kind.LIBRARY, 1, _same_shape, _intp, ref=np.argsort, props=_LIB))
register(OpDef("partition", Kind.LIBRARY, 1, _same_shape, _same_dtype, ref=np.partition,
               props=_LIB))
register(OpDef("argpartition", Kind.LIBRARY, 1, _same_shape, _intp, ref=np.argpartition,
               props=_LIB))
register(OpDef("searchsorted", Kind.LIBRARY, -1, _searchsorted_shape, _intp, ref=_searchsorted,
               props=_LIB))
_cumulative("cumsum", np.cumsum)
_cumulative("cumprod", np.cumprod)
register(OpDef("reduceat", Kind.LIBRARY, 2, _reduceat_shape, _attr_dtype, ref=_reduceat,
               props=_LIB))
