"""Reshape and transpose sinking (XLA's reshape mover, eXLA's reshape sinker): movement ops move
past elementwise ops toward the outputs, so elementwise chains meet without a movement op between
them, transposes meet and cancel, and reductions read their source in its own layout.

Transposes and reshapes keep the element count, so a sunk elementwise op runs on as many
elements as before, and it runs once even when the moved operands have other users.
"""
from __future__ import annotations

from tracer.ir.node import Node, make
from tracer.ir.registry import Kind, names
from .fusion import has_kernel, is_remap
from .rewrite import Rule, apply_rules
from .simplify import by_op
from .simplify_base import _bcast, _build, _reshape, _scalar, _transpose, on
from .simplify_shape import reshape_reshape, reshape_self, transpose_identity, transpose_transpose

_ELEMENTWISE = names(lambda d: d.kind is Kind.ELEMENTWISE)


def _sink(n: Node, op: str, key) -> Node | None:
    """n on the un-moved operands, when every operand is either an `op` node (all with the same
    key) or a broadcast scalar (re-broadcast to the un-moved shape)."""
    if not n.shape or not any(i.op == op for i in n.inputs):
        return None
    moved = [i for i in n.inputs if _scalar(i) is None]
    if not moved or any(m.op != op for m in moved) or len({key(m) for m in moved}) > 1:
        return None
    src = moved[0].inputs[0].shape
    ins = tuple(i.inputs[0] if _scalar(i) is None else _bcast(_scalar(i), src) for i in n.inputs)
    return make(n.op, ins, src, n.dtype, n.attrs)


@on(*_ELEMENTWISE)
def sink_transpose(n: Node) -> Node | None:
    # f(transpose(x, p), transpose(y, p), scalar) -> transpose(f(x, y, scalar), p)
    inner = _sink(n, "transpose", lambda m: m.attr("perm"))
    return None if inner is None else _transpose(inner, next(
        i.attr("perm") for i in n.inputs if i.op == "transpose"))


@on(*_ELEMENTWISE)
def sink_reshape(n: Node) -> Node | None:
    # f(reshape(x), reshape(y), scalar) -> reshape(f(x, y, scalar)) when x, y share a shape; a
    # reshape that moves data is a fusion barrier, so it moves only where f then fuses with a
    # producer (a reshape of leaves is a free view already)
    inner = _sink(n, "reshape", lambda m: m.inputs[0].shape)
    if inner is None:
        return None
    moved = [i for i in n.inputs if i.op == "reshape"]
    if all(is_remap(m) for m in moved) or any(has_kernel(m.inputs[0]) for m in moved):
        return _reshape(inner, n.shape)
    return None


@on(*names(lambda d: d.kind is Kind.REDUCE))
def transpose_into_reduce(n: Node) -> Node | None:
    # reduce(transpose(x, p), axes) -> transpose(reduce(x, p[axes]), q): NumPy reduces a
    # transposed view in memory order, i.e. as x over the mapped axes (bit for bit, ties too).
    # Not when it turns a reduction over trailing axes (a row kernel) into one over others.
    t = n.inputs[0]
    if t.op != "transpose":
        return None
    perm, axes = t.attr("perm"), n.attr("axes")
    mapped = tuple(sorted(perm[a] for a in axes))
    if _trailing(axes, t.ndim) and not _trailing(mapped, t.ndim):
        return None
    kept = [perm[i] for i in range(len(perm)) if i not in axes]
    red = _build(n.op, t.inputs, (("axes", mapped),))
    return _transpose(red, tuple(sorted(kept).index(k) for k in kept))


def _trailing(axes: tuple, ndim: int) -> bool:
    return tuple(axes) == tuple(range(ndim - len(axes), ndim))


SINKING: list[Rule] = [sink_transpose, sink_reshape, transpose_into_reduce, transpose_transpose,
                       transpose_identity, reshape_reshape, reshape_self]
_SINK = by_op(SINKING)


def sink_movement(roots: list[Node]) -> list[Node]:
    """Movement sinking. O(k n) rule tries for k sweeps (k <= 16; one when nothing moves)."""
    return apply_rules(roots, [_SINK])
