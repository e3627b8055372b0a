"""Library ops: recorded lazily, run between kernels as one call to NumPy's routine, so results
(tie order of unstable sorts, NaN placement, accumulation order) are NumPy's own.

Each takes its axis already normalized (tracer flattens for axis=None); `ref(*inputs, **attrs)`
is the NumPy call. The executor runs every op named in NAMES as a library call.
"""
from __future__ import annotations

import numpy as np

from .registry import Kind, OpDef, register


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


def _cumulative(name, fn):
    register(OpDef(name, Kind.OTHER, 1, _same_shape, _attr_dtype, ref=fn))


# attrs: sort/argsort (axis, kind); partition/argpartition (kth, axis, kind);
# searchsorted (side) with an optional third input, the sorter; cumsum/cumprod (axis, dtype)
register(OpDef("sort", Kind.OTHER, 1, _same_shape, _same_dtype, ref=np.sort))
register(OpDef("argsort", Kind.OTHER, 1, _same_shape, _intp, ref=np.argsort))
register(OpDef("partition", Kind.OTHER, 1, _same_shape, _same_dtype, ref=np.partition))
register(OpDef("argpartition", Kind.OTHER, 1, _same_shape, _intp, ref=np.argpartition))
register(OpDef("searchsorted", Kind.OTHER, -1, _searchsorted_shape, _intp, ref=_searchsorted))
_cumulative("cumsum", np.cumsum)
_cumulative("cumprod", np.cumprod)

NAMES: tuple[str, ...] = ("sort", "argsort", "partition", "argpartition", "searchsorted",
                          "cumsum", "cumprod")
