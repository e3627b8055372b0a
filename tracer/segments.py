"""`ufunc.reduceat`: segmented reductions, recorded lazily as the library op `reduceat`
(ir/library_ops.py).

NumPy's meaning, which the op keeps: along `axis`, output k reduces the segment
[indices[k], indices[k+1]) (the last one to the end), or is a[indices[k]] alone where
indices[k] >= indices[k+1]; each segment starts from its first element (no identity), then
applies the ufunc's reduce loop to the rest (a float add sums the rest pairwise). The loop's
dtype is NumPy's: add and multiply of booleans and small integers in intp (uintp) unless
`dtype=` or `out=` says otherwise; with `out=`, the loop NumPy promotes from out's dtype and
the array's, cast unsafely into out.

Checks run NumPy's own reduceat on stand-ins with no elements (the reduced axis kept, every
other axis 0), so dtypes, axis, indices and their errors are NumPy's, at the user's line.
Indices known while recording are bounds-checked then; lazy ones when the op runs (the cpu
backend runs NumPy's routine; cuda flags them on the device, cuda_kernels/cuda/reduceat.py).
"""
from __future__ import annotations

import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index
from numpy.lib.stride_tricks import as_strided

from . import graph as G
from .array import lazy, ndarray
from .fallback import FOREIGN_KINDS, fallback_call, foreign_operand
from .recording import traced
from .write import assign_full, known_values


def _flat_zeros(shape, dtype) -> np.ndarray:
    """A writeable array of `shape` with no memory behind it but one element (stride 0)."""
    return as_strided(np.zeros(1, dtype), shape, (0,) * len(shape), writeable=True)


def _axis(uf: np.ufunc, a: ndarray, axis, dtype) -> int:
    """axis as an index of a's axes; NumPy's errors (a scalar, several axes, out of range)."""
    try:
        uf.reduceat(np.zeros((1,) * a.ndim, a.dtype), np.zeros(0, np.intp), axis=axis,
                    dtype=dtype)
    except TypeError as e:  # no loop for a's dtype (out's may have one): the axis on one
        try:
            uf.reduceat(np.zeros((1,) * a.ndim, np.int64), np.zeros(0, np.intp), axis=axis)
        except TypeError:
            raise e from None
    if axis is None:
        return 0
    if isinstance(axis, tuple):
        axis = axis[0]
    return normalize_axis_index(operator.index(axis), a.ndim)


def _index_probe(indices):
    """What NumPy's probe gets for `indices`: their values where known, else an empty array of
    their dtype and rank (NumPy's dtype and rank errors)."""
    if not isinstance(indices, ndarray):
        return indices, None
    known = known_values(indices._node)
    if known is not None:
        return known, None
    return np.zeros((0,) * indices.ndim, indices.dtype), indices


def _out(out):
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError("The 'out' tuple must have exactly one entry per ufunc output")
        out = out[0]
    if out is not None and not isinstance(out, (ndarray, np.ndarray)):
        raise TypeError("return arrays must be of ArrayType")
    if isinstance(out, ndarray) and not out._view.writeable or \
            isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError("output array is read-only")
    return out


@traced
def reduceat(uf: np.ufunc, array, indices, axis=0, dtype=None, out=None):
    """`uf.reduceat(array, indices, axis, dtype, out)` as a lazy `reduceat` op (module
    docstring); NumPy runs it (a counted fallback) for dtypes tracer does not hold and for
    ufuncs from outside NumPy."""
    out = _out(out)
    if foreign_operand(array) or dtype is not None and np.dtype(dtype).kind in FOREIGN_KINDS or \
            getattr(np, uf.__name__, None) is not uf:  # (the op names NumPy's ufuncs)
        kw = {"axis": axis, "dtype": dtype} | ({"out": out} if out is not None else {})
        return fallback_call(f"{uf.__name__}.reduceat", uf.reduceat, (array, indices), kw)
    a = lazy(array)
    if a.ndim == 0:
        uf.reduceat(np.zeros((), a.dtype), indices)  # NumPy's TypeError
    ax = _axis(uf, a, axis, dtype)
    n = a.shape[ax]
    values, lazy_idx = _index_probe(indices)
    probe = _flat_zeros((n, 0), a.dtype)
    res = None
    try:
        res = uf.reduceat(probe, values, axis=0, dtype=dtype)  # dtypes, indices, their bounds
    except TypeError:  # no loop for the array's dtype: out's may have one (bool subtract)
        if out is None:
            raise
    k = res.shape[0] if res is not None else len(np.asarray(values))
    shape = a.shape[:ax] + (k,) + a.shape[ax + 1:]
    if out is not None:
        uf.reduceat(probe, values, axis=0, dtype=dtype, out=np.empty((k, 0), out.dtype))
        if out.shape != shape:  # NumPy's own message, raised before it computes anything
            uf.reduceat(_flat_zeros(a.shape, a.dtype),
                        values if lazy_idx is None else np.zeros(k, np.intp), axis=ax,
                        dtype=dtype, out=_flat_zeros(out.shape, out.dtype))
            # an out NumPy remaps (shape (k, 1) for (k,)): NumPy's answer
            return fallback_call(f"{uf.__name__}.reduceat", uf.reduceat, (a, indices),
                                 {"axis": axis, "dtype": dtype, "out": out})
    if res is not None and (out is None or dtype is not None):
        loop = res.dtype
    else:  # NumPy's loop from out's dtype and the array's, cast unsafely into out
        loop = uf.resolve_dtypes((out.dtype, a.dtype, None), reduction=True, casting="unsafe")[2]
    idx = G.cast(lazy_idx._node, np.intp) if lazy_idx is not None else \
        G.leaf(np.array(values, dtype=np.intp).reshape(k))
    node = G._typed("reduceat", (a._node, idx),
                    (("ufunc", uf.__name__), ("axis", ax), ("dtype", loop.str)))
    if out is None:
        return ndarray._from_node(node)
    if isinstance(out, np.ndarray):  # a host array to fill: NumPy's meaning needs the values now
        with np.errstate(all="ignore"):
            np.copyto(out, np.asarray(ndarray._from_node(node)), casting="unsafe")
        return out
    with np.errstate(all="ignore"):
        assign_full(out, G.cast(node, out.dtype))
    return out
