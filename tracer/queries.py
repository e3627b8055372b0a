"""NumPy's questions about an array that a lazy array answers from its shape and view, without
evaluating: size, shape, ndim, isfortran, shares_memory, may_share_memory."""
from __future__ import annotations

import numpy as np

from .array import lazy, ndarray
from .eager import host
from .view import apply_view_numpy


def size(a, axis=None):
    a = lazy(a)
    return a.size if axis is None else a.shape[axis]


def shape(a):
    return lazy(a).shape


def ndim(a):
    return lazy(a).ndim


def isfortran(a):
    """From the strides a lazy array would have: nothing is evaluated."""
    return a.flags.fnc if isinstance(a, ndarray) else np.isfortran(a)


def _overlap(a, b, fn, max_work):
    """NumPy's answer on stand-ins: two lazy arrays share memory only if they view one base,
    and then exactly where NumPy's views of an uninitialized base of that shape would (pages
    never touched). A lazy array holds its own copy of any NumPy data it was given; a NumPy
    array may view its realized buffer (np.asarray's snapshot), which NumPy answers for."""
    if not isinstance(a, ndarray) or not isinstance(b, ndarray):
        if isinstance(b, ndarray):
            a, b = b, a
        if isinstance(a, ndarray):
            h = host(a)  # None while pending or on a device: no NumPy array views it yet
            return h is not None and bool(fn(h, b, max_work=max_work))
        return fn(a, b, max_work=max_work)
    if a._var is not b._var:
        return False
    base = np.empty(a._var.node.shape, a._var.node.dtype)  # .view(dtype) steps regroup bytes
    return bool(fn(apply_view_numpy(base, a._view.steps), apply_view_numpy(base, b._view.steps),
                   max_work=max_work))


def shares_memory(a, b, max_work=None):
    return _overlap(a, b, np.shares_memory, max_work)


def may_share_memory(a, b, max_work=None):
    return _overlap(a, b, np.may_share_memory, max_work)


NAMES = ("size shape ndim isfortran shares_memory may_share_memory").split()
