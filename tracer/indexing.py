"""Basic indexing (ints, slices, None, Ellipsis) as views, and writes through views.

Reads and writes with integer arrays or masks are lazy gathers and scatters (gather.py); the
keys that module leaves (a scalar bool index) evaluate, run NumPy, and count as a fallback.
"""
from __future__ import annotations

import numpy as np

from tracer.ir import Node
from . import graph as G
from .gather import gather, scatter
from .array import (ndarray, proxy, shape_str, nocopy_reshape, write_through, asarray_node,
                    apply_view_numpy, stands_for_scalar, traced)


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


def _canonical(s: tuple) -> tuple:
    """An empty range as (0, 0, 1): `slice.indices` gives (-1, -1, -1) for `[-5::-1]` on 3
    elements, whose -1s every consumer would read as "from the end"."""
    return s if len(range(*s)) else (0, 0, 1)


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
        view = view._derive("slice", tuple(_canonical(s) for s in slices), shape, strides)
    if view.shape != out_shape:
        strides = nocopy_reshape(view.shape, view._view.strides, out_shape)
        view = view._derive("reshape", out_shape, out_shape, strides)
    if view is a:
        view = a._alias()
    return view


_ADVANCED = (int, np.integer, slice, type(None), type(Ellipsis), bool, np.bool_, list, tuple,
             np.ndarray, ndarray)


def _check_key(a: ndarray, key: tuple) -> None:
    """A key NumPy rejects whatever the values (a float, a string) raises now, while tracing."""
    if not all(isinstance(k, _ADVANCED) for k in key):
        proxy(a.shape)[key]


def _is_scalar_key(a: ndarray, key: tuple) -> bool:
    """An integer for every axis: NumPy returns the element as a new scalar, not a view."""
    return len(key) == a.ndim and all(isinstance(k, (int, np.integer)) and
                                      not isinstance(k, (bool, np.bool_)) for k in key)


@traced
def getitem(a: ndarray, key):
    key = _norm_key(key)
    if _is_basic(key):
        view = basic_view(a, key)
        if _is_scalar_key(a, key):  # a copy: later writes to `a` do not change it
            return ndarray._from_node(view._node)
        if stands_for_scalar(a):  # NumPy's scalar[...] or scalar[None]: a new array
            view = ndarray._from_node(view._node)
        if view.ndim == 0:  # a[...] of a 0-d array: a 0-d view, as in NumPy, not a scalar
            view._arr0 = True
        return view
    _check_key(a, key)
    out = gather(a, key)
    if out is not None:
        return out
    from .runtime import fallback_call
    return fallback_call("ndarray.__getitem__", lambda x, k: x[k], (a, key), {})


def _value_node(value, target: ndarray, scalar: bool = False) -> Node:
    """The node written into `target`. `scalar`: the key picked one element (a[1, 2] = v), where
    NumPy converts v as a single element and refuses any sequence."""
    if scalar and isinstance(value, ndarray):
        node = _element_node(value, target.dtype)
    elif scalar and isinstance(value, np.ndarray) and value.ndim > 0:
        one = np.zeros((), target.dtype)
        one[()] = value  # NumPy's own errors for a sequence into one element
        node = asarray_node(one)
    elif isinstance(value, ndarray):
        node = value._node
    elif isinstance(value, np.ndarray) and value.dtype.kind in "OSUVMm":
        arr = np.empty(value.shape, target.dtype)
        if target.size:  # objects, strings, dates: NumPy's own conversion and errors
            arr[...] = value
        node = asarray_node(arr)
    elif isinstance(value, np.ndarray) or isinstance(value, np.generic) and not scalar:
        node = asarray_node(value)
    elif scalar:
        one = np.zeros((), target.dtype)
        one[()] = value  # NumPy's own conversion and errors (OverflowError, NaN to int, ...)
        node = asarray_node(one)
    else:
        from .functions import _host
        arr = np.array(_host(value), dtype=target.dtype)  # Python values convert to the target
        if arr.ndim > target.ndim:
            raise ValueError("setting an array element with a sequence. The requested array "
                             f"would exceed the maximum number of dimension of {target.ndim}.")
        node = asarray_node(arr)
    with np.errstate(all="ignore"):
        node = G.cast(node, target.dtype)
    while node.ndim > target.ndim and node.shape[0] == 1:
        node = G.reshape(node, node.shape[1:])
    try:
        shape = np.broadcast_shapes(node.shape, target.shape)
    except ValueError:
        shape = None
    if shape is None or tuple(shape) != target.shape:
        raise ValueError(f"could not broadcast input array from shape {shape_str(node.shape)} "
                         f"into shape {shape_str(target.shape)}")
    return G.broadcast(node, target.shape)


def _element_node(value: ndarray, dtype: np.dtype) -> Node:
    """A lazy value written as one element: NumPy's scalar setitem (a NumPy scalar checks its
    value: OverflowError, NaN to int; a 0-d array casts; a sequence raises by shape and dtype).
    Where the value is known now (small, from host data or constants), or is a computed
    scalar whose conversion to an integer can fail, NumPy converts it here (the latter
    evaluates); any other computed value is cast as NumPy's array cast, with NumPy's value."""
    host = _known_small(value._node)
    if host is None and stands_for_scalar(value) and dtype.kind in "iu" and \
            not np.can_cast(value.dtype, dtype, "safe"):
        host = value.__array__()  # NumPy checks a scalar's value here (NaN, out of range)
    # an unknown value: its shape and dtype alone decide NumPy's errors for a sequence
    probe = np.broadcast_to(np.zeros((), value.dtype), value.shape) if host is None else host
    one = np.zeros((), dtype)
    one[()] = probe[()] if stands_for_scalar(value) else probe
    if host is not None:
        return asarray_node(one)
    node = value._node
    return node if node.ndim == 0 else G.reshape(node, ())


_KNOWN_OPS = 8  # a longer computation is not worth running twice


def _known_small(node: Node) -> np.ndarray | None:
    """The values of a small elementwise computation on known data (host leaves, constants),
    run with NumPy now; None for anything else (a write in a loop stays lazy)."""
    from tracer.ir.interp import run_graph
    from tracer.ir.registry import OPS, Kind
    from .ufuncs import known_values
    if node.size > 1:
        return None
    seen, todo = set(), [node]
    while todo:  # bounded: never walks a long history of writes
        n = todo.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if len(seen) > _KNOWN_OPS or not n.inputs and known_values(n) is None or \
                n.inputs and OPS[n.op].kind not in (Kind.ELEMENTWISE, Kind.MOVEMENT):
            return None
        todo += n.inputs
    return run_graph([node], leaf=known_values)[0]


def assign_full(target: ndarray, value: Node) -> None:
    """Replace all of `target` (a view of its base) with `value`, which has target's shape."""
    if not target._view.writeable:
        raise ValueError("assignment destination is read-only")
    var = target._var
    var.assign(write_through(var.node, target._view.steps, value))


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
        assign_full(target, _value_node(value, target, element))
        return
    _check_key(a, key)
    if scatter(a, key, value):
        return
    from .runtime import count_fallback, to_numpy
    count_fallback("ndarray.__setitem__")
    var = a._var
    base = np.array(to_numpy(ndarray(var)), copy=True)
    view = apply_view_numpy(base, a._view.steps)
    k = tuple(to_numpy(x) if isinstance(x, ndarray) else x for x in key)
    view[k] = to_numpy(value) if isinstance(value, ndarray) else value
    var.assign(G.leaf(base))
