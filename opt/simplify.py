"""Algebraic simplification, constant folding, CSE and dead-write elimination."""
from __future__ import annotations

import numpy as np

from ir import Node, make, toposort
from ir.node import make_const
from ir.interp import eval_node
from ir.registry import OPS, Kind
from .rewrite import Rule, apply_rules, rebuild


def _const_value(n: Node):
    """The scalar a node stands for, if it is a constant or a broadcast of one."""
    if n.op == "broadcast_to":
        n = n.inputs[0]
    if n.op == "const":
        return n.attr("value")
    return None


def _is_const(n: Node, value) -> bool:
    v = _const_value(n)
    return v is not None and not isinstance(v, complex) and v == value and \
        not (isinstance(v, float) and v != v)


def _const(value, dtype) -> Node:
    return make_const(np.asarray(value, dtype=dtype)[()], dtype)


def _bcast(c: Node, shape) -> Node:
    return c if c.shape == tuple(shape) else \
        make("broadcast_to", (c,), shape, c.dtype, (("shape", tuple(shape)),))


# ---------------------------------------------------------------- algebraic rules

def x_times_one(n: Node) -> Node | None:
    # x*1 -> x, 1*x -> x
    if n.op == "multiply":
        a, b = n.inputs
        if _is_const(b, 1) and a.dtype == n.dtype:
            return a
        if _is_const(a, 1) and b.dtype == n.dtype:
            return b
    return None


def x_minus_zero(n: Node) -> Node | None:
    # x-(+0) -> x (x+0 and x-(-0) are not identities for x = -0.0)
    c = n.inputs[1] if n.op == "subtract" else None
    if c is not None and c.op == "broadcast_to":
        c = c.inputs[0]
    if c is not None and _is_const(c, 0) and not c.attr("neg") and n.inputs[0].dtype == n.dtype:
        return n.inputs[0]
    return None


def int_plus_zero(n: Node) -> Node | None:
    # x+0 -> x for integers
    if n.op == "add" and n.dtype.kind in "iu":
        a, b = n.inputs
        if _is_const(b, 0):
            return a
        if _is_const(a, 0):
            return b
    return None


def involution(n: Node) -> Node | None:
    # -(-x) -> x, ~~x -> x
    d = OPS.get(n.op)
    if d is not None and d.props.involution and n.inputs[0].op == n.op:
        return n.inputs[0].inputs[0]
    return None


def idempotent(n: Node) -> Node | None:
    # maximum(x, x) -> x, x & x -> x
    d = OPS.get(n.op)
    if d is not None and d.props.idempotent and n.inputs[0] is n.inputs[1] \
            and n.inputs[0].dtype == n.dtype:
        return n.inputs[0]
    return None


def where_same(n: Node) -> Node | None:
    # where(c, x, x) -> x
    if n.op == "where" and n.inputs[1] is n.inputs[2]:
        return n.inputs[1]
    return None


def where_const(n: Node) -> Node | None:
    # where(True, x, y) -> x
    if n.op == "where":
        v = _const_value(n.inputs[0])
        if v is not None:
            return n.inputs[1] if v else n.inputs[2]
    return None


def transpose_transpose(n: Node) -> Node | None:
    # transpose(transpose(x, p), q) -> transpose(x, p[q])
    if n.op == "transpose" and n.inputs[0].op == "transpose":
        inner = n.inputs[0]
        p, q = inner.attr("perm"), n.attr("perm")
        perm = tuple(p[i] for i in q)
        x = inner.inputs[0]
        if perm == tuple(range(len(perm))):
            return x
        return make("transpose", (x,), n.shape, n.dtype, (("perm", perm),))
    return None


def lossless_cast_pair(n: Node) -> Node | None:
    # cast(cast(x, wide), x.dtype) -> x when the inner cast is lossless
    if n.op == "cast" and n.inputs[0].op == "cast":
        x = n.inputs[0].inputs[0]
        if x.dtype == n.dtype and np.can_cast(x.dtype, n.inputs[0].dtype, "safe"):
            return x
    return None


ALGEBRAIC: list[Rule] = [x_times_one, x_minus_zero, int_plus_zero, involution, idempotent,
                         where_same, where_const, transpose_transpose, lossless_cast_pair]


def simplify(roots: list[Node]) -> list[Node]:
    return apply_rules(roots, ALGEBRAIC)


# ---------------------------------------------------------------- constant folding

def fold_constant(n: Node) -> Node | None:
    # elementwise op of constants (or broadcasts of them) -> one constant
    d = OPS.get(n.op)
    if d is None or d.kind is not Kind.ELEMENTWISE or not n.inputs:
        return None
    vals = [_const_value(i) for i in n.inputs]
    if any(v is None for v in vals):
        return None
    scalars = [np.asarray(v, dtype=i.dtype) for v, i in zip(vals, n.inputs)]
    tmp = make(n.op, tuple(_const(s[()], s.dtype) for s in scalars), (), n.dtype, n.attrs)
    out = eval_node(tmp, scalars)
    return _bcast(_const(out[()], n.dtype), n.shape)


def constant_folding(roots: list[Node]) -> list[Node]:
    return apply_rules(roots, [fold_constant])


# ---------------------------------------------------------------- CSE and DCE

def cse(roots: list[Node]) -> list[Node]:
    """Merge structurally equal nodes. Interning does this while tracing; non-interned nodes
    (unhashable attributes) are merged here by value."""
    seen: dict[tuple, Node] = {}

    def step(n: Node, ins: tuple[Node, ...]) -> Node:
        key = (n.op, tuple(id(i) for i in ins), n.shape, n.dtype.str, _attr_key(n))
        hit = seen.get(key)
        if hit is not None:
            return hit
        m = n if all(a is b for a, b in zip(ins, n.inputs)) else \
            make(n.op, ins, n.shape, n.dtype, n.attrs)
        seen[key] = m
        return m

    return rebuild(roots, step)


def _attr_key(n: Node):
    try:
        hash(n.attrs)
        return n.attrs
    except TypeError:
        return ("repr", repr(n.attrs))


def dce(roots: list[Node]) -> list[Node]:
    """Dead-write elimination: a slice write fully overwritten by a later write of the same slice
    is dead. (Unreachable nodes need no pass: a graph is what its roots reach.)"""
    def step(n: Node, ins: tuple[Node, ...]) -> Node:
        if n.op == "setslice" and ins[0].op == "setslice" and \
                ins[0].attr("slices") == n.attr("slices"):
            ins = (ins[0].inputs[0], ins[1])
        return n if all(a is b for a, b in zip(ins, n.inputs)) else \
            make(n.op, ins, n.shape, n.dtype, n.attrs)
    return rebuild(roots, step)


def count_nodes(roots: list[Node]) -> int:
    return len(toposort(roots))
