"""Simplifier rules for max, min, logical, comparison and bitwise ops."""
from __future__ import annotations

import numpy as np

from tracer.ir.node import Node
from tracer.ir.registry import OPS, names, reduce_identity
from .rewrite import Rule
from .simplify_base import (_EXACT, _REDUCTIONS, _eq, _full, _is_const, _like, _other, _same,
                            _same_bool, on)

_REDUCE_OF = {OPS[r].ufunc.__name__: OPS[r] for r in _REDUCTIONS}


@on(*names(lambda d: d.props.involution))
def involution(n: Node) -> Node | None:
    # -(-x) -> x, ~~x -> x (a bool ~ is logical: 0/1 bytes)
    return _same_bool(n.inputs[0].inputs[0], n) if n.inputs[0].op == n.op else None


@on(*names(lambda d: d.props.idempotent))
def idempotent(n: Node) -> Node | None:
    # maximum(x, x) -> x, x & x -> x
    return _same_bool(n.inputs[0], n) if n.inputs[0] is n.inputs[1] else None


@on(*(op for op in _REDUCE_OF if OPS[op].props.idempotent))
def idempotent_identity(n: Node) -> Node | None:
    # maximum(x, -inf) -> x, minimum(x, +inf) -> x (int/bool: their extremes), x and True -> x,
    # x or False -> x. Complex values have no such identity (they compare lexicographically).
    if n.dtype.kind == "c":
        return None
    return _same_bool(_other(n, _eq(reduce_identity(_REDUCE_OF[n.op], n.dtype))), n)


@on("logical_and", "logical_or")
def logical_absorb(n: Node) -> Node | None:
    # x and False -> False, x or True -> True, for any x (NaN is true)
    absorbing = n.op == "logical_or"
    return _full(absorbing, n) if _other(n, _eq(absorbing)) is not None else None


@on("logical_not")
def logical_not_not(n: Node) -> Node | None:
    # not not x -> x for bool x
    inner = n.inputs[0]
    return _same_bool(inner.inputs[0], n) if inner.op == "logical_not" else None


_NEGATED = {"equal": "not_equal", "not_equal": "equal", "less": "greater_equal",
            "greater_equal": "less", "greater": "less_equal", "less_equal": "greater"}


@on("logical_not", "invert")
def not_of_compare(n: Node) -> Node | None:
    # not(a == b) -> a != b for any a, b; not(a < b) -> a >= b only for integers/bool (NaN)
    c = n.inputs[0]
    if c.op in _NEGATED and (c.op in ("equal", "not_equal") or
                             all(i.dtype.kind in _EXACT for i in c.inputs)):
        return _like(n, _NEGATED[c.op], c.inputs)
    return None


_SELF_COMPARE = {"equal": True, "less_equal": True, "greater_equal": True,
                 "not_equal": False, "less": False, "greater": False}


@on(*_SELF_COMPARE)
def compare_self(n: Node) -> Node | None:
    # x==x, x<=x, x>=x -> True, x!=x -> False for integers/bool; x<x, x>x -> False for floats
    # too (NaN==NaN is False, NaN<NaN is False)
    a, b = n.inputs
    if a is b and (a.dtype.kind in _EXACT or (a.dtype.kind == "f" and n.op in ("less", "greater"))):
        return _full(_SELF_COMPARE[n.op], n)
    return None


@on("bitwise_xor", "logical_xor")
def xor_self(n: Node) -> Node | None:
    # x ^ x -> 0 for integers/bool; logical_xor(x, x) -> False for any x
    return _full(0, n) if n.inputs[0] is n.inputs[1] else None


def _all_ones(dtype: np.dtype):
    """A constant whose value, in dtype, has every bit set (-1, the unsigned max, True)."""
    return lambda c: not np.invert(np.asarray(c.attr("value"), c.dtype).astype(dtype))


@on("bitwise_and")
def bitwise_and_zero(n: Node) -> Node | None:
    # x & 0 -> 0
    return _full(0, n) if _other(n, _eq(0)) is not None else None


@on("bitwise_or", "bitwise_xor")
def bitwise_zero_identity(n: Node) -> Node | None:
    # x | 0 -> x, x ^ 0 -> x
    return _same(_other(n, _eq(0)), n)


@on("bitwise_and")
def bitwise_and_ones(n: Node) -> Node | None:
    # x & ~0 -> x
    return _same(_other(n, _all_ones(n.dtype)), n)


@on("bitwise_or")
def bitwise_or_ones(n: Node) -> Node | None:
    # x | ~0 -> ~0
    if _other(n, _all_ones(n.dtype)) is not None:
        return _full(np.invert(np.zeros((), n.dtype)), n)
    return None


@on("left_shift", "right_shift")
def shift_by_zero(n: Node) -> Node | None:
    # x << 0 -> x, x >> 0 -> x
    return _same(n.inputs[0], n) if _is_const(n.inputs[1], 0) else None


RULES: list[Rule] = [
    involution, idempotent, idempotent_identity, logical_absorb, logical_not_not,
    not_of_compare, compare_self, xor_self, bitwise_and_zero, bitwise_zero_identity,
    bitwise_and_ones, bitwise_or_ones, shift_by_zero,
]
