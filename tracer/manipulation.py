"""Lazy versions of NumPy's array manipulation functions: views that reshape, transpose,
broadcast and flip, copies, and joining (concatenate, stack)."""
from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from . import graph as G
from .array import lazy, ndarray
from .indexing import basic_view
from .recording import proxy, traced
from .reductions import _finish
from .view import laid_out


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    return lazy(a).reshape(shape if shape is not None else newshape, order=order, copy=copy)


def transpose(a, axes=None):
    return lazy(a).transpose(axes)


def permute_dims(a, axes=None):
    return transpose(a, axes)


@traced
def swapaxes(a, axis1, axis2):
    a = lazy(a)
    i = normalize_axis_index(axis1, a.ndim, "axis1")
    j = normalize_axis_index(axis2, a.ndim, "axis2")
    perm = list(range(a.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return a.transpose(perm)


@traced
def moveaxis(a, source, destination):
    a = lazy(a)
    src = normalize_axis_tuple(source, a.ndim, "source")
    dst = normalize_axis_tuple(destination, a.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a.transpose(order)


@traced
def expand_dims(a, axis):
    a = lazy(a)
    return a.reshape(np.expand_dims(proxy(a.shape), axis).shape)


@traced
def squeeze(a, axis=None):
    a = lazy(a)
    return a.reshape(np.squeeze(proxy(a.shape), axis).shape)


@traced
def broadcast_to(a, shape, subok=False):
    a = lazy(a)
    shape = np.broadcast_to(proxy(a.shape), shape).shape  # NumPy's errors
    return a._broadcast_view(shape)


@traced
def broadcast_arrays(*args, subok=False):
    arrs = [lazy(a) for a in args]
    shape = np.broadcast_shapes(*[a.shape for a in arrs])
    return tuple(a._broadcast_view(shape) for a in arrs)


def ravel(a, order="C"):
    return lazy(a)._ravel_order(order)


def atleast_1d(*arys):
    res = [lazy(a) if lazy(a).ndim >= 1 else lazy(a).reshape(1) for a in arys]
    return res[0] if len(res) == 1 else tuple(res)


def atleast_2d(*arys):
    res = []
    for a in map(lazy, arys):
        res.append(a.reshape((1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return res[0] if len(res) == 1 else tuple(res)


@traced
def flip(m, axis=None):
    m = lazy(m)
    axes = range(m.ndim) if axis is None else normalize_axis_tuple(axis, m.ndim)
    key = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(m.ndim))
    return basic_view(m, key)


def flipud(m):
    return flip(m, 0)


def fliplr(m):
    return flip(m, 1)


def copy(a, order="K", subok=False):
    a = lazy(a)
    return laid_out(a.copy(), order, a)


@traced
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrs = [lazy(a) for a in arrays]
    if not arrs:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrs = [a.reshape(-1) for a in arrs]
        axis = 0
    if any(a.ndim == 0 for a in arrs):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    nd = arrs[0].ndim
    ax = normalize_axis_index(axis, nd)
    for i, a in enumerate(arrs[1:], 1):
        if a.ndim != nd:
            raise ValueError("all the input arrays must have same number of dimensions, but the "
                             f"array at index 0 has {nd} dimension(s) and the array at index {i} "
                             f"has {a.ndim} dimension(s)")
        for d in range(nd):
            if d != ax and a.shape[d] != arrs[0].shape[d]:
                raise ValueError("all the input array dimensions except for the concatenation "
                                 f"axis must match exactly, but along dimension {d}, the array "
                                 f"at index 0 has size {arrs[0].shape[d]} and the array at index "
                                 f"{i} has size {a.shape[d]}")
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*[a.dtype for a in arrs])
    for a in arrs:
        if not np.can_cast(a.dtype, dt, casting):
            raise TypeError(f"Cannot cast array data from {a.dtype!r} to {dt!r} according to the "
                            f"rule {casting!r}")
    nodes = tuple(G.cast(a._node, dt) for a in arrs if a.shape[ax] or len(arrs) == 1)
    if not nodes:
        nodes = (G.cast(arrs[0]._node, dt),)
    node = nodes[0] if len(nodes) == 1 else G.concatenate(nodes, ax)
    res = ndarray._from_node(node)
    if out is not None:
        return _finish(res, out)
    return res


@traced
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrs = [lazy(a) for a in arrays]
    if not arrs:
        raise ValueError("need at least one array to stack")
    if len({a.shape for a in arrs}) != 1:
        raise ValueError("all input arrays must have the same shape")
    ax = normalize_axis_index(axis, arrs[0].ndim + 1)
    return concatenate([expand_dims(a, ax) for a in arrs], ax, out, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([atleast_2d(a) for a in tup], 0, dtype=dtype, casting=casting)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype,
                       casting=casting)


NAMES = ("reshape transpose permute_dims swapaxes moveaxis expand_dims squeeze broadcast_to "
         "broadcast_arrays ravel atleast_1d atleast_2d flip flipud fliplr copy concatenate "
         "stack vstack hstack").split()
