"""Simplifier rules for rounding, float-class tests, where and casts."""
from __future__ import annotations

import numpy as np

from tracer.ir.node import Node
from .rewrite import Rule
from .simplify_base import (_EXACT, _INTS, _build, _cast, _const_value, _full, _is_const,
                            _loop_in, _same, on)

_ROUNDING = ("floor", "ceil", "trunc", "rint")


# ---------------------------------------------------------------- unary

@on(*_ROUNDING)
def round_of_integer(n: Node) -> Node | None:
    # floor/ceil/trunc/rint of integers or bool -> x in the loop's (= result's) dtype
    x = n.inputs[0]
    if x.dtype.kind in _EXACT and _loop_in(n) == n.dtype:
        return _cast(x, n.dtype)
    return None


@on(*_ROUNDING)
def round_of_round(n: Node) -> Node | None:
    # floor/ceil/trunc/rint of a rounded float -> the rounded float (integral, +-inf, NaN, -0.0
    # are fixed points)
    x = n.inputs[0]
    return _same(x, n) if x.op in _ROUNDING and x.dtype.kind == "f" else None


@on("isnan", "isinf", "isfinite")
def int_float_class(n: Node) -> Node | None:
    # isnan(i) -> False, isinf(i) -> False, isfinite(i) -> True for integers/bool
    if n.inputs[0].dtype.kind in _EXACT:
        return _full(n.op == "isfinite", n)
    return None


# ---------------------------------------------------------------- where and casts

@on("where")
def where_same(n: Node) -> Node | None:
    # where(c, x, x) -> x
    return n.inputs[1] if n.inputs[1] is n.inputs[2] else None


@on("where")
def where_const(n: Node) -> Node | None:
    # where(True, x, y) -> x
    v = _const_value(n.inputs[0])
    if v is not None:
        return n.inputs[1] if v else n.inputs[2]
    return None


@on("where")
def where_bool_consts(n: Node) -> Node | None:
    # where(c, True, False) -> c, where(c, False, True) -> not c
    c, a, b = n.inputs
    if n.dtype.kind == "b" and _is_const(a, True) and _is_const(b, False):
        return c
    if n.dtype.kind == "b" and _is_const(a, False) and _is_const(b, True):
        return _build("logical_not", (c,))
    return None


@on("where")
def where_not(n: Node) -> Node | None:
    # where(not c, x, y) -> where(c, y, x) for bool c
    nc, x, y = n.inputs
    if nc.op in ("logical_not", "invert") and nc.inputs[0].dtype.kind == "b":
        return _build("where", (nc.inputs[0], y, x))
    return None


@on("cast")
def cast_same(n: Node) -> Node | None:
    # cast(x, x.dtype) -> x
    return _same(n.inputs[0], n)


def _lossless(a: np.dtype, b: np.dtype) -> bool:
    """Every value of a is exactly a value of b (NumPy's "safe" int64 -> float64 is not)."""
    if not np.can_cast(a, b, "safe"):
        return False
    if a.kind in _INTS and b.kind in "fc":
        return np.finfo(b).nmant + 1 >= a.itemsize * 8 - (a.kind == "i")
    return True


@on("cast")
def lossless_cast_pair(n: Node) -> Node | None:
    # cast(cast(x, A), B) -> cast(x, B) when x -> A is lossless: B then sees x's own value (a
    # float A -> integer B only where x -> B is lossless too: out-of-range conversions differ)
    inner = n.inputs[0]
    if inner.op != "cast":
        return None
    x, a, b = inner.inputs[0], inner.dtype, n.dtype
    if _lossless(x.dtype, a) and (a.kind not in "fc" or b.kind not in _INTS or
                                  _lossless(x.dtype, b)):
        return _cast(x, b)
    return None


RULES: list[Rule] = [
    round_of_integer, round_of_round, int_float_class, where_same, where_const,
    where_bool_consts, where_not, cast_same, lossless_cast_pair,
]
