"""Lazy versions of NumPy's matrix products: matmul, dot, vdot."""
from __future__ import annotations

import numpy as np

from . import graph as G
from .array import lazy, ndarray
from .fallback import fallback_call
from .recording import proxy, shape_str, traced
from .reductions import _finish
from .ufuncs import apply_ufunc


def _matmul_error(a, b):
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    np.matmul(np.zeros(ka) if a.ndim == 1 else np.zeros((1, ka)),
              np.zeros(kb) if b.ndim == 1 else np.zeros((kb, 1)))


@traced
def matmul(x1, x2, /, out=None, *, dtype=None, **kw):
    a, b = lazy(x1), lazy(x2)
    if a.ndim == 0 or b.ndim == 0:
        i = 0 if a.ndim == 0 else 1
        raise ValueError(f"matmul: Input operand {i} does not have enough dimensions (has 0, "
                         "gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    _matmul_error(a, b) if (a.shape[-1] != (b.shape[0] if b.ndim == 1 else b.shape[-2])) else None
    dts = np.matmul.resolve_dtypes((a.dtype, b.dtype, None if dtype is None else np.dtype(dtype)))
    an = G.cast(a._node, dts[0])
    bn = G.cast(b._node, dts[1])
    if a.ndim == 1:
        an = G.reshape(an, (1,) + a.shape)
    if b.ndim == 1:
        bn = G.reshape(bn, b.shape + (1,))
    try:
        np.broadcast_shapes(an.shape[:-2], bn.shape[:-2])
    except ValueError:
        np.matmul(proxy(a.shape), proxy(b.shape))  # NumPy's own message
        raise
    node = G.matmul(an, bn)
    shape = node.shape
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    res = ndarray._from_node(G.cast(node, dts[2]))
    res = res.reshape(shape) if shape != res.shape else res
    if out is not None:
        return _finish(res, out)
    return res


def dot(a, b, out=None):
    a, b = lazy(a), lazy(b)
    if a.ndim == 0 or b.ndim == 0:
        return apply_ufunc(np.multiply, (a, b), out=out)
    kb = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[kb]:
        raise ValueError(f"shapes {shape_str(a.shape)} and {shape_str(b.shape)} not aligned: "
                         f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[kb]} (dim {kb})")
    if b.ndim <= 2:
        return matmul(a, b, out=out)
    return fallback_call("dot", np.dot, (a, b), {} if out is None else {"out": out})


def vdot(a, b):
    a, b = lazy(a).reshape(-1), lazy(b).reshape(-1)
    if a.dtype.kind == "c":
        a = apply_ufunc(np.conjugate, (a,))
    return matmul(a, b)


NAMES = ("matmul dot vdot").split()
