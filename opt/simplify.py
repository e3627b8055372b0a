"""Algebraic simplification, constant folding, CSE and dead-write elimination.

Every algebraic rule is exact: same bits as NumPy for every input, NaN, +-inf, -0.0 and integer
wrap-around included. IEEE 754 leaves the sign and payload of a NaN result unspecified (6.3), so
a rule may change those, as NumPy's own loops do between SIMD and scalar code. A rule returns a
node of the original node's shape and dtype, or None.
"""
from __future__ import annotations

import numpy as np

from tracer.ir.node import Node, make
from tracer.ir.interp import eval_node
from tracer.ir.registry import OPS, Kind
from . import simplify_arith, simplify_casts, simplify_logic, simplify_shape
from .rewrite import Rule, apply_rules, rebuild
from .simplify_base import _bcast, _const, _const_node, _const_value, _reduce_ufunc, _reduced_count

# each family's rules, in the order a node tries them
ALGEBRAIC: list[Rule] = (simplify_arith.RULES + simplify_logic.RULES + simplify_casts.RULES +
                         simplify_shape.RULES)


def by_op(rules: list[Rule]) -> Rule:
    """One rule that tries, on each node, only the rules declared for its op, again on what a
    rule returns (a few times), so chains of rewrites settle in one sweep."""
    table: dict[str, list[Rule]] = {}
    for r in rules:
        for op in r.ops:
            table.setdefault(op, []).append(r.__wrapped__)

    def rule(n: Node) -> Node | None:
        m = n
        for _ in range(8):
            for r in table.get(m.op, ()):
                out = r(m)
                if out is not None and out is not m:
                    m = out
                    break
            else:
                break
        return m
    return rule


_SIMPLIFY = by_op(ALGEBRAIC)


def simplify(roots: list[Node]) -> list[Node]:
    """Algebraic simplification. O(k n) rule tries for k sweeps (k <= 16; one when nothing
    matches): a node tries only its own op's rules, each O(1) (but for a walk down a chain of
    movement ops to tell a bool's bytes, which simplification keeps short), a few times
    (by_op)."""
    return apply_rules(roots, [_SIMPLIFY])


# ---------------------------------------------------------------- constant folding

def fold_constant(n: Node) -> Node | None:
    # op of constants (or broadcasts of them) -> one constant, broadcast: elementwise ops by
    # their NumPy reference, movement of a constant, max/min/any/all of a constant
    d = OPS.get(n.op)
    if d is None or not n.inputs or any(_const_node(i) is None for i in n.inputs):
        return None
    if d.kind is Kind.MOVEMENT:
        return _bcast(_const_node(n.inputs[0]), n.shape)
    if d.kind is Kind.REDUCE:
        return _fold_reduce(n)
    if d.kind is not Kind.ELEMENTWISE:
        return None
    scalars = [np.asarray(_const_value(i), dtype=i.dtype) for i in n.inputs]
    tmp = make(n.op, tuple(_const(s[()], s.dtype) for s in scalars), (), n.dtype, n.attrs)
    try:
        out = eval_node(tmp, scalars)
    except ValueError:  # a data error (negative integer power) is the op's own, when it runs
        return None
    return _bcast(_const(out[()], n.dtype), n.shape)


def _fold_reduce(n: Node) -> Node | None:
    """An idempotent reduction of copies of c is the reduction of one c (NumPy's reference run
    on one element, for its dtype), or nothing to fold if no element is reduced."""
    d = OPS[n.op]
    if d.ufunc is None or not OPS[_reduce_ufunc(n)].props.idempotent or not _reduced_count(n):
        return None
    c = _const_node(n.inputs[0])
    one = np.asarray(c.attr("value"), dtype=c.dtype).reshape(1)
    with np.errstate(all="ignore"):
        v = np.asarray(d.ref(one, axes=(0,))).astype(n.dtype)
    return _bcast(_const(v[()], n.dtype), n.shape)


def constant_folding(roots: list[Node]) -> list[Node]:
    """Constant folding. O(k n) for k sweeps (k <= 16); a fold runs NumPy on 0-d values."""
    return apply_rules(roots, [fold_constant])


# ---------------------------------------------------------------- CSE and DCE

def cse(roots: list[Node]) -> list[Node]:
    """Merge structurally equal nodes. Interning does this while tracing; non-interned nodes
    (unhashable attributes) are merged here by value. O(n) (hashing each node's key)."""
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
    is dead. (Unreachable nodes need no pass: a graph is what its roots reach.) O(n)."""
    def step(n: Node, ins: tuple[Node, ...]) -> Node:
        if n.op == "setslice" and ins[0].op == "setslice" and \
                ins[0].attr("slices") == n.attr("slices"):
            ins = (ins[0].inputs[0], ins[1])
        return n if all(a is b for a, b in zip(ins, n.inputs)) else \
            make(n.op, ins, n.shape, n.dtype, n.attrs)
    return rebuild(roots, step)
