"""Views and mutation as NumPy users write them. Every scenario runs side by side on a NumPy array
and on a tracer array holding the same values, and afterwards EVERY array involved (the base, each
view, each copy, each intermediate read) is compared with NumPy's.

A scenario is `f(m, a) -> dict`: m is numpy or tracer.numpy, a the base array; the dict names the
other arrays the scenario made (views, copies, snapshots taken between writes).
"""
from __future__ import annotations

import warnings

import numpy
import pytest

import tracer
import tracer.numpy as tnp

SHAPE = (4, 6)


def base(dtype=numpy.float64, shape=SHAPE):
    return (numpy.arange(numpy.prod(shape)) - 7).reshape(shape).astype(dtype)


def same(got, want, name=""):
    got_a = numpy.asarray(got)
    want = numpy.asarray(want)
    assert got_a.shape == want.shape, (name, got_a.shape, want.shape)
    assert got_a.dtype == want.dtype, (name, got_a.dtype, want.dtype)
    numpy.testing.assert_array_equal(got_a, want, err_msg=name)


def side_by_side(scenario, dtype=numpy.float64, shape=SHAPE):
    h = base(dtype, shape)
    t = tnp.asarray(h.copy())
    with numpy.errstate(all="ignore"):
        want = scenario(numpy, h) or {}
        got = scenario(tnp, t) or {}
    assert set(got) == set(want)
    same(t, h, "base")
    for name in want:
        same(got[name], want[name], name)
    return t, h


def snap(m, x):
    """The values now (a copy NumPy will not alias), for comparing reads between writes."""
    return numpy.array(numpy.asarray(x), copy=True)


# ------------------------------------------------------------------ writes through views

def slice_then_zero(m, a):
    b = a[1:3]
    b[:] = 0
    return {"b": b, "row": a[1]}


def through_T(m, a):
    t = a.T
    t[0] = -1
    t[:, 2] = 5
    t[3, 1] += 10
    return {"t": t}


def through_reshape_views(m, a):
    r = a.reshape(3, 8)
    r[1, 2:5] = 99
    r3 = a.reshape(2, 3, 4)
    r3[1, ..., 0] = 7
    flat = a.reshape(-1)
    flat[::5] = -2
    return {"r": r, "r3": r3, "flat": flat}


def strided_reversed(m, a):
    s = a[::2, ::-1]
    s[0] = m.arange(6)
    s[:, 1] = -3
    s[1, ::2] *= 4
    return {"s": s}


def chained_slices(m, a):
    c = a[1:][::2]
    c[:, 0] = -5
    c[1] += 1
    cc = a[:, 1:][::-1][1:3, ::2]
    cc[...] = 11
    return {"c": c, "cc": cc}


def T_then_int(m, a):
    r = a.T[0]
    r[1:3] = 100
    r2 = a.T[4]
    r2 += r
    return {"r": r, "r2": r2}


def newaxis_view(m, a):
    v = a[..., None]
    v[1, :, 0] = 42
    w = a[None, 2, None, ::2]
    w[0, 0, 1] = -42
    return {"v": v, "w": w}


def int_index_row(m, a):
    r = a[1]
    r[::2] = 8
    r += 1
    e = a[2][3]   # a scalar: a copy in NumPy
    a[2, 3] = 1000
    return {"r": r, "e": e}


def views_see_each_other(m, a):
    v1, v2 = a[1:3], a[:, 2]
    v1[:] = -1
    s1 = snap(m, v2)
    v2 += 100
    s2 = snap(m, v1)
    a[...] = a * 2
    return {"v1": v1, "v2": v2, "s1": s1, "s2": s2}


def view_functions(m, a):
    f = m.flip(a)
    f[0, :2] = -3
    sw = m.swapaxes(a, 0, 1)
    sw[1, 2] = -4
    mv = m.moveaxis(a.reshape(2, 2, 6), 0, -1)
    mv[0, 1, 1] = -5
    ex = m.expand_dims(a, 0)
    ex[0, 3, 3] = -6
    sq = m.squeeze(a[1:2])
    sq[4] = -7
    rv = m.ravel(a)
    rv[7] = -8
    tr = m.transpose(a)
    tr[5, 3] = -9
    tt = a.T.T
    tt[2, 0] = -10
    bv = a[...]
    bv[3, 5] = -11
    return {"f": f, "sw": sw, "mv": mv, "ex": ex, "sq": sq, "rv": rv, "tr": tr, "tt": tt,
            "bv": bv}


def deep_chain(m, a):
    v = a[1:, ::-1].T[1:5:2]
    v[:, 0] = 55
    w = v.reshape(-1)         # a copy here (v is not contiguous), as in NumPy
    w[:] = -1
    return {"v": v, "w": w}


def write_value_is_view_of_same_base(m, a):
    a[1:] = a[:-1]            # NumPy reads all of the value before writing (overlap handled)
    a[:, :4] = a[:4, :4].T
    a[0] = a[:, 2].sum()
    return {}


def loop_of_row_updates(m, a):
    for i in range(4):
        a[i] = a[i - 1] * 2 + 1
    return {}


def derived_values_are_snapshots(m, a):
    x = a[0]
    y = x + 0                 # a new array: later writes to a do not reach it
    s = a.sum()
    a[0] = 5
    return {"x": x, "y": y, "s": s}


def zero_size_and_negative_steps(m, a):
    a[3:3] = 5
    a[::-2, 1] = [1, 2]
    a[-1, -1:-4:-1] = -1
    return {}


VIEW_SCENARIOS = [slice_then_zero, through_T, through_reshape_views, strided_reversed,
                  chained_slices, T_then_int, newaxis_view, int_index_row, views_see_each_other,
                  view_functions, deep_chain, write_value_is_view_of_same_base,
                  loop_of_row_updates, derived_values_are_snapshots,
                  zero_size_and_negative_steps]


@pytest.mark.parametrize("scenario", VIEW_SCENARIOS, ids=lambda f: f.__name__)
def test_write_through_views(scenario):
    side_by_side(scenario)


@pytest.mark.parametrize("scenario", [slice_then_zero, through_T, strided_reversed,
                                      int_index_row, views_see_each_other],
                         ids=lambda f: f.__name__)
def test_write_through_views_int(scenario):
    side_by_side(scenario, numpy.int64)


def test_scalar_element_is_a_copy_not_a_view():
    def sc(m, a):
        s = a[1, 2]
        e = a[1][0]
        a[1] = -1
        s += 1                # only s changes
        return {"s": s, "e": e}
    side_by_side(sc)


# ------------------------------------------------------------------ in-place operators

INPLACE = ["__iadd__", "__isub__", "__imul__", "__ifloordiv__", "__itruediv__", "__imod__",
           "__ipow__"]


@pytest.mark.parametrize("op", INPLACE)
def test_inplace_operators_on_views_and_bases(op):
    def sc(m, a):
        v = a[1:, ::2]
        getattr(v, op)(3)
        getattr(a, op)(2)
        w = a.T[1:3]
        getattr(w, op)(m.full(4, 2.0))   # a broadcast array operand
        return {"v": v, "w": w}
    side_by_side(sc)


@pytest.mark.parametrize("op", ["__iadd__", "__isub__", "__imul__", "__ifloordiv__", "__imod__",
                                "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"])
def test_inplace_int_operators(op):
    def sc(m, a):
        a += 10
        v = a[::2, 1:]
        getattr(v, op)(3)
        getattr(a[1], op)(a[2])
        return {"v": v}
    side_by_side(sc, numpy.int64)


def test_inplace_int_bool_small_types():
    def sc(m, a):
        a8 = a.astype(m.int8)
        a8 += 120                  # wraps
        u8 = a.astype(m.uint8)     # wraps negative values
        u8 -= 1
        b = a > 0
        b |= a < -5
        b &= b[::-1]
        f32 = a.astype(m.float32)
        f32 += 0.1                 # stays float32 (NEP 50)
        f32 *= m.ones(6)           # float64 operand: same_kind cast back to float32
        return {"a8": a8, "u8": u8, "b": b, "f32": f32}
    side_by_side(sc, numpy.int64)


@pytest.mark.parametrize("expr", [
    lambda a: a.__iadd__(1.5),
    lambda a: a[1:].__imul__(0.5),
    lambda a: a.__itruediv__(2),
    lambda a: a.__iadd__(numpy.ones(6)),
    lambda a: a[0].__isub__(a[1] * 1.0),
], ids=["iadd_float", "imul_view", "itruediv", "iadd_float_array", "isub_float_view"])
def test_int_inplace_with_float_raises_like_numpy(expr):
    h = base(numpy.int64)
    t = tnp.asarray(h.copy())
    with pytest.raises(TypeError) as want:
        expr(h)
    ev = tracer.stats().evaluations
    with pytest.raises(TypeError) as got:
        expr(t)
    assert tracer.stats().evaluations == ev
    assert type(got.value) is type(want.value)          # numpy's UFuncTypeError subclass
    assert isinstance(got.value, numpy._core._exceptions.UFuncTypeError)
    assert str(got.value) == str(want.value)
    same(t, h)                                          # nothing was written


def test_inplace_matmul():
    def sc(m, a):
        sq = a[:, :4].copy()
        sq @= m.eye(4) * 2
        v = a[:, 2:]
        v @= m.ones((4, 4))
        return {"sq": sq, "v": v}
    side_by_side(sc)


# ------------------------------------------------------------------ out= and where=

def ufunc_out(m, a):
    c = m.zeros(SHAPE)
    r = m.add(a, a[0], out=c)
    is_c = r is c
    m.multiply(a[:-1], 2, out=a[1:])          # the output overlaps the input
    m.negative(a[:, ::2], out=a[:, 1::2])
    m.sqrt(m.abs(a), out=c[::-1])
    d = m.zeros(SHAPE, dtype=m.float32)
    m.add(a, 0.5, out=d)                      # same_kind cast into float32
    m.subtract(a, 1, out=(a,))                # out as a tuple
    return {"c": c, "is_c": numpy.asarray(is_c), "d": d}


def ufunc_out_where(m, a):
    c = m.full(SHAPE, -1.0)
    m.add(a, 100, out=c, where=a > 3)
    m.negative(a, out=a, where=a % 2 == 0)
    m.multiply(a, 10, out=a, where=[True, False, True, False, False, True])
    v = a[1:3]
    m.subtract(v, 1000, out=v, where=v > 0)
    m.add(a, 1, out=a, where=False)
    return {"c": c, "v": v}


def reduction_out(m, a):
    col = m.zeros(4)
    m.sum(a, axis=1, out=col)
    m.max(a, axis=0, out=a[0])                # out is a view of the input
    m.mean(a, axis=1, keepdims=True, out=a[:, :1])
    return {"col": col}


@pytest.mark.parametrize("scenario", [ufunc_out, ufunc_out_where, reduction_out],
                         ids=lambda f: f.__name__)
def test_out_and_where(scenario):
    side_by_side(scenario)


def test_out_shape_mismatch_raises_like_numpy():
    for dims in [(4, 6), (6,)]:
        h = base(shape=dims)
        t = tnp.asarray(h.copy())
        with pytest.raises(ValueError) as want:
            numpy.multiply(h, 2, out=h[1:])
        with pytest.raises(ValueError) as got:
            tnp.multiply(t, 2, out=t[1:])
        assert str(got.value) == str(want.value)
        same(t, h)


def test_fill():
    def sc(m, a):
        a.fill(3)
        v = a[1:3, ::2]
        v.fill(-1)
        a.T[::2].fill(7)
        s = a[3, 3]
        a[3].fill(2.9)
        return {"v": v, "s": s}
    side_by_side(sc)
    side_by_side(lambda m, a: a[1].fill(2.9), numpy.int64)   # truncates


# ------------------------------------------------------------------ evaluation and writes

def test_write_after_evaluating_and_old_views():
    h = base()
    t = tnp.asarray(h.copy())
    hv, tv = h[2], t[2]
    hw, tw = h[:, ::-1], t[:, ::-1]
    t2 = t * 2
    tracer.evaluate(t, tv, t2)
    h2 = h * 2
    same(tv, hv)
    h[2, 1] = -7
    t[2, 1] = -7
    same(tv, hv)
    same(tw, hw)
    hv *= 3
    tv *= 3
    same(t, h)
    same(tw, hw)
    same(t2, h2)                     # computed before the writes
    numpy.asarray(t)                 # evaluate again, then write again
    hw[0, 0] = 1234
    tw[0, 0] = 1234
    same(t, h)
    same(tv, hv)


def test_views_created_after_evaluation():
    h = base()
    t = tnp.asarray(h.copy())
    t += 1
    h += 1
    float(t.sum())                   # evaluates t
    tv, hv = t[1:, 2], h[1:, 2]
    tv[:] = 0
    hv[:] = 0
    same(t, h)
    same(tv, hv)


# ------------------------------------------------------------------ read-only and copies

@pytest.mark.parametrize("expr", [
    lambda m, b, a: b.__setitem__((0, 0), 1),
    lambda m, b, a: b.__setitem__(Ellipsis, 1),
    lambda m, b, a: b.__iadd__(1),
    lambda m, b, a: m.add(a[0], 1, out=b),
    lambda m, b, a: m.sum(a, axis=0, out=b[0]),
    lambda m, b, a: b.fill(2),
    lambda m, b, a: b[1:].__setitem__(0, 1),
    lambda m, b, a: b.T.__setitem__(0, 1),
    lambda m, b, a: b[2].__setitem__(0, 1),
], ids=["setitem", "setitem_all", "iadd", "ufunc_out", "reduce_out", "fill", "view_of_it",
        "T_of_it", "row_of_it"])
def test_broadcast_to_views_are_read_only(expr):
    h = base()
    t = tnp.asarray(h.copy())
    hb = numpy.broadcast_to(h[0], (3, 6))
    tb = tnp.broadcast_to(t[0], (3, 6))
    assert tb.flags["WRITEABLE"] is False and hb.flags["WRITEABLE"] is False
    with pytest.raises(ValueError) as want:
        expr(numpy, hb, h)
    with pytest.raises(ValueError) as got:
        expr(tnp, tb, t)
    assert str(got.value) == str(want.value)
    same(t, h)
    same(tb, hb)


def test_broadcast_view_sees_writes_to_its_base():
    def sc(m, a):
        b = m.broadcast_to(a[:, :1], (4, 6))
        a[2, 0] = 50
        c = b.copy()                 # a writeable copy
        c[0, 0] = -1
        r = b.reshape(24)            # reshape of a broadcast view copies
        r[0] = -2
        return {"b": b, "c": c, "r": r}
    side_by_side(sc)


def test_reshape_of_non_contiguous_view_is_a_copy():
    def sc(m, a):
        r = a.T.reshape(-1)          # must copy: writes do not reach a
        r[0] = 1000
        r2 = a[:, ::2].reshape(12)   # must copy
        r2[1] = 2000
        r3 = a[::2].reshape(12)      # must copy (rows are not adjacent)
        r3[2] = 3000
        f = a.T.flatten()            # always a copy
        f[3] = 4000
        rv = a[:, ::2].reshape(4, 3, 1)   # a view: writes do reach a
        rv[0, 1, 0] = 5000
        rv2 = a[1:3].reshape(2, 2, 3)     # a view
        rv2[1, 1] = 6000
        return {"r": r, "r2": r2, "r3": r3, "f": f, "rv": rv, "rv2": rv2}
    t, h = side_by_side(sc)


def test_copies_are_independent():
    def sc(m, a):
        c = a.copy()
        c[0] = -1
        c2 = m.copy(a[1:])
        c2[0, 0] = -2
        c3 = m.array(a)
        c3[1] = -3
        c4 = a.astype(a.dtype)
        c4[2] = -4
        c5 = a[::2].copy()
        a[0, 0] = 99
        c5 += 1
        same_obj = a.astype(a.dtype, copy=False)   # no copy: NumPy returns a itself
        same_obj[3, 3] = -5
        return {"c": c, "c2": c2, "c3": c3, "c4": c4, "c5": c5, "same_obj": same_obj}
    side_by_side(sc)


# ------------------------------------------------------------------ assignment rules

def broadcast_assignments(m, a):
    a[0] = [1, 2, 3, 4, 5, 6]
    a[:, 0] = 5
    a[:, 1:3] = [[1], [2], [3], [4]]
    a[1:3] = a[0]
    a[3] = m.arange(6)[None]          # a leading 1 is dropped
    a[2:, 4:] = 0.5
    a[...] = a[::-1] * 2
    return {}


def python_values(m, a):
    a[0] = 3.7
    a[1] = -3.7
    a[2, :3] = (1, 2, 3)
    a[3] = True
    return {}


@pytest.mark.parametrize("scenario,dtype", [(broadcast_assignments, numpy.float64),
                                            (broadcast_assignments, numpy.int64),
                                            (python_values, numpy.float64),
                                            (python_values, numpy.int64),
                                            (python_values, numpy.int8)],
                         ids=["bcast_f64", "bcast_i64", "python_f64", "python_i64",
                              "python_i8"])
def test_assignment_rules(scenario, dtype):
    side_by_side(scenario, dtype)


@pytest.mark.parametrize("dtype,key,value,exc", [
    (numpy.int8, (0, 0), 300, OverflowError),
    (numpy.int8, 0, 300, OverflowError),
    (numpy.int8, (slice(None), 1), -129, OverflowError),
    (numpy.uint8, (1, 1), -1, OverflowError),
    (numpy.uint8, 1, [1, 2, 3, 4, 5, 300], OverflowError),
    (numpy.int64, (0, 0), float("nan"), ValueError),
    (numpy.int64, 0, 2**63, OverflowError),
    (numpy.float64, 0, [1, 2, 3], ValueError),
    (numpy.float64, (0, 0), [1.0], ValueError),
    (numpy.float64, (0, 0), numpy.ones(1), ValueError),
    (numpy.float64, 0, [[1, 2, 3, 4, 5, 6]], ValueError),
    (numpy.float64, slice(0, 2), numpy.ones((3, 6)), ValueError),
    (numpy.float64, 0, "abc", ValueError),
], ids=["i8_300", "i8_row_300", "i8_col_-129", "u8_-1", "u8_list_300", "nan_to_int",
        "i64_2**63", "row_wrong_length", "element_gets_list", "element_gets_array",
        "row_gets_2d_list", "rows_wrong_shape", "string"])
def test_bad_assignment_raises_like_numpy(dtype, key, value, exc):
    h = base(dtype)
    t = tnp.asarray(h.copy())
    with pytest.raises(exc) as want:
        h[key] = value
    ev = tracer.stats().evaluations
    with pytest.raises(exc) as got:
        t[key] = value
    assert tracer.stats().evaluations == ev
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)
    same(t, base(dtype))   # nothing written (NumPy may have written a list's first items)


def test_fill_overflow_raises_like_numpy():
    h = base(numpy.int8)
    t = tnp.asarray(h.copy())
    with pytest.raises(OverflowError):
        h.fill(300)
    with pytest.raises(OverflowError):
        t.fill(300)
    same(t, h)


# ------------------------------------------------------------------ advanced indexing

def advanced_indexing(m, a):
    r = a[[0, 2]]                     # a copy
    r[0] = -1
    a[a > 2] = 0
    a[[0, 3], 1] = -5
    a[[1, 1, 2]] += 1                 # repeated indices: each written once, as in NumPy
    a[:, [1, 3]] *= 2
    v = a[1:]
    v[v < -3] = 100                   # a mask write through a view reaches a
    m_read = a[a > 1]
    fancy = a[[0, 1], [2, 3]]
    rows = a[numpy.array([3, 0])]
    lazy_idx = a[m.asarray([1, 2])]
    return {"r": r, "v": v, "m_read": m_read, "fancy": fancy, "rows": rows,
            "lazy_idx": lazy_idx}


def test_advanced_indexing_is_lazy_without_a_warning():
    before = tracer.stats().fallbacks
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        side_by_side(advanced_indexing)
    assert tracer.stats().fallbacks == before


def test_advanced_index_results_stay_lazy_and_correct():
    h = base()
    t = tnp.asarray(h.copy())
    fallbacks = tracer.stats().fallbacks
    r = t[[2, 0]]
    assert isinstance(r, tracer.ndarray) and tracer.stats().fallbacks == fallbacks
    same(r * 2 + t[0], h[[2, 0]] * 2 + h[0])
