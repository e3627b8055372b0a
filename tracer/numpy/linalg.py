"""`tracer.numpy.linalg`: re-exports tracer/linalg.py, with the array API's `cross` and
`vecdot` (lazy); NumPy's other linalg functions run as counted fallbacks."""
from ..linalg import *  # noqa: F401,F403
from ..linalg import __getattr__  # noqa: F401
from ..linalg import _u
from .. import manipulation as _M
from ..array import lazy as _lazy
from .. import reductions as _R
from ..recording import proxy as _proxy

import numpy as _np


def cross(x1, x2, /, *, axis=-1):
    """NumPy's check, then its cross product of 3-vectors: x1[j]*x2[k] - x1[k]*x2[j], in the
    order NumPy multiplies and subtracts (the same dtypes and roundings)."""
    x1, x2 = _lazy(x1), _lazy(x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, "
            f"but they are {x1.shape[axis]} and {x2.shape[axis]} dimensional instead.")
    a, b = _M.moveaxis(x1, axis, -1), _M.moveaxis(x2, axis, -1)

    def term(j, k):
        return _u(_np.subtract, _u(_np.multiply, a[..., j], b[..., k]),
                  _u(_np.multiply, a[..., k], b[..., j]))
    return _M.moveaxis(_M.stack([term(1, 2), term(2, 0), term(0, 1)], axis=-1), -1, axis)


def vecdot(x1, x2, /, *, axis=-1):
    """sum(conj(x1) * x2) along axis in NumPy's result dtype (bool: any(x1 & x2)); NumPy's
    gufunc on zero-byte stand-ins first gives its errors, dtype and shape."""
    x1, x2 = _lazy(x1), _lazy(x2)
    dt = _np.linalg.vecdot(_proxy(x1.shape, x1.dtype), _proxy(x2.shape, x2.dtype),
                           axis=axis).dtype
    a, b = _M.moveaxis(x1, axis, -1), _M.moveaxis(x2, axis, -1)
    if dt.kind == "b":
        return _R.any(_u(_np.logical_and, a, b), axis=-1)
    if a.dtype.kind == "c":
        a = _u(_np.conjugate, a)
    return _R.sum(_u(_np.multiply, a, b), axis=-1, dtype=dt)
