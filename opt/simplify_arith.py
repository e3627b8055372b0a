"""Simplifier rules for arithmetic: identities of +, -, *, /, //, %, ** and negation, absolute
value and square."""
from __future__ import annotations

from tracer.ir.node import Node
from .rewrite import Rule
from .simplify_base import (_EXACT, _INTS, _build, _cast, _const_node, _eq, _full, _is_const,
                            _like, _loop_in, _other, _same, on)


@on("multiply")
def x_times_one(n: Node) -> Node | None:
    # x*1 -> x, 1*x -> x
    return _same(_other(n, _eq(1)), n)


@on("subtract")
def x_minus_zero(n: Node) -> Node | None:
    # x-(+0) -> x (x+0 and x-(-0) are not identities for x = -0.0)
    return _same(_other(n, lambda c: _is_const(c, 0) and not c.attr("neg")), n)


@on("add")
def x_plus_neg_zero(n: Node) -> Node | None:
    # x+(-0.0) -> x for floats (-0.0 + -0.0 is -0.0, 0.0 + -0.0 is 0.0)
    if n.dtype.kind == "f":
        return _same(_other(n, lambda c: _is_const(c, 0) and c.attr("neg")), n)
    return None


@on("add")
def int_plus_zero(n: Node) -> Node | None:
    # x+0 -> x for integers and bool
    if n.dtype.kind in _EXACT:
        return _same(_other(n, _eq(0)), n)
    return None


@on("multiply")
def int_times_zero(n: Node) -> Node | None:
    # x*0 -> 0 for integers and bool (floats: NaN*0 and inf*0 are NaN, -1*0 is -0.0)
    if n.dtype.kind in _EXACT and _other(n, _eq(0)) is not None:
        return _full(0, n)
    return None


@on("subtract")
def int_minus_self(n: Node) -> Node | None:
    # x-x -> 0 for integers (floats: inf-inf is NaN)
    if n.dtype.kind in _INTS and n.inputs[0] is n.inputs[1]:
        return _full(0, n)
    return None


@on("multiply")
def times_minus_one(n: Node) -> Node | None:
    # x*(-1) -> -x for floats and signed integers (both wrap int min to itself)
    if n.dtype.kind in "if":
        x = _same(_other(n, _eq(-1)), n)
        return None if x is None else _build("negative", (x,))
    return None


@on("subtract")
def zero_minus_x(n: Node) -> Node | None:
    # 0-x -> -x for integers; (-0.0)-x -> -x for floats (0.0-0.0 is 0.0, not -0.0)
    c, x = _const_node(n.inputs[0]), n.inputs[1]
    if c is None or not _is_const(c, 0) or x.dtype != n.dtype:
        return None
    if n.dtype.kind in _INTS or (n.dtype.kind == "f" and c.attr("neg")):
        return _build("negative", (x,))
    return None


@on("add")
def add_negated(n: Node) -> Node | None:
    # x+(-y) -> x-y and (-y)+x -> x-y (IEEE defines x-y as x+(-y)); y already in n's dtype,
    # else -y wraps before the conversion
    a, b = n.inputs
    for x, neg in ((a, b), (b, a)):
        if neg.op == "negative" and neg.dtype == n.dtype:
            return _like(n, "subtract", (x, neg.inputs[0]))
    return None


@on("subtract")
def sub_negated(n: Node) -> Node | None:
    # x-(-y) -> x+y, y already in n's dtype
    x, neg = n.inputs
    if neg.op == "negative" and neg.dtype == n.dtype:
        return _like(n, "add", (x, neg.inputs[0]))
    return None


@on("multiply")
def neg_times_neg(n: Node) -> Node | None:
    # (-x)*(-y) -> x*y, both already in n's dtype
    a, b = n.inputs
    if a.op == b.op == "negative" and a.dtype == b.dtype == n.dtype:
        return _like(n, "multiply", (a.inputs[0], b.inputs[0]))
    return None


@on("negative")
def neg_of_int_difference(n: Node) -> Node | None:
    # -(x-y) -> y-x for integers (floats: -(x-x) is -0.0, x-x is 0.0)
    d = n.inputs[0]
    if d.op == "subtract" and n.dtype.kind in _INTS:
        return _like(n, "subtract", d.inputs[::-1])
    return None


@on("absolute", "fabs")
def abs_of_neg(n: Node) -> Node | None:
    # |-x| -> |x| (int min negates to itself)
    if n.inputs[0].op == "negative":
        return _like(n, n.op, n.inputs[0].inputs)
    return None


@on("absolute", "fabs")
def abs_of_abs(n: Node) -> Node | None:
    # ||x|| -> |x|
    inner = n.inputs[0]
    return _same(inner, n) if inner.op in ("absolute", "fabs") else None


@on("square")
def square_of_neg(n: Node) -> Node | None:
    # (-x)**2 -> x**2
    if n.inputs[0].op == "negative":
        return _like(n, "square", n.inputs[0].inputs)
    return None


@on("absolute")
def abs_of_unsigned(n: Node) -> Node | None:
    # |x| -> x for unsigned and bool
    x = n.inputs[0]
    return _same(x, n) if x.dtype.kind in "bu" else None


@on("positive", "conjugate")
def positive_noop(n: Node) -> Node | None:
    # +x -> x, conj(x) -> x for real x
    x = n.inputs[0]
    return _same(x, n) if x.dtype.kind != "c" else None


@on("floor_divide")
def int_floordiv_one(n: Node) -> Node | None:
    # x//1 -> x for integers (floats: inf//1 is NaN)
    if n.dtype.kind in _INTS and _is_const(n.inputs[1], 1):
        return _same(n.inputs[0], n)
    return None


@on("remainder", "fmod")
def int_mod_one(n: Node) -> Node | None:
    # x%1, x%-1, fmod(x, +-1) -> 0 for integers (floats: inf%1 is NaN, -x%1 may be -0.0)
    if n.dtype.kind in _INTS and (_is_const(n.inputs[1], 1) or _is_const(n.inputs[1], -1)):
        return _full(0, n)
    return None


@on("divide")
def divide_by_one(n: Node) -> Node | None:
    # x/1 -> x converted to the loop's (= the result's) float type
    x = _other(n, _eq(1))
    if x is not None and _loop_in(n) == n.dtype:
        return _cast(x, n.dtype)
    return None


@on("power", "float_power")
def power_one(n: Node) -> Node | None:
    # x**1 -> x (pow(x, 1) is x, NaN included)
    return _same(n.inputs[0], n) if _is_const(n.inputs[1], 1) else None


@on("power", "float_power")
def power_zero(n: Node) -> Node | None:
    # x**0 -> 1 (pow(NaN, 0) and 0**0 are 1)
    return _full(1, n) if _is_const(n.inputs[1], 0) else None


RULES: list[Rule] = [
    x_times_one, x_minus_zero, x_plus_neg_zero, int_plus_zero, int_times_zero, int_minus_self,
    times_minus_one, zero_minus_x, add_negated, sub_negated, neg_times_neg,
    neg_of_int_difference, abs_of_neg, abs_of_abs, square_of_neg, abs_of_unsigned,
    positive_noop, int_floordiv_one, int_mod_one, divide_by_one, power_one, power_zero,
]
