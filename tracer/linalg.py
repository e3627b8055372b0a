"""NumPy's linalg on lazy arrays (re-exported as tracer.numpy.linalg).

Lazy, composed of tracer's ops the way numpy/linalg/_linalg.py composes them (so dtypes and
errors are NumPy's): `norm` (every vector ord; matrix 'fro', 1, -1, inf, -inf), `multi_dot`
(NumPy's order of products, a chain of matmuls the dot passes see), `matrix_power` (NumPy's
repeated squaring; a negative power inverts first, which evaluates), `matrix_norm`,
`vector_norm`, and the array-API `matmul`, `tensordot`, `outer`, `diagonal`, `trace`,
`matrix_transpose`. Matrix norms 'nuc', 2 and -2 need singular values, and a complex norm
that needs the real part of |x|^2 (ord None/2/'fro') needs `.real`: those evaluate `x` and run
NumPy's norm.

The factorizations and solvers (inv, solve, det, slogdet, eig, eigh, eigvals, eigvalsh, svd,
svdvals, qr, cholesky, lstsq, pinv, matrix_rank, cond, tensorinv, tensorsolve) evaluate their
lazy arguments together, run NumPy's function and return lazy arrays (NumPy's result
namedtuples keep their type; NumPy scalars become 0-d lazy arrays). They are not counted as
fallbacks. Anything else here (cross, vecdot, ...) runs NumPy and is counted.
"""
from __future__ import annotations

import functools as _functools
import operator as _operator

import numpy as _np
from numpy.lib.array_utils import normalize_axis_index as _normalize_axis_index
from numpy.lib.array_utils import normalize_axis_tuple as _normalize_axis_tuple

from . import creation as _C
from . import manipulation as _M
from . import products as _P
from . import reductions as _R
from . import shaping as _S
from .array import evaluate as _evaluate, lazy as _lazy, ndarray as _ndarray
from .recording import traced as _traced
from .fallback import _to_host, count_fallback as _count_fallback
from .fallback import fallback_getattr as _fallback_getattr
from .ufuncs import apply_ufunc as _apply_ufunc

LinAlgError = _np.linalg.LinAlgError


def _u(uf, *args):
    return _apply_ufunc(uf, args)


# ------------------------------------------------------------------ evaluate, then NumPy

def _lazy_result(x):
    """NumPy's result with every array and NumPy scalar as a lazy array (namedtuples, tuples
    and lists keep their type; Python numbers stay)."""
    if isinstance(x, (_np.ndarray, _np.generic)):
        return _C.asarray(_np.asarray(x))
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return type(x)(*map(_lazy_result, x))
    if isinstance(x, (tuple, list)):
        return type(x)(map(_lazy_result, x))
    return x


def _run_numpy(fn, args: tuple, kwargs: dict):
    """fn on the evaluated arguments (all lazy ones in one evaluation), lazily wrapped."""
    lazy = [a for a in (*args, *kwargs.values()) if isinstance(a, _ndarray)]
    if lazy:
        _evaluate(*lazy)
    return _lazy_result(fn(*_to_host(args), **_to_host(kwargs)))


def _evaluating(name: str, module=_np.linalg, home: str = __name__):
    """module's function `name` run on evaluated arguments (_run_numpy), as `home`'s."""
    fn = getattr(module, name)

    @_functools.wraps(fn)
    def call(*args, **kwargs):
        return _run_numpy(fn, args, kwargs)
    call.__module__ = home
    return call


inv = _evaluating("inv")
solve = _evaluating("solve")
det = _evaluating("det")
slogdet = _evaluating("slogdet")
eig = _evaluating("eig")
eigh = _evaluating("eigh")
eigvals = _evaluating("eigvals")
eigvalsh = _evaluating("eigvalsh")
svd = _evaluating("svd")
svdvals = _evaluating("svdvals")
qr = _evaluating("qr")
cholesky = _evaluating("cholesky")
lstsq = _evaluating("lstsq")
pinv = _evaluating("pinv")
matrix_rank = _evaluating("matrix_rank")
cond = _evaluating("cond")
tensorinv = _evaluating("tensorinv")
tensorsolve = _evaluating("tensorsolve")


# ------------------------------------------------------------------ norms

def _float_input(x) -> _ndarray:
    x = _lazy(x)
    return x if x.dtype.kind in "fc" else x.astype(float)  # NumPy: non-inexact to float64


def _numpy_norm(x, ord, axis, keepdims):
    return _run_numpy(_np.linalg.norm, (x, ord, axis, keepdims), {})


@_traced
def norm(x, ord=None, axis=None, keepdims=False):
    x = _float_input(x)
    cplx = x.dtype.kind == "c"  # |x|^2 as NumPy sums it needs x.real, which evaluates
    if axis is None:
        nd = x.ndim
        if ord is None or (ord in ("f", "fro") and nd == 2) or (ord == 2 and nd == 1):
            if cplx:
                return _numpy_norm(x, ord, axis, keepdims)
            flat = x.ravel(order="K")
            ret = _u(_np.sqrt, _P.dot(flat, flat))
            return ret.reshape(nd * [1]) if keepdims else ret
    nd = x.ndim
    if axis is None:
        axis = tuple(range(nd))
    elif not isinstance(axis, tuple):
        try:
            axis = int(axis)
        except Exception as e:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from e
        axis = (axis,)

    if len(axis) == 1:
        if ord == _np.inf:
            return _R.max(abs(x), axis, None, keepdims, 0)
        elif ord == -_np.inf:
            return _R.min(abs(x), axis, None, keepdims)
        elif ord == 0:
            real = _np.empty(0, x.dtype).real.dtype
            return _R.sum(_u(_np.not_equal, x, 0).astype(real), axis, None, None, keepdims)
        elif ord == 1:
            return _R.sum(abs(x), axis, None, None, keepdims)
        elif ord is None or ord == 2:
            if cplx:
                return _numpy_norm(x, ord, axis, keepdims)
            return _u(_np.sqrt, _R.sum(_u(_np.multiply, x, x), axis, None, None, keepdims))
        elif isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        else:
            absx = abs(x)
            absx = _u(_np.power, absx, ord).astype(absx.dtype, copy=False)  # absx **= ord
            ret = _R.sum(absx, axis, None, None, keepdims)
            return _u(_np.power, ret, _np.reciprocal(ord, dtype=ret.dtype)).astype(
                ret.dtype, copy=False)
    elif len(axis) == 2:
        row_axis, col_axis = axis
        row_axis = _normalize_axis_index(row_axis, nd)
        col_axis = _normalize_axis_index(col_axis, nd)
        if row_axis == col_axis:
            raise ValueError("Duplicate axes given.")
        if ord in (2, -2, "nuc"):  # singular values
            return _numpy_norm(x, ord, axis, keepdims)
        elif ord == 1:
            if col_axis > row_axis:
                col_axis -= 1
            ret = _R.max(_R.sum(abs(x), row_axis), col_axis, None, False, 0)
        elif ord == _np.inf:
            if row_axis > col_axis:
                row_axis -= 1
            ret = _R.max(_R.sum(abs(x), col_axis), row_axis, None, False, 0)
        elif ord == -1:
            if col_axis > row_axis:
                col_axis -= 1
            ret = _R.min(_R.sum(abs(x), row_axis), col_axis)
        elif ord == -_np.inf:
            if row_axis > col_axis:
                row_axis -= 1
            ret = _R.min(_R.sum(abs(x), col_axis), row_axis)
        elif ord in [None, "fro", "f"]:
            if cplx:
                return _numpy_norm(x, ord, axis, keepdims)
            ret = _u(_np.sqrt, _R.sum(_u(_np.multiply, x, x), axis))
        else:
            raise ValueError("Invalid norm order for matrices.")
        if keepdims:
            ret_shape = list(x.shape)
            ret_shape[axis[0]] = 1
            ret_shape[axis[1]] = 1
            ret = ret.reshape(ret_shape)
        return ret
    else:
        raise ValueError("Improper number of dimensions to norm.")


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return norm(x, axis=(-2, -1), keepdims=keepdims, ord=ord)


@_traced
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = _lazy(x)
    shape = list(x.shape)
    if axis is None:
        x = x.ravel()
        _axis = 0
    elif isinstance(axis, tuple):
        # vector norms over several axes: those axes first, merged into one
        normalized_axis = _normalize_axis_tuple(axis, x.ndim)
        rest = tuple(i for i in range(x.ndim) if i not in normalized_axis)
        x = x.transpose(axis + rest).reshape(
            (int(_np.prod([x.shape[i] for i in axis], dtype=int)), *[x.shape[i] for i in rest]))
        _axis = 0
    else:
        _axis = axis
    res = norm(x, axis=_axis, ord=ord)
    if keepdims:
        for i in _normalize_axis_tuple(range(len(shape)) if axis is None else axis, len(shape)):
            shape[i] = 1
        res = res.reshape(tuple(shape))
    return res


# ------------------------------------------------------------------ products

def _assert_stacked_square(a: _ndarray) -> None:
    if a.ndim < 2:
        raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be at least "
                          "two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise LinAlgError("Last 2 dimensions of the array must be square")


@_traced
def matrix_power(a, n):
    a = _lazy(a)
    _assert_stacked_square(a)
    try:
        n = _operator.index(n)
    except TypeError as e:
        raise TypeError("exponent must be an integer") from e
    if n == 0:
        return _M.broadcast_to(_C.eye(a.shape[-2], dtype=a.dtype), a.shape).copy()
    elif n < 0:
        a = inv(a)
        n = abs(n)
    if n == 1:
        return a
    elif n == 2:
        return _P.matmul(a, a)
    elif n == 3:
        return _P.matmul(_P.matmul(a, a), a)
    # NumPy's binary decomposition: powers a^(2^k), multiplied in where n has a bit
    z = result = None
    while n > 0:
        z = a if z is None else _P.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else _P.matmul(result, z)
    return result


def _chain_order(dims: list[int]) -> dict:
    """NumPy's _multi_dot_matrix_chain_order: the split of each subchain (Cormen 15.2)."""
    n = len(dims) - 1
    m = {(i, i): 0 for i in range(n)}
    s = {}
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            m[i, j] = _np.inf
            for k in range(i, j):
                q = m[i, k] + m[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1]
                if q < m[i, j]:
                    m[i, j], s[i, j] = q, k
    return s


def _chain(arrays, s, i, j):
    if i == j:
        return arrays[i]
    return _P.dot(_chain(arrays, s, i, s[i, j]), _chain(arrays, s, s[i, j] + 1, j))


@_traced
def multi_dot(arrays, *, out=None):
    """NumPy's order of products. A NumPy array as `out` runs NumPy, which fills and returns it."""
    if out is not None and not isinstance(out, _ndarray):
        _count_fallback("linalg.multi_dot")
        return _np.linalg.multi_dot(_to_host(list(arrays)), out=out)
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    elif n == 2:
        return _P.dot(arrays[0], arrays[1], out=out)
    arrays = [_lazy(a) for a in arrays]
    ndim_first, ndim_last = arrays[0].ndim, arrays[-1].ndim
    if ndim_first == 1:
        arrays[0] = arrays[0].reshape(1, -1)
    if ndim_last == 1:
        arrays[-1] = arrays[-1].reshape(-1, 1)
    for a in arrays:
        if a.ndim != 2:
            raise LinAlgError(f"{a.ndim}-dimensional array given. Array must be "
                              "two-dimensional")
    if n == 3:
        (a0, a1b0), (b1c0, c1) = arrays[0].shape, arrays[2].shape
        A, B, C = arrays
        first = a0 * b1c0 * (a1b0 + c1) < a1b0 * c1 * (a0 + b1c0)
        result = _P.dot(_P.dot(A, B), C) if first else _P.dot(A, _P.dot(B, C))
    else:
        dims = [a.shape[0] for a in arrays] + [arrays[-1].shape[1]]
        result = _chain(arrays, _chain_order(dims), 0, n - 1)
    if out is not None:
        result = _R._finish(result, out)
    if ndim_first == 1 and ndim_last == 1:
        return result[0, 0]
    elif ndim_first == 1 or ndim_last == 1:
        return result.ravel()
    return result


# ------------------------------------------------------------------ array API

def matmul(x1, x2, /):
    return _P.matmul(x1, x2)


def tensordot(x1, x2, /, *, axes=2):
    return _S.tensordot(x1, x2, axes)


@_traced
def outer(x1, x2, /):
    x1, x2 = _lazy(x1), _lazy(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError("Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={x1.ndim} and x2.ndim={x2.ndim}.")
    return _S.outer(x1, x2)


def diagonal(x, /, *, offset=0):
    return _S.diagonal(x, offset, -2, -1)


def trace(x, /, *, offset=0, dtype=None):
    return _S.trace(x, offset, -2, -1, dtype)


@_traced
def matrix_transpose(x, /):
    x = _lazy(x)
    if x.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim}")
    return _M.swapaxes(x, -1, -2)


__getattr__ = _fallback_getattr(_np.linalg, "linalg.")
