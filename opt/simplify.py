"""Algebraic simplification, constant folding, CSE and dead-write elimination.

Every algebraic rule is exact: same bits as NumPy for every input, NaN, +-inf, -0.0 and integer
wrap-around included. IEEE 754 leaves the sign and payload of a NaN result unspecified (6.3), so
a rule may change those, as NumPy's own loops do between SIMD and scalar code. A rule returns a
node of the original node's shape and dtype, or None.
"""
from __future__ import annotations

import functools

import numpy as np

from tracer.ir import Node, make
from tracer.ir.node import make_const
from tracer.ir.interp import eval_node
from tracer.ir.registry import OPS, Kind, keeps_values, names, reduce_identity
from .rewrite import Rule, apply_rules, order_of, rebuild

# ---------------------------------------------------------------- helpers


def _scalar(n: Node) -> Node | None:
    """The 0-d node n stands for: n itself if 0-d, or the value a broadcast_to spreads."""
    if n.op == "broadcast_to" and not n.inputs[0].shape:
        return n.inputs[0]
    return None if n.shape else n


def _const_node(n: Node) -> Node | None:
    s = _scalar(n)
    return s if s is not None and s.op == "const" else None


def _const_value(n: Node):
    """The scalar a node stands for, if it is a constant or a broadcast of one."""
    c = _const_node(n)
    return None if c is None else c.attr("value")


def _is_const(n: Node, value) -> bool:
    v = _const_value(n)
    return v is not None and not isinstance(v, complex) and v == value and \
        not (isinstance(v, float) and v != v)


def _const(value, dtype) -> Node:
    return make_const(np.asarray(value, dtype=dtype)[()], dtype)


def _bcast(c: Node, shape) -> Node:
    return c if c.shape == tuple(shape) else \
        make("broadcast_to", (c,), shape, c.dtype, (("shape", tuple(shape)),))


def _full(value, like: Node) -> Node:
    """The constant `value` in like's dtype, broadcast to like's shape."""
    return _bcast(_const(value, like.dtype), like.shape)


def _build(op: str, inputs: tuple[Node, ...], attrs: tuple = ()) -> Node:
    d, a = OPS[op], dict(attrs)
    return make(op, inputs, d.shape_rule([i.shape for i in inputs], a),
                d.dtype_rule([i.dtype for i in inputs], a), attrs)


def _like(n: Node, op: str, inputs: tuple[Node, ...], attrs: tuple = ()) -> Node | None:
    """op(inputs) when it has n's shape and dtype (else the rewrite would change the type)."""
    m = _build(op, inputs, attrs)
    return m if m.shape == n.shape and m.dtype == n.dtype else None


def _same(x: Node | None, n: Node) -> Node | None:
    return x if x is not None and x.dtype == n.dtype else None


def _same_bool(x: Node | None, n: Node) -> Node | None:
    """_same for a fold that NumPy computes with logical ops: a bool result is 0/1 even where x's
    bytes are not (a bool view of other data), so only an x computed by a kernel may stand in."""
    if x is None or n.dtype != np.bool_ or x.op == "const":
        return _same(x, n)
    return _same(x, n) if OPS[x.op].kind in (Kind.ELEMENTWISE, Kind.REDUCE) else None


def _cast(x: Node, dtype: np.dtype) -> Node:
    return x if x.dtype == dtype else _build("cast", (x,), (("dtype", np.dtype(dtype).str),))


def _reshape(x: Node, shape: tuple) -> Node:
    if x.op == "reshape":
        x = x.inputs[0]
    return x if x.shape == tuple(shape) else _build("reshape", (x,), (("shape", tuple(shape)),))


def _transpose(x: Node, perm: tuple) -> Node:
    if x.op == "transpose":
        inner = x.attr("perm")
        perm, x = tuple(inner[p] for p in perm), x.inputs[0]
    return x if perm == tuple(range(len(perm))) else _build("transpose", (x,), (("perm", perm),))


def _other(n: Node, pred) -> Node | None:
    """The operand of binary n whose partner (the second one, or either if n commutes) is a
    constant c with pred(c)."""
    a, b = n.inputs
    pairs = ((a, b), (b, a)) if OPS[n.op].props.commutative else ((a, b),)
    for x, c in pairs:
        k = _const_node(c)
        if k is not None and pred(k):
            return x
    return None


def _eq(value):
    return lambda c: _is_const(c, value)


def _loop_in(n: Node) -> np.dtype:
    """The dtype NumPy's loop for n converts its first operand to."""
    uf = OPS[n.op].ufunc
    return uf.resolve_dtypes(tuple(i.dtype for i in n.inputs) + (None,) * uf.nout)[0]


def on(*ops: str):
    """A rule that matches nodes of these ops; the simplifier only tries it on them."""
    wanted = frozenset(ops)

    def deco(fn):
        @functools.wraps(fn)
        def rule(n: Node) -> Node | None:
            return fn(n) if n.op in wanted else None
        rule.ops = wanted
        return rule
    return deco


_INTS = "iu"
_EXACT = "biu"          # integer and bool dtypes: every op is exact, wrap-around included
_ROUNDING = ("floor", "ceil", "trunc", "rint")
_REDUCTIONS = names(lambda d: d.kind is Kind.REDUCE and d.ufunc is not None)
_MOVEMENT = names(lambda d: d.kind is Kind.MOVEMENT)
_REDUCE_OF = {OPS[r].ufunc.__name__: OPS[r] for r in _REDUCTIONS}


# ---------------------------------------------------------------- arithmetic

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


# ---------------------------------------------------------------- max, min, logical, bitwise

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
    complex products ((1+0j) * (inf+1j) is inf+nanj)."""
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


def _reduce_ufunc(n: Node) -> str:
    return OPS[n.op].ufunc.__name__


def _reduced_count(n: Node) -> int:
    shape = n.inputs[0].shape
    return int(np.prod([shape[a] for a in n.attr("axes")], dtype=np.int64))


ALGEBRAIC: list[Rule] = [
    x_times_one, x_minus_zero, x_plus_neg_zero, int_plus_zero, int_times_zero, int_minus_self,
    times_minus_one, zero_minus_x, add_negated, sub_negated, neg_times_neg,
    neg_of_int_difference, abs_of_neg, abs_of_abs, square_of_neg, abs_of_unsigned,
    positive_noop, int_floordiv_one, int_mod_one, divide_by_one, power_one, power_zero,
    involution, idempotent, idempotent_identity, logical_absorb, logical_not_not,
    not_of_compare, compare_self, xor_self, bitwise_and_zero, bitwise_zero_identity,
    bitwise_and_ones, bitwise_or_ones, shift_by_zero, round_of_integer, round_of_round,
    int_float_class, where_same, where_const, where_bool_consts, where_not, cast_same,
    lossless_cast_pair, transpose_transpose, transpose_identity, reshape_reshape, reshape_self,
    broadcast_broadcast, broadcast_self, slice_slice, slice_full, movement_of_broadcast_scalar,
    reduce_of_one_element, nested_reduce, reduce_of_broadcast_scalar,
]


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
    matches): a node tries only its own op's rules, each O(1), a few times (by_op)."""
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


def count_nodes(roots: list[Node]) -> int:
    return len(order_of(roots))
