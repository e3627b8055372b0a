"""Basic indexing (ints, slices, None, Ellipsis) as views, and `a[key] = v` (written through
the write primitive, write.py).

Reads and writes with integer arrays or masks are lazy gathers and scatters (gather.py); the
keys that module leaves (a scalar bool index) evaluate, run NumPy, and count as a fallback.
"""
from __future__ import annotations

import numpy as np

from . import graph as G
from .array import ndarray, stands_for_scalar
from .recording import proxy, traced
from .view import canonical_range, index_view, nocopy_reshape
from .fallback import count_fallback, fallback_call
from .gather import gather, scatter
from .store import to_numpy
from .view import apply_view_numpy
from .write import assign_full, value_node


def _is_basic(key: tuple) -> bool:
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            continue
        if isinstance(k, (bool, np.bool_)):
            return False
        if isinstance(k, (int, np.integer)):
            continue
        return False
    return True


def _norm_key(key) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def basic_view(a: ndarray, key: tuple) -> ndarray:
    out_shape = proxy(a.shape)[key].shape  # NumPy's own IndexError / TypeError
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if Ellipsis in [k for k in key if k is Ellipsis]:
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (a.ndim - n_real) + key[i + 1:]
    else:
        key = key + (slice(None),) * (a.ndim - n_real)
    slices, ax = [], 0
    for k in key:
        if k is None:
            continue
        d = a.shape[ax]
        if isinstance(k, slice):
            slices.append(k.indices(d))
        else:
            i = int(k) + d if int(k) < 0 else int(k)
            slices.append((i, i + 1, 1))
        ax += 1
    view = a
    slices = tuple(slices)
    if slices != G.full_slice(a.shape):
        shape = tuple(len(range(*s)) for s in slices)
        strides = tuple(st * s[2] for st, s in zip(a._view.strides, slices))
        view = view._derive("slice", tuple(map(canonical_range, slices)), shape, strides)
    if view.shape != out_shape:
        strides = nocopy_reshape(view.shape, view._view.strides, out_shape)
        view = view._derive("reshape", out_shape, out_shape, strides)
    if view is a:
        view = a._alias()
    return view


_ADVANCED = (int, np.integer, slice, type(None), type(Ellipsis), bool, np.bool_, list, tuple,
             np.ndarray, ndarray)


def _check_key(a: ndarray, key: tuple) -> None:
    """A key NumPy rejects whatever the values (a float, a string, a list of floats: NumPy's
    message for a list is not its message for an array) raises now, while tracing."""
    if not all(isinstance(k, _ADVANCED) and type(k) is not list for k in key):
        proxy(a.shape)[key]


def _is_scalar_key(a: ndarray, key: tuple) -> bool:
    """An integer for every axis: NumPy returns the element as a new scalar, not a view."""
    return len(key) == a.ndim and all(isinstance(k, (int, np.integer)) and
                                      not isinstance(k, (bool, np.bool_)) for k in key)


def quick_view(a: ndarray, key) -> ndarray | None:
    """basic_view for the common key, integers and slices for the leading axes, at a fraction
    of its cost (no recording, no NumPy check, one View built); None for any other key, or an
    integer out of range (basic_view raises NumPy's IndexError)."""
    v = a._view
    nv = index_view(v, key if type(key) is tuple else (key,))
    if nv is None:
        return None
    return a._alias() if nv is v else ndarray(a._var, nv)


@traced
def getitem(a: ndarray, key):
    key = _norm_key(key)
    if _is_basic(key):
        view = basic_view(a, key)
        if _is_scalar_key(a, key):  # a copy: later writes to `a` do not change it
            node = view._node
            if node.dtype == np.bool_:  # NumPy's scalar is 0/1 whatever the byte (a bool view)
                node = G.elementwise("not_equal", (node, G.const(False, node.dtype)))
            return ndarray._from_node(node)
        if stands_for_scalar(a):  # NumPy's scalar[...] or scalar[None]: a new array
            view = ndarray._from_node(view._node)
        if view.ndim == 0:  # a[...] of a 0-d array: a 0-d view, as in NumPy, not a scalar
            view._arr0 = True
        return view
    _check_key(a, key)
    out = gather(a, key)
    if out is not None:
        return out
    return fallback_call("ndarray.__getitem__", lambda x, k: x[k], (a, key), {})


@traced
def setitem(a: ndarray, key, value) -> None:
    key = _norm_key(key)
    if not a._view.writeable:
        raise ValueError("assignment destination is read-only")
    if _is_basic(key):
        target = basic_view(a, key)
        # a NumPy scalar converts as one element, as a Python value does (OverflowError)
        element = _is_scalar_key(a, key) or isinstance(value, np.generic) or \
            isinstance(value, ndarray) and stands_for_scalar(value)
        assign_full(target, value_node(value, target, element))
        return
    _check_key(a, key)
    if scatter(a, key, value):
        return
    count_fallback("ndarray.__setitem__")
    var = a._var
    base = np.array(to_numpy(ndarray(var)), copy=True)
    view = apply_view_numpy(base, a._view.steps)
    k = tuple(to_numpy(x) if isinstance(x, ndarray) else x for x in key)
    view[k] = to_numpy(value) if isinstance(value, ndarray) else value
    var.assign(G.leaf(base))
