"""block, put, put_along_axis, choose and piecewise on lazy arrays, with NumPy's semantics.

- block: nested concatenations, as NumPy's _block_concatenate; NumPy's own _block_setup
  checks the nesting (its depth and empty-list errors).
- put (also `ndarray.put`), put_along_axis: in place, as a flat scatter written through the
  array's view, so every view of the same base sees the writes. Host and realized indices are
  checked now; an out-of-bounds computed index raises NumPy's IndexError when the array is
  evaluated. NumPy's put writes the values before a bad index and then raises; here nothing
  is written.
- choose: a chain of `where`s (one fused kernel). In mode "raise", host and realized indices
  are checked now (NumPy's ValueError "invalid entry in choice array"); computed indices pick
  from the stacked choices with a gather, which raises IndexError (not NumPy's ValueError)
  when evaluated, a negative entry e showing as e - len(choices).
- piecewise: NumPy's algorithm. A callable's `y[cond] = f(x[cond])` evaluates the mask (a
  boolean index: the shape depends on the data); a constant is a lazy `where`.
"""
from __future__ import annotations

import numpy as np
from numpy._core.shape_base import _block_info_recursion, _block_setup
from numpy.lib.array_utils import normalize_axis_index

from . import graph as G
from .array import lazy, ndarray
from .creation import asarray, zeros_like
from .manipulation import broadcast_to, concatenate, stack
from .selection import clip, where
from .recording import proxy, traced
from .view import c_strides
from .fallback import fallback_call
from .gather import scatter
from .indexing import setitem
from .reductions import _finish
from .shaping import along_axis_key
from .ufuncs import apply_ufunc
from .write import assign_full, known_values


# ------------------------------------------------------------------ block

def _atleast_nd(a, ndim: int) -> ndarray:
    a = a if isinstance(a, ndarray) else asarray(np.array(a, ndmin=ndim))
    return a.reshape((1,) * (ndim - a.ndim) + a.shape) if a.ndim < ndim else a


def _block(arrays, max_depth: int, result_ndim: int, depth: int = 0) -> ndarray:
    if depth < max_depth:
        return concatenate([_block(a, max_depth, result_ndim, depth + 1) for a in arrays],
                             axis=-(max_depth - depth))
    return _atleast_nd(arrays, result_ndim)


def _stand_ins(arrays):
    if isinstance(arrays, list):
        return [_stand_ins(a) for a in arrays]
    return proxy(arrays.shape, arrays.dtype) if isinstance(arrays, ndarray) else arrays


def _leaves(arrays):
    if isinstance(arrays, list):
        return [x for a in arrays for x in _leaves(a)]
    return [arrays]


@traced
def block(arrays):
    arrays, list_ndim, result_ndim, final_size = _block_setup(arrays)  # NumPy's errors
    if list_ndim * final_size > 2 * 512 * 512:
        # NumPy assembles big blocks by slicing: its shape check and message, its dtype
        _block_info_recursion(_stand_ins(arrays), list_ndim, result_ndim)
        dtype = np.result_type(*[a.dtype if isinstance(a, ndarray) else np.asarray(a).dtype
                                 for a in _leaves(arrays)])
        return _block(arrays, list_ndim, result_ndim).astype(dtype, copy=False)
    result = _block(arrays, list_ndim, result_ndim)
    return result.copy() if list_ndim == 0 else result


# ------------------------------------------------------------------ put

def _clipmode(mode) -> str:
    """How NumPy reads `mode` ('raise', 'wrap', 'clip', or its integer codes), with its errors."""
    probe = np.zeros(2, np.int8)
    try:
        probe.put([2], 1, mode=mode)
    except IndexError:
        return "raise"
    return "wrap" if probe[0] else "clip"


def _intp(ind):
    """Indices as NumPy's put and choose convert them: arrays cast to intp only safely (NumPy's
    TypeError otherwise), sequences converted directly."""
    if isinstance(ind, (ndarray, np.ndarray, np.generic)):
        if not np.can_cast(ind.dtype, np.intp, "safe"):
            np.zeros(1).put(np.empty(0, ind.dtype), 0)  # NumPy's TypeError
        return ind.astype(np.intp, copy=False) if isinstance(ind, ndarray) \
            else np.asarray(ind, np.intp)
    return np.array(ind, dtype=np.intp)


def _values(v, dtype):
    """put's values in the array's dtype (NumPy casts arrays unsafely, converts the rest)."""
    if isinstance(v, ndarray):
        return v.astype(dtype, copy=False)
    if isinstance(v, (np.ndarray, np.generic)):
        return np.asarray(v).astype(dtype)
    return np.array(v, dtype=dtype)


@traced
def _put(a: ndarray, ind, v, mode="raise") -> None:
    mode = _clipmode(mode)
    if not a._view.writeable:
        raise ValueError("put: output array is read-only")
    idx = _intp(ind).reshape(-1)
    n, ni = a.size, idx.size
    if ni > 0 and n == 0:
        raise IndexError("cannot replace elements of an empty array")
    vals = _values(v, a.dtype).reshape(-1)
    nv = vals.size
    if nv == 0 or ni == 0:
        return
    if isinstance(idx, ndarray):  # a lazy index: in "raise" mode the scatter checks it
        if mode == "wrap":
            idx = apply_ufunc(np.remainder, (idx, n))
        elif mode == "clip":
            idx = clip(idx, 0, n - 1)
    elif mode == "raise":
        bad = np.flatnonzero((idx < -n) | (idx >= n))
        if bad.size:
            raise IndexError(f"index {idx[bad[0]]} is out of bounds for axis 0 with size {n}")
    else:
        idx = idx % n if mode == "wrap" else np.clip(idx, 0, n - 1)
    # the values repeat over the indices
    if isinstance(vals, np.ndarray):
        vals = np.resize(vals, ni)
    elif nv >= ni:
        vals = vals[:ni]
    else:
        vals = vals[np.arange(ni) % nv]
    flat = a.reshape(-1)  # a view when a's layout allows, else a copy written back below
    scatter(flat, (idx,), vals)
    if flat._var is not a._var:
        assign_full(a, G.reshape(flat._node, a.shape))


@traced
def put(a, ind, v, mode="raise"):
    if isinstance(a, ndarray):
        return _put(a, ind, v, mode)
    if not hasattr(a, "put"):
        raise TypeError(f"argument 1 must be numpy.ndarray, not {type(a)}")
    return fallback_call("put", np.put, (a, ind, v), {"mode": mode})  # writes into a


def _c_contiguous(a: ndarray) -> bool:
    return a.size == 0 or all(d == 1 or s == c for d, s, c in
                              zip(a.shape, a._view.strides, c_strides(a.shape)))


@traced
def put_along_axis(arr, indices, values, axis):
    if not isinstance(arr, ndarray):
        return fallback_call("put_along_axis", np.put_along_axis, (arr, indices, values, axis),
                             {})
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        # NumPy writes into np.array(arr.flat): arr itself when C-contiguous, else a
        # read-only copy
        if not _c_contiguous(arr):
            raise ValueError("assignment destination is read-only")
        arr = arr.reshape(-1)
        axis = 0
    else:
        axis = normalize_axis_index(axis, arr.ndim)
    setitem(arr, along_axis_key(arr.shape, indices, axis), values)


# ------------------------------------------------------------------ choose

def _choice(c):
    """A choice as NumPy's ConvertToCommonType reads it: arrays and NumPy scalars keep their
    dtype, Python scalars stay weak, anything else becomes an array."""
    if isinstance(c, (ndarray, np.ndarray, np.generic, bool, int, float, complex)):
        return c
    return np.asarray(c)


@traced
def choose(a, choices, out=None, mode="raise"):
    mode = _clipmode(mode)
    a = a if isinstance(a, (ndarray, np.ndarray)) else np.asarray(a)
    choices = [_choice(c) for c in choices]
    if not choices:
        raise ValueError("0-length sequence.")
    # NumPy's result dtype, its conversion of Python scalars, and its TypeError for `a`
    stand = [np.zeros((), c.dtype) if isinstance(c, (ndarray, np.ndarray, np.generic)) else c
             for c in choices]
    dtype = np.choose(np.zeros(1, a.dtype), stand).dtype
    shapes = [a.shape] + [np.shape(c) for c in choices]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:  # NumPy's message, from zero-byte stand-ins
        np.choose(proxy(a.shape, a.dtype), [proxy(s, dtype) for s in shapes[1:]])
        raise
    if out is not None and tuple(np.shape(out)) != shape:
        raise TypeError("choose: invalid shape for output array.")
    vals = [lazy(c).astype(dtype, copy=False) if isinstance(c, (ndarray, np.ndarray, np.generic))
            else asarray(np.asarray(np.choose(np.array(k), stand), dtype))
            for k, c in enumerate(choices)]
    n = len(vals)
    idx = _intp(a)
    if mode == "raise":  # host and realized indices are checked now, as NumPy does
        known = idx if isinstance(idx, np.ndarray) else known_values(a._node)
        if known is not None and np.any((known < 0) | (known >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        idx = apply_ufunc(np.remainder, (idx, n))
    elif mode == "clip":
        idx = clip(idx, 0, n - 1)
    if mode == "raise" and isinstance(idx, ndarray):
        # a gather from the stacked choices: an entry outside [0, n) raises when evaluated
        idx = where(apply_ufunc(np.less, (idx, 0)), apply_ufunc(np.subtract, (idx, n)), idx)
        ones = (1,) * len(shape)
        key = (idx,) + tuple(np.arange(d).reshape(ones[:i] + (-1,) + ones[i + 1:])
                             for i, d in enumerate(shape))
        res = stack([broadcast_to(v, shape) for v in vals])[key]
    elif n == 1:
        res = broadcast_to(vals[0], shape).copy()
    else:
        idx = lazy(idx)
        res = broadcast_to(vals[-1], shape)
        for k in range(n - 2, -1, -1):
            res = where(apply_ufunc(np.equal, (idx, k)), vals[k], res)
    return res if out is None else _finish(res, out)


# ------------------------------------------------------------------ piecewise

def _first_is_array(condlist) -> bool:
    """Whether NumPy's condlist[0] is a list or an array (else condlist is one condition)."""
    if isinstance(condlist, ndarray):
        return condlist.ndim >= 2  # NumPy's [0] of a 1-d array is a scalar
    return isinstance(condlist[0], (list, np.ndarray, ndarray))


def _conditions(condlist) -> ndarray:
    """np.asarray(condlist, dtype=bool), lazily."""
    if isinstance(condlist, ndarray):
        return condlist.astype(bool, copy=False)
    if isinstance(condlist, np.ndarray):
        return asarray(condlist.astype(bool))
    conds = [c.astype(bool, copy=False) if isinstance(c, ndarray) else
             asarray(np.asarray(c, dtype=bool)) for c in condlist]
    if len({c.shape for c in conds}) > 1:  # NumPy's inhomogeneous-shape error
        np.asarray([proxy(c.shape, bool) for c in conds], dtype=bool)
    return stack(conds)


@traced
def piecewise(x, condlist, funclist, *args, **kw):
    x = lazy(x)
    n2 = len(funclist)
    if np.isscalar(condlist) or (not _first_is_array(condlist) and x.ndim != 0):
        condlist = [condlist]
    conds = _conditions(condlist)
    n = len(conds)
    if n == n2 - 1:  # the "otherwise" condition
        condelse = ~conds.any(axis=0, keepdims=True)
        conds = concatenate([conds, condelse], axis=0)
        n += 1
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = zeros_like(x)
    for cond, func in zip(conds, funclist):
        if not callable(func) and np.ndim(func) == 0:
            proxy(y.shape)[proxy(cond.shape, bool)]  # NumPy's errors for a mask that misfits
            val = func.astype(y.dtype) if isinstance(func, ndarray) else np.array(func, y.dtype)
            y = where(cond.reshape(cond.shape + (1,) * (y.ndim - cond.ndim)), val, y)
            continue
        # a 0-d mask indexes a 0-d array as one of shape (1,), as in NumPy
        xs, ys, cs = (t.reshape(1) for t in (x, y, cond)) if x.ndim == 0 else (x, y, cond)
        if not callable(func):
            ys[cs] = func
        else:
            vals = xs[cs]
            if vals.size > 0:
                ys[cs] = func(vals, *args, **kw)
    return y


NAMES = ("block", "put", "put_along_axis", "choose", "piecewise")
METHODS: dict = {"put": _put}
