"""Simplifier rules for movement ops (transpose, reshape, broadcast, slice) and reductions."""
from __future__ import annotations

import numpy as np

from tracer.ir.node import Node
from tracer.ir.registry import ACC_LOGICAL, OPS, Kind, keeps_values, names
from .rewrite import Rule
from .simplify_base import (_EXACT, _REDUCTIONS, _bcast, _build, _bytes_01, _reduce_ufunc,
                            _reduced_count, _reshape, _scalar, _transpose, on)

_MOVEMENT = names(lambda d: d.kind is Kind.MOVEMENT)


# ---------------------------------------------------------------- movement

@on("transpose")
def transpose_transpose(n: Node) -> Node | None:
    # transpose(transpose(x, p), q) -> transpose(x, p[q])
    return _transpose(n.inputs[0], n.attr("perm")) if n.inputs[0].op == "transpose" else None


@on("transpose")
def transpose_identity(n: Node) -> Node | None:
    # transpose(x, (0, 1, ...)) -> x
    return n.inputs[0] if n.attr("perm") == tuple(range(n.ndim)) else None


@on("reshape")
def reshape_reshape(n: Node) -> Node | None:
    # reshape(reshape(x, s), t) -> reshape(x, t)
    return _reshape(n.inputs[0], n.shape) if n.inputs[0].op == "reshape" else None


@on("reshape")
def reshape_self(n: Node) -> Node | None:
    # reshape(x, x.shape) -> x
    return n.inputs[0] if n.inputs[0].shape == n.shape else None


@on("broadcast_to")
def broadcast_broadcast(n: Node) -> Node | None:
    # broadcast_to(broadcast_to(x, s), t) -> broadcast_to(x, t)
    inner = n.inputs[0]
    if inner.op == "broadcast_to":
        return _build("broadcast_to", inner.inputs, n.attrs)
    return None


@on("broadcast_to")
def broadcast_self(n: Node) -> Node | None:
    # broadcast_to(x, x.shape) -> x
    return n.inputs[0] if n.inputs[0].shape == n.shape else None


def _compose(outer: tuple, inner: tuple) -> tuple:
    """One (start, stop, step) selecting what `outer` selects from what `inner` selected."""
    (a1, _, c1), (a2, b2, c2) = inner, outer
    length = len(range(a2, b2, c2))
    if length == 0:
        return (0, 0, 1)
    start, step = a1 + a2 * c1, c1 * c2
    last = start + (length - 1) * step
    return (start, last + 1, step) if step > 0 else (start, last - 1, step)


@on("slice")
def slice_slice(n: Node) -> Node | None:
    # slice(slice(x, s), t) -> slice(x, s then t)
    inner = n.inputs[0]
    if inner.op == "slice":
        sl = tuple(_compose(o, i) for o, i in zip(n.attr("slices"), inner.attr("slices")))
        return _build("slice", inner.inputs, (("slices", sl),))
    return None


@on("slice")
def slice_full(n: Node) -> Node | None:
    # x[0:len:1, ...] -> x
    x = n.inputs[0]
    if all(a == 0 and c == 1 and len(range(a, b, c)) == d
           for (a, b, c), d in zip(n.attr("slices"), x.shape)):
        return x
    return None


@on(*_MOVEMENT)
def movement_of_broadcast_scalar(n: Node) -> Node | None:
    # transpose/reshape/slice/broadcast of a broadcast scalar s -> broadcast_to(s, new shape)
    s = _scalar(n.inputs[0])
    return None if s is None else _bcast(s, n.shape)


# ---------------------------------------------------------------- reductions

def _order_free(n: Node) -> bool:
    """The reduction's result does not depend on the order it visits elements in: integer
    wrap-around and logical reductions (float max/min do: which of -0.0 and 0.0 wins a tie)."""
    return n.dtype.kind in _EXACT or isinstance(OPS[n.op].identity, bool)


def _keeps_values(n: Node) -> bool:
    """Reducing one element gives the element, bit for bit (registry.keeps_values): not for
    any/all of non-bool (0/1), float sums (NumPy starts them at +0.0: sum([-0.0]) is 0.0) nor
    complex products ((1+0j) * (inf+1j) is inf+nanj), nor any/all of a bool whose bytes may be
    other than 0/1 (x | False makes them 0/1)."""
    x = n.inputs[0]
    if OPS[n.op].accumulate == ACC_LOGICAL and x.dtype == np.bool_:
        return _bytes_01(x)
    return keeps_values(OPS[n.op], n.dtype)


@on(*_REDUCTIONS)
def reduce_of_one_element(n: Node) -> Node | None:
    # reduce(x, axes) over no axes or axes of length 1 -> reshape(x), where NumPy reduces one
    # element to itself
    x = n.inputs[0]
    if all(x.shape[a] == 1 for a in n.attr("axes")) and _keeps_values(n):
        return _reshape(x, n.shape)
    return None


@on(*_REDUCTIONS)
def nested_reduce(n: Node) -> Node | None:
    # reduce(reduce(x, a), b) -> reduce(x, a + b mapped to x's axes), same op, order-free only
    inner = n.inputs[0]
    if inner.op != n.op or not _order_free(n):
        return None
    inner_axes = inner.attr("axes")
    kept = [i for i in range(inner.inputs[0].ndim) if i not in inner_axes]
    axes = tuple(sorted(set(inner_axes) | {kept[a] for a in n.attr("axes")}))
    return _build(n.op, inner.inputs, (("axes", axes),))


@on(*_REDUCTIONS)
def reduce_of_broadcast_scalar(n: Node) -> Node | None:
    # max/min/any/all of broadcast_to(s) over a non-empty set -> broadcast_to(s): every element
    # is s, bit for bit
    s = _scalar(n.inputs[0])
    idem = OPS[_reduce_ufunc(n)].props.idempotent
    if s is not None and n.inputs[0].shape and idem and _keeps_values(n) and _reduced_count(n):
        return _bcast(s, n.shape)
    return None


RULES: list[Rule] = [
    transpose_transpose, transpose_identity, reshape_reshape, reshape_self,
    broadcast_broadcast, broadcast_self, slice_slice, slice_full, movement_of_broadcast_scalar,
    reduce_of_one_element, nested_reduce, reduce_of_broadcast_scalar,
]
