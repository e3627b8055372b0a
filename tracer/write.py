"""The write primitive: a lazy array's base variable takes a new value through the array's
view (`assign_full`), with NumPy's conversion of the value written (`value_node`). Below
ufuncs, reductions, gather and indexing, which all write through it, and the fallback, which
writes NumPy's results back with it.
"""
from __future__ import annotations

import numpy as np

from tracer.ir.node import Node
from tracer.ir.interp import apply_ref, run_graph
from tracer.ir.registry import OPS, Kind
from . import graph as G
from .array import asarray_node, ndarray, stands_for_scalar
from .recording import shape_str, traced
from .view import write_through


def known_values(node: Node) -> np.ndarray | None:
    """A node's values when they are known while recording: a constant, a host leaf, or a
    view of one (reshape, slice, broadcast, ...: NumPy's reference of the movement op)."""
    if node.op == "const":
        return np.asarray(node.attr("value"))
    if node.op == "input":
        return node.attr("buf").host
    d = OPS.get(node.op)
    if d is None or d.kind is not Kind.MOVEMENT or len(node.inputs) != 1:
        return None
    v = known_values(node.inputs[0])
    return None if v is None else apply_ref(node, [v])


def host_values(obj):
    """obj with each lazy array in it (also in lists and tuples) as its NumPy values."""
    if isinstance(obj, (list, tuple)):
        items = [host_values(o) for o in obj]  # a namedtuple takes its fields one by one
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, ndarray):
        return np.asarray(obj)
    return obj


def value_node(value, target: ndarray, scalar: bool = False) -> Node:
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
        arr = np.array(host_values(value), dtype=target.dtype)  # Python values convert to the target
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
    # x[k] = x[k], as `x[k] += 1` ends: nothing changes (recorded, the write would read the
    # buffer it writes, which then could not be updated in place)
    if value is target._node:
        return
    var = target._var
    var.assign(write_through(var.node, target._view.steps, value))


@traced
def write_all(a: ndarray, value) -> None:
    """`a[...] = value` (NumPy's conversion and broadcast of the value)."""
    assign_full(a, value_node(value, a))
