"""Every algebraic rule and the constant folder on small hand-built graphs: the exact node a rule
returns, and NumPy's values before and after on edge inputs (NaN, +-inf, +-0.0, integer min/max).
Where a rule holds only for some dtypes, the others are shown to differ in NumPy and are left."""
from __future__ import annotations

import inspect
import itertools

import numpy
import pytest

import tracer
import tracer.numpy as tnp
from tracer.ir import make, toposort, verify
from tracer.ir.config import context
from tracer.ir.interp import eval_node
from tracer.ir.registry import OPS
from tracer.opt import simplify_arith as A, simplify_casts as C, simplify_logic as L
from tracer.opt import simplify_shape as M
from tracer.opt.simplify import ALGEBRAIC, constant_folding, fold_constant, simplify
from tracer import graph as G

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph

F, F32, I8, I16, I64, U8, B = (numpy.dtype(t) for t in (
    numpy.float64, numpy.float32, numpy.int8, numpy.int16, numpy.int64, numpy.uint8, numpy.bool_))
INF, NAN = float("inf"), float("nan")
EDGE = {
    F: [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e308, 5e-324],
    F32: [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 3e38, 1e-45],
    I8: [-128, -127, -1, 0, 1, 2, 126, 127],
    I16: [-32768, -129, -1, 0, 1, 255, 32767],
    I64: [-2**63, -2**63 + 1, -1, 0, 1, 2**53 + 1, 2**63 - 1],
    U8: [0, 1, 2, 127, 128, 254, 255],
    B: [False, True],
}


def vals(dt) -> numpy.ndarray:
    return numpy.array(EDGE[dt], dt)


def leaf(dt):
    return G.leaf(vals(dt))


def leaves(dt1, dt2=None):
    """Two leaves holding every pair of edge values."""
    a, b = vals(dt1), vals(dt2 or dt1)
    return G.leaf(numpy.repeat(a, len(b))), G.leaf(numpy.tile(b, len(a)))


def k(v, dt, like):
    return G.broadcast(G.const(v, dt), like.shape)


def op(name, *ins):
    return G.elementwise(name, ins)


def run(root) -> numpy.ndarray:
    """NumPy's value of a graph (the interpreter, with -0.0 constants)."""
    v = {}
    for n in toposort([root]):
        v[id(n)] = numpy.asarray(n.attr("value"), n.dtype) if n.op == "const" else \
            eval_node(n, [v[id(i)] for i in n.inputs])
    return v[id(root)]


def assert_same(a: numpy.ndarray, b: numpy.ndarray) -> None:
    """Same dtype, shape and bits, except the sign and payload of NaNs (IEEE 754 6.3)."""
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind in "fc":
        assert numpy.array_equal(a, b, equal_nan=True)
        keep = ~numpy.isnan(a)
        assert numpy.array_equal(numpy.signbit(a.real)[keep], numpy.signbit(b.real)[keep])
    else:
        assert numpy.array_equal(a, b)


def differs(a: numpy.ndarray, b: numpy.ndarray) -> bool:
    try:
        assert_same(a, b)
    except AssertionError:
        return True
    return False


def check(rule, before, expected):
    """The rule turns `before` into exactly `expected`, of the same type and NumPy values."""
    out = rule(before)
    assert out is expected, (rule.__name__, out, expected)
    assert (out.shape, out.dtype) == (before.shape, before.dtype)
    verify([out])
    assert_same(run(before), run(out))


def left(rule, before, naive=None):
    """The rule leaves `before`; NumPy shows the naive rewrite `naive` would change a value."""
    assert rule(before) is None, rule.__name__
    if naive is not None:
        assert differs(run(before), run(naive))


# ---------------------------------------------------------------- the rule list

def test_rule_list_has_40_distinct_documented_rules():
    names = [r.__name__ for r in ALGEBRAIC]
    assert len(names) >= 40 and len(set(names)) == len(names)
    for r in ALGEBRAIC:
        body = inspect.getsource(r.__wrapped__).splitlines()
        comments = [ln for ln in body if ln.strip().startswith("# ")]
        assert comments and "->" in comments[0], r.__name__  # "# x*1 -> x" first
        assert r.ops and all(o in OPS for o in r.ops)


def test_rules_try_only_their_ops():
    x = leaf(F)
    assert A.x_times_one(op("add", x, k(1.0, F, x))) is None


# ---------------------------------------------------------------- additive and multiplicative

@pytest.mark.parametrize("dt", [F, F32, I8, U8, B])
def test_x_times_one(dt):
    x = leaf(dt)
    check(A.x_times_one, op("multiply", x, k(1, dt, x)), x)
    check(A.x_times_one, op("multiply", k(1, dt, x), x), x)


def test_x_minus_zero():
    for dt in (F, I8):
        x = leaf(dt)
        check(A.x_minus_zero, op("subtract", x, k(0, dt, x)), x)
    x = leaf(F)
    left(A.x_minus_zero, op("subtract", x, k(-0.0, F, x)), x)  # -0.0 - -0.0 is 0.0


def test_x_plus_neg_zero():
    for dt in (F, F32):
        x = leaf(dt)
        check(A.x_plus_neg_zero, op("add", x, k(-0.0, dt, x)), x)
        check(A.x_plus_neg_zero, op("add", k(-0.0, dt, x), x), x)
        left(A.x_plus_neg_zero, op("add", x, k(0.0, dt, x)), x)  # -0.0 + 0.0 is 0.0


def test_int_plus_zero():
    for dt in (I8, I64, U8, B):
        x = leaf(dt)
        check(A.int_plus_zero, op("add", x, k(0, dt, x)), x)
    x = leaf(I8)
    left(A.int_plus_zero, op("add", x, k(0, I64, x)))  # the sum is int64: not x's type
    x = leaf(F)
    left(A.int_plus_zero, op("add", x, k(0.0, F, x)), x)


def test_int_times_zero():
    for dt in (I8, U8, B):
        x = leaf(dt)
        check(A.int_times_zero, op("multiply", x, k(0, dt, x)), k(0, dt, x))
    x = leaf(F)
    left(A.int_times_zero, op("multiply", x, k(0.0, F, x)), k(0.0, F, x))  # NaN, -0.0


def test_int_minus_self():
    for dt in (I8, U8):
        x = leaf(dt)
        check(A.int_minus_self, op("subtract", x, x), k(0, dt, x))
    x = leaf(F)
    left(A.int_minus_self, op("subtract", x, x), k(0.0, F, x))  # inf - inf


@pytest.mark.parametrize("dt", [F, F32, I8, I64])
def test_times_minus_one(dt):
    x = leaf(dt)
    check(A.times_minus_one, op("multiply", x, k(-1, dt, x)), op("negative", x))
    check(A.times_minus_one, op("multiply", k(-1, dt, x), x), op("negative", x))


def test_zero_minus_x():
    for dt in (I8, U8):
        x = leaf(dt)
        check(A.zero_minus_x, op("subtract", k(0, dt, x), x), op("negative", x))
    x = leaf(F)
    check(A.zero_minus_x, op("subtract", k(-0.0, F, x), x), op("negative", x))
    left(A.zero_minus_x, op("subtract", k(0.0, F, x), x), op("negative", x))  # 0 - 0 is +0


def test_add_and_sub_of_negated():
    for dt in (F, F32, I8, U8):
        x, y = leaves(dt)
        check(A.add_negated, op("add", x, op("negative", y)), op("subtract", x, y))
        check(A.add_negated, op("add", op("negative", y), x), op("subtract", x, y))
        check(A.sub_negated, op("subtract", x, op("negative", y)), op("add", x, y))
    # -y wraps in int64 before the float64 add: x + (-y) is not x - y at y = int64 min
    x, y = leaves(F, I64)
    left(A.add_negated, op("add", x, op("negative", y)), op("subtract", x, y))
    left(A.sub_negated, op("subtract", x, op("negative", y)), op("add", x, y))


def test_neg_times_neg():
    for dt in (F, I8):
        x, y = leaves(dt)
        check(A.neg_times_neg, op("multiply", op("negative", x), op("negative", y)),
              op("multiply", x, y))
    x, y = leaves(I8, I16)  # -(-128) wraps to -128 in int8 before the int16 product
    left(A.neg_times_neg, op("multiply", op("negative", x), op("negative", y)),
         op("multiply", x, y))


def test_neg_of_int_difference():
    for dt in (I8, U8):
        x, y = leaves(dt)
        check(A.neg_of_int_difference, op("negative", op("subtract", x, y)), op("subtract", y, x))
    x, y = leaves(F)
    left(A.neg_of_int_difference, op("negative", op("subtract", x, y)), op("subtract", y, x))


# ---------------------------------------------------------------- absolute values, rounding

def test_absolute_rules():
    for dt in (F, F32, I8):
        x = leaf(dt)
        check(A.abs_of_neg, op("absolute", op("negative", x)), op("absolute", x))
        check(A.abs_of_abs, op("absolute", op("absolute", x)), op("absolute", x))
        check(A.square_of_neg, op("square", op("negative", x)), op("square", x))
    x = leaf(F)
    check(A.abs_of_neg, op("fabs", op("negative", x)), op("fabs", x))
    check(A.abs_of_abs, op("absolute", op("fabs", x)), op("fabs", x))
    for dt in (U8, B):
        x = leaf(dt)
        check(A.abs_of_unsigned, op("absolute", x), x)
    left(A.abs_of_unsigned, op("absolute", leaf(I8)))


def test_positive_and_conjugate_of_real():
    for dt in (F, I8):
        x = leaf(dt)
        check(A.positive_noop, op("positive", x), x)
        check(A.positive_noop, op("conjugate", x), x)
    z = G.leaf(numpy.array([1 + 2j, -0.0 - 1j]))
    left(A.positive_noop, op("conjugate", z), z)


def test_integer_division_by_one():
    for dt in (I8, U8, I64):
        x = leaf(dt)
        check(A.int_floordiv_one, op("floor_divide", x, k(1, dt, x)), x)
        check(A.int_mod_one, op("remainder", x, k(1, dt, x)), k(0, dt, x))
        check(A.int_mod_one, op("fmod", x, k(1, dt, x)), k(0, dt, x))
    x = leaf(I8)
    check(A.int_mod_one, op("remainder", x, k(-1, I8, x)), k(0, I8, x))  # -128 % -1 is 0
    x = leaf(F)
    left(A.int_floordiv_one, op("floor_divide", x, k(1.0, F, x)), x)  # inf // 1 is NaN
    left(A.int_mod_one, op("remainder", x, k(1.0, F, x)), k(0.0, F, x))


def test_divide_by_one():
    for dt in (F, F32):
        x = leaf(dt)
        check(A.divide_by_one, op("divide", x, k(1, dt, x)), x)
    for dt in (I8, I64, B):  # int / int is float64: x converted like the loop converts it
        x = leaf(dt) if dt != B else G.leaf(vals(B).astype(numpy.int8))
        check(A.divide_by_one, op("divide", x, k(1, x.dtype, x)), G.cast(x, F))
    x = leaf(F32)
    check(A.divide_by_one, op("divide", x, k(1.0, F, x)), G.cast(x, F))
    left(A.divide_by_one, op("divide", k(1.0, F, x), G.cast(x, F)))


def test_power_one_and_zero():
    for dt in (F, F32, I8):
        x = leaf(dt)
        check(A.power_one, op("power", x, k(1, dt, x)), x)
        check(A.power_zero, op("power", x, k(0, dt, x)), k(1, dt, x))  # NaN**0 is 1
    x = leaf(F)
    check(A.power_zero, op("float_power", x, k(-0.0, F, x)), k(1.0, F, x))
    left(A.power_one, op("power", k(1.0, F, x), x))


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc", "rint"])
def test_rounding(name):
    for dt in (I8, I64, U8, B):
        x = leaf(dt)
        r = op(name, x)
        check(C.round_of_integer, r, G.cast(x, r.dtype))
    for inner in ("floor", "ceil", "trunc", "rint"):
        x = G.leaf(numpy.concatenate([vals(F), [-0.5, 0.5, 1.5, 2.5, -1.5, 4.7]]))
        check(C.round_of_round, op(name, op(inner, x)), op(inner, x))
    x = leaf(F)
    left(C.round_of_round, op(name, op("sqrt", x)))


def test_int_float_class():
    for dt in (I8, U8, B):
        x = leaf(dt)
        check(C.int_float_class, op("isnan", x), k(False, B, x))
        check(C.int_float_class, op("isinf", x), k(False, B, x))
        check(C.int_float_class, op("isfinite", x), k(True, B, x))
    x = leaf(F)
    left(C.int_float_class, op("isnan", x), k(False, B, x))


# ---------------------------------------------------------------- max, min, logical, bitwise

def test_involution_and_idempotent():
    for dt in (F, I8, I64):
        x = leaf(dt)
        check(L.involution, op("negative", op("negative", x)), x)
        for name in ("maximum", "minimum", "fmax", "fmin"):
            check(L.idempotent, op(name, x, x), x)
    for x in (leaf(I8), leaf(U8), op("isnan", leaf(F))):
        check(L.involution, op("invert", op("invert", x)), x)
        check(L.idempotent, op("bitwise_and", x, x), x)
        check(L.idempotent, op("bitwise_or", x, x), x)
    x = leaf(F)
    left(L.idempotent, op("logical_and", x, x), x)  # a bool result is not x
    b = leaf(B)  # a bool leaf's bytes may be other than 0/1 (a view): NumPy's bool loops write 0/1
    left(L.involution, op("invert", op("invert", b)))
    left(L.idempotent, op("bitwise_and", b, b))


def test_idempotent_identity():
    for dt, lo, hi in ((F, -INF, INF), (F32, -INF, INF), (I8, -128, 127), (U8, 0, 255),
                       (B, False, True)):
        x = leaf(dt) if dt != B else op("isnan", leaf(F))
        check(L.idempotent_identity, op("maximum", x, k(lo, dt, x)), x)
        check(L.idempotent_identity, op("minimum", k(hi, dt, x), x), x)
    x = op("isnan", leaf(F))
    check(L.idempotent_identity, op("logical_and", x, k(True, B, x)), x)
    check(L.idempotent_identity, op("logical_or", k(False, B, x), x), x)
    x = leaf(B)
    left(L.idempotent_identity, op("logical_and", x, k(True, B, x)))
    x = leaf(F)
    left(L.idempotent_identity, op("maximum", x, k(INF, F, x)), x)
    left(L.idempotent_identity, op("fmax", x, k(-INF, F, x)), x)  # fmax(NaN, -inf) is -inf


def test_logical_absorb_and_not_not():
    for dt in (F, I8, B):
        x = leaf(dt)
        check(L.logical_absorb, op("logical_and", x, k(False, B, x)), k(False, B, x))
        check(L.logical_absorb, op("logical_or", k(True, B, x), x), k(True, B, x))
    x = leaf(F)
    check(L.logical_absorb, op("logical_and", x, k(-0.0, F, x)), k(False, B, x))
    left(L.logical_absorb, op("logical_and", x, k(NAN, F, x)))  # NaN is true
    b = op("isnan", x)
    check(L.logical_not_not, op("logical_not", op("logical_not", b)), b)
    left(L.logical_not_not, op("logical_not", op("logical_not", leaf(B))))
    left(L.logical_not_not, op("logical_not", op("logical_not", x)))


_CMP = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("name", _CMP)
def test_not_of_compare(name):
    neg = L._NEGATED[name]
    for dt in (I8, U8, B):
        x, y = leaves(dt)
        check(L.not_of_compare, op("logical_not", op(name, x, y)), op(neg, x, y))
        check(L.not_of_compare, op("invert", op(name, x, y)), op(neg, x, y))
    x, y = leaves(F)
    if name in ("equal", "not_equal"):  # NaN == NaN is False, NaN != NaN is True
        check(L.not_of_compare, op("logical_not", op(name, x, y)), op(neg, x, y))
    else:
        left(L.not_of_compare, op("logical_not", op(name, x, y)), op(neg, x, y))


@pytest.mark.parametrize("name", _CMP)
def test_compare_self(name):
    for dt in (I8, U8, B):
        x = leaf(dt)
        check(L.compare_self, op(name, x, x), k(L._SELF_COMPARE[name], B, x))
    x = leaf(F)
    naive = k(L._SELF_COMPARE[name], B, x)
    if name in ("less", "greater"):
        check(L.compare_self, op(name, x, x), naive)
    else:
        left(L.compare_self, op(name, x, x), naive)


def test_xor_self():
    for dt in (I8, U8, B):
        x = leaf(dt)
        check(L.xor_self, op("bitwise_xor", x, x), k(0, dt, x))
    for dt in (F, I8):
        x = leaf(dt)
        check(L.xor_self, op("logical_xor", x, x), k(False, B, x))


def test_bitwise_constants():
    for dt, ones in ((I8, -1), (I64, -1), (U8, 255), (B, True)):
        x = leaf(dt)
        check(L.bitwise_and_zero, op("bitwise_and", x, k(0, dt, x)), k(0, dt, x))
        check(L.bitwise_zero_identity, op("bitwise_or", k(0, dt, x), x), x)
        check(L.bitwise_zero_identity, op("bitwise_xor", x, k(0, dt, x)), x)
        check(L.bitwise_and_ones, op("bitwise_and", x, k(ones, dt, x)), x)
        check(L.bitwise_or_ones, op("bitwise_or", x, k(ones, dt, x)), k(ones, dt, x))
    x = leaf(I16)  # uint8 255 is 0x00ff in int16: not all ones
    left(L.bitwise_and_ones, op("bitwise_and", x, k(255, U8, x)), G.cast(x, I16))
    left(L.bitwise_or_ones, op("bitwise_or", x, k(255, U8, x)), k(-1, I16, x))


def test_shift_by_zero():
    for dt in (I8, U8, I64):
        x = leaf(dt)
        check(L.shift_by_zero, op("left_shift", x, k(0, dt, x)), x)
        check(L.shift_by_zero, op("right_shift", x, k(0, dt, x)), x)
    x = leaf(I8)
    left(L.shift_by_zero, op("left_shift", k(0, I8, x), x))


# ---------------------------------------------------------------- where and casts

def test_where_rules():
    x, y = leaves(F)
    c = op("less", x, y)
    check(C.where_same, G.where(c, x, x), x)
    check(C.where_const, G.where(k(True, B, x), x, y), x)
    check(C.where_const, G.where(k(False, B, x), x, y), y)
    check(C.where_bool_consts, G.where(c, k(True, B, x), k(False, B, x)), c)
    check(C.where_bool_consts, G.where(c, k(False, B, x), k(True, B, x)), op("logical_not", c))
    check(C.where_not, G.where(op("logical_not", c), x, y), G.where(c, y, x))
    check(C.where_not, G.where(op("invert", c), x, y), G.where(c, y, x))


def test_cast_same():
    x = leaf(F32)
    check(C.cast_same, make("cast", (x,), x.shape, F32, (("dtype", F32.str),)), x)


_CAST_DTYPES = [numpy.dtype(t) for t in ("?", "i1", "u1", "i2", "i4", "u4", "i8", "u8", "f2",
                                         "f4", "f8", "c8", "c16")]
_CAST_EDGE = {F: vals(F), F32: vals(F32), I8: vals(I8), I64: vals(I64), U8: vals(U8),
              B: vals(B), numpy.dtype("u8"): numpy.array([0, 1, 2**53 + 1, 2**64 - 1], "u8"),
              numpy.dtype("i4"): numpy.array([-2**31, -1, 0, 2**24 + 1, 2**31 - 1], "i4"),
              numpy.dtype("c8"): numpy.array([1 + 1j, NAN, -0.0, 3e38 + 1e-30j], "c8")}


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_lossless_cast_pair_on_every_dtype_triple():
    fired = 0
    for xt, a, b in itertools.product(_CAST_EDGE, _CAST_DTYPES, _CAST_DTYPES):
        if a in (xt, b):
            continue
        x = G.leaf(_CAST_EDGE[xt])
        before = G.cast(G.cast(x, a), b)
        with numpy.errstate(all="ignore"):
            out = C.lossless_cast_pair(before)
            if out is not None:
                fired += 1
                assert out is G.cast(x, b)
                assert_same(run(before), run(out))
    assert fired > 100
    # int64 -> float64 is "safe" for NumPy, but rounds 2**53 + 1: the round trip stays
    x = leaf(I64)
    left(C.lossless_cast_pair, G.cast(G.cast(x, F), I64), x)


# ---------------------------------------------------------------- movement

def grid(shape=(2, 3, 4)):
    return G.leaf(numpy.arange(numpy.prod(shape), dtype=numpy.float64).reshape(shape))


def test_transposes():
    x = grid()
    t1 = make("transpose", (x,), (3, 4, 2), F, (("perm", (1, 2, 0)),))
    t2 = make("transpose", (t1,), (4, 3, 2), F, (("perm", (1, 0, 2)),))
    check(M.transpose_transpose, t2, G.transpose(x, (2, 1, 0)))
    back = make("transpose", (t1,), (2, 3, 4), F, (("perm", (2, 0, 1)),))
    check(M.transpose_transpose, back, x)
    check(M.transpose_identity, make("transpose", (x,), x.shape, F, (("perm", (0, 1, 2)),)), x)


def test_reshapes():
    x = grid()
    r1 = G.reshape(x, (6, 4))
    r2 = make("reshape", (r1,), (4, 6), F, (("shape", (4, 6)),))
    check(M.reshape_reshape, r2, G.reshape(x, (4, 6)))
    check(M.reshape_reshape, make("reshape", (r1,), x.shape, F, (("shape", x.shape),)), x)
    check(M.reshape_self, make("reshape", (x,), x.shape, F, (("shape", x.shape),)), x)


def test_broadcasts():
    row = G.leaf(numpy.array([[1.0, -0.0, NAN]]))
    b1 = G.broadcast(row, (2, 3))
    b2 = make("broadcast_to", (b1,), (4, 2, 3), F, (("shape", (4, 2, 3)),))
    check(M.broadcast_broadcast, b2, G.broadcast(row, (4, 2, 3)))
    check(M.broadcast_self, make("broadcast_to", (row,), row.shape, F, (("shape", row.shape),)),
          row)


def _slices(n, rng):
    starts = [None, 0, 1, -1, n, -n - 1, 2]
    steps = [None, 1, 2, -1, -2, 3]
    a, b, c = slice(rng.choice(starts), rng.choice(starts), rng.choice(steps)).indices(n)
    return (a, b, c) if a >= 0 else (0, 0, 1)  # start -1 (empty, step < 0) reads as the end


def test_slice_slice_composes_every_way():
    rng = numpy.random.default_rng(0)
    x = G.leaf(numpy.arange(7 * 5, dtype=numpy.float64).reshape(7, 5))
    for _ in range(300):
        s1 = tuple(_slices(d, rng) for d in x.shape)
        inner = G.slice_(x, s1)
        if inner.op != "slice":
            continue
        s2 = tuple(_slices(d, rng) for d in inner.shape)
        outer = make("slice", (inner,), G.slice_(inner, s2).shape, F, (("slices", s2),))
        out = M.slice_slice(outer)
        assert out.op == "slice" and out.inputs[0] is x
        verify([out])
        assert_same(run(outer), run(out))


def test_slice_full():
    x = grid((3, 2))
    check(M.slice_full, make("slice", (x,), x.shape, F, (("slices", ((0, 3, 1), (0, 2, 1))),)), x)
    left(M.slice_full, G.slice_(x, ((0, 3, 1), (1, -1, -1))))


def test_movement_of_broadcast_scalar():
    s = G.elementwise("exp", (G.leaf(numpy.array(-0.0)),))  # a computed 0-d value
    b = G.broadcast(s, (2, 3))
    check(M.movement_of_broadcast_scalar, G.transpose(b, (1, 0)), G.broadcast(s, (3, 2)))
    check(M.movement_of_broadcast_scalar, G.reshape(b, (6,)), G.broadcast(s, (6,)))
    check(M.movement_of_broadcast_scalar, G.slice_(b, ((1, 2, 1), (2, -1, -1))),
          G.broadcast(s, (1, 3)))
    check(M.movement_of_broadcast_scalar, G.reshape(s, (1, 1)), G.broadcast(s, (1, 1)))


# ---------------------------------------------------------------- reductions

def test_reduce_of_one_element():
    x = G.leaf(numpy.array([[[-0.0], [NAN], [3.0], [-INF]]]))  # (1, 4, 1)
    for name in ("reduce_prod", "reduce_max", "reduce_min"):
        check(M.reduce_of_one_element, G.reduce(name, x, (0, 2)), G.reshape(x, (4,)))
        check(M.reduce_of_one_element, make(name, (x,), x.shape, F, (("axes", ()),)), x)
    xi = G.leaf(vals(I8).reshape(1, 8))
    check(M.reduce_of_one_element, G.reduce("reduce_sum", xi, (0,)), G.reshape(xi, (8,)))
    # NumPy starts a float sum at +0.0: sum([-0.0]) is 0.0, not the element
    left(M.reduce_of_one_element, G.reduce("reduce_sum", x, (0, 2)), G.reshape(x, (4,)))
    b = G.leaf(numpy.array([[True, False]]))  # an input's bytes may be other than 0/1 (a view)
    left(M.reduce_of_one_element, G.reduce("reduce_any", b, (0,)))
    b = op("logical_not", b)  # a kernel's bools are 0/1
    check(M.reduce_of_one_element, G.reduce("reduce_any", b, (0,)), G.reshape(b, (2,)))
    left(M.reduce_of_one_element, G.reduce("reduce_max", x, (1,)))
    xi = G.leaf(numpy.array([[5, 0]], numpy.int8))
    left(M.reduce_of_one_element, G.reduce("reduce_any", xi, (0,)), G.reshape(xi, (2,)))


def test_nested_reductions_merge_when_order_free():
    xi = G.leaf(numpy.array(EDGE[I64] * 6, numpy.int64)[:24].reshape(2, 3, 4))
    for name in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min"):
        inner = G.reduce(name, xi, (1,))  # (2, 4)
        check(M.nested_reduce, G.reduce(name, inner, (1,)), G.reduce(name, xi, (1, 2)))
    b = G.leaf(numpy.arange(24).reshape(2, 3, 4) % 5 == 0)
    for name in ("reduce_any", "reduce_all"):
        check(M.nested_reduce, G.reduce(name, G.reduce(name, b, (0, 2)), (0,)),
              G.reduce(name, b, (0, 1, 2)))
    left(M.nested_reduce, G.reduce("reduce_max", G.reduce("reduce_sum", xi, (1,)), (0,)))
    # float max: which of -0.0 and 0.0 wins a tie depends on the visiting order
    z = G.leaf(numpy.array([[-1.0, 0.0], [-0.0, -1.0]]))
    nested = G.reduce("reduce_max", G.reduce("reduce_max", z, (0,)), (0,))
    left(M.nested_reduce, nested, G.reduce("reduce_max", z, (0, 1)))
    f = G.leaf(numpy.array([1e16, 1.0, -1e16, 1.0]).reshape(2, 2))  # float sums round per order
    left(M.nested_reduce, G.reduce("reduce_sum", G.reduce("reduce_sum", f, (0,)), (0,)))


def test_reduce_of_broadcast_scalar():
    for v, dt in ((-0.0, F), (NAN, F), (-128, I8), (True, B)):
        s = G.const(v, dt)
        for name in ("reduce_max", "reduce_min"):
            check(M.reduce_of_broadcast_scalar, G.reduce(name, G.broadcast(s, (2, 3)), (1,)),
                  G.broadcast(s, (2,)))
    b = G.broadcast(G.const(True, B), (2, 3))
    check(M.reduce_of_broadcast_scalar, G.reduce("reduce_all", b, (0, 1)), G.const(True, B))
    s = G.const(3.0, F)
    left(M.reduce_of_broadcast_scalar, G.reduce("reduce_sum", G.broadcast(s, (2, 3)), (1,)))
    empty = G.reduce("reduce_max", G.broadcast(s, (2, 0)), (1,))
    left(M.reduce_of_broadcast_scalar, empty)


# ---------------------------------------------------------------- the simplifier as a whole

def test_exp_log_pairs_are_not_simplified():
    x = leaf(F)
    for outer, inner in (("exp", "log"), ("log", "exp")):
        y = op(outer, op(inner, x))
        assert simplify([y]) == [y]
        assert differs(run(y), run(x))  # log(exp(1e308)) is inf, exp(log(-1)) is NaN


def test_simplify_settles_chains_in_one_call():
    x, y = leaves(F)
    e = op("multiply", op("negative", op("negative", x)), k(1.0, F, x))
    e = op("add", e, op("negative", op("multiply", y, k(1.0, F, x))))
    e = G.where(op("logical_not", op("not_equal", x, y)), e, x)
    (out,) = simplify([e])
    assert out is G.where(op("equal", x, y), op("subtract", x, y), x)
    assert_same(run(e), run(out))


def test_simplify_result_keeps_type_on_random_programs():
    rng = numpy.random.default_rng(3)
    unary = ["negative", "absolute", "square", "floor", "positive"]
    binary = ["add", "subtract", "multiply", "maximum", "minimum"]
    for dt in (F, I8):
        for _ in range(60):
            x, y = leaves(dt)
            pool = [x, y, k(0, dt, x), k(1, dt, x), k(-1, dt, x)]
            for _ in range(6):
                if rng.random() < 0.4:
                    pool.append(op(rng.choice(unary), pool[rng.integers(len(pool))]))
                else:
                    a, b = (pool[i] for i in rng.integers(len(pool), size=2))
                    pool.append(op(rng.choice(binary), a, b))
            (out,) = simplify([pool[-1]])
            verify([out])
            assert_same(run(pool[-1]), run(out))


# ---------------------------------------------------------------- constant folding

def _consts_are_scalars(roots):
    return all(n.shape == () for n in toposort(roots) if n.op == "const")


def test_fold_elementwise_wraps_and_rounds_like_numpy():
    x = leaf(I8)
    (o,) = constant_folding([op("multiply", k(127, I8, x), k(3, I8, x))])
    assert o is k(125, I8, x)  # 381 wraps to 125
    (o,) = constant_folding([op("add", k(0.1, F32, x), k(0.2, F32, x))])
    assert o.inputs[0].attr("value") == float(numpy.float32(0.1) + numpy.float32(0.2))
    (o,) = constant_folding([op("add", k(-0.0, F, x), k(-0.0, F, x))])
    assert o.inputs[0].attr("neg")


def test_fold_movement_of_constants():
    c = G.const(2.5, F32)
    b = G.broadcast(c, (2, 3))
    for node, shape in ((G.transpose(b, (1, 0)), (3, 2)), (G.reshape(b, (3, 2)), (3, 2)),
                        (G.slice_(b, ((0, 1, 1), (0, 3, 2))), (1, 2)),
                        (make("broadcast_to", (b,), (4, 2, 3), F32, (("shape", (4, 2, 3)),)),
                         (4, 2, 3)),
                        (G.reshape(c, (1, 1)), (1, 1))):
        assert fold_constant(node) is G.broadcast(c, shape)


def test_fold_reductions_of_constants():
    for v, dt, name, want in ((-0.0, F, "reduce_max", -0.0), (NAN, F32, "reduce_min", NAN),
                              (5, I8, "reduce_any", 1), (0, I8, "reduce_all", 0),
                              (True, B, "reduce_all", True)):
        b = G.broadcast(G.const(v, dt), (2, 3))
        node = make(name, (b,), (2,), dt, (("axes", (1,)),))
        out = fold_constant(node)
        assert out.op == "broadcast_to" and out.dtype == dt
        assert_same(run(node), run(out))
        assert_same(run(out), numpy.full((2,), want, dt))
    s = G.broadcast(G.const(3.0, F), (2, 3))
    assert fold_constant(G.reduce("reduce_sum", s, (1,))) is None  # 3+3+3 rounds per order
    assert fold_constant(G.reduce("reduce_max", G.broadcast(G.const(3.0, F), (2, 0)), (1,))) \
        is None


def test_folded_graph_keeps_constants_scalar():
    c = G.broadcast(G.const(2.0, F), (50, 40))
    e = G.reduce("reduce_max", G.transpose(op("exp", c), (1, 0)), (0,))
    (out,) = constant_folding([e])
    assert out.op == "broadcast_to" and out.shape == (50,) and _consts_are_scalars([out])
    assert_same(run(out), run(e))


# ---------------------------------------------------------------- end to end

_OFF = {"simplify", "constant_folding", "sink_movement"}


def _program(np_, a, b):
    t = (-(-a) * 1.0 - (-b)) / 1.0 + (-0.0)
    u = np_.maximum(t, -np_.inf) * (np_.abs(-a) > a)
    w = np_.where(np_.logical_not(a < b), u, t)
    return w.T.T, (w.max(axis=0)).max(), np_.full((3, 4), 2.0).max(axis=1) * b[:, 0]


def test_lazy_program_matches_numpy_with_and_without_rules():
    rng = numpy.random.default_rng(5)
    ha = rng.standard_normal((3, 4))
    ha[0, :3] = [NAN, -0.0, INF]
    hb = rng.standard_normal((3, 4))
    hb[1, :2] = [-INF, 0.0]
    with numpy.errstate(invalid="ignore"):
        want = _program(numpy, ha, hb)
    for off in (frozenset(), _OFF):
        with context(disable_passes=off):
            got = tracer.evaluate(*_program(tnp, tnp.asarray(ha), tnp.asarray(hb)))
        for g, w in zip(got, want):
            assert_same(numpy.asarray(g), numpy.asarray(w))


def test_simplifier_shrinks_the_plan():
    a = tnp.asarray(numpy.arange(12.0).reshape(3, 4))
    expr = tnp.exp(-(-(a * 1.0)))
    with context(disable_passes=_OFF):
        assert "negative" in str(tracer.explain(expr).graph_after)
    text = str(tracer.explain(expr).graph_after)
    assert "negative" not in text and "multiply" not in text and "exp" in text
