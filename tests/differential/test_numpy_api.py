"""The tracer.numpy namespace against NumPy: creation, reductions with their arguments, shape
functions, contractions, promotion, what evaluates and what does not, fallbacks and flushing."""
from __future__ import annotations

import warnings

import numpy
import pytest

import tracer
import tracer.numpy as tnp
from tracer.ir.config import context

H = numpy.random.default_rng(7).standard_normal((3, 4, 5))


def check(got, want, rtol=1e-12):
    want = numpy.asarray(want)
    got_a = numpy.asarray(got)
    assert got_a.shape == want.shape and got_a.dtype == want.dtype, (got_a.dtype, want.dtype)
    numpy.testing.assert_allclose(got_a, want, rtol=rtol, atol=1e-12, equal_nan=True)


CREATION = {
    "array": lambda m: m.array([[1, 2], [3, 4]], dtype=m.float32),
    "asarray_list": lambda m: m.asarray([1.5, 2]),
    "zeros": lambda m: m.zeros((2, 3), dtype=m.int16),
    "ones": lambda m: m.ones(4),
    "full_int": lambda m: m.full((2, 2), 7),
    "full_float32": lambda m: m.full(3, 0.1, dtype=m.float32),
    "zeros_like": lambda m: m.zeros_like(m.ones((2, 3), m.uint8)),
    "ones_like": lambda m: m.ones_like(m.arange(3)),
    "full_like": lambda m: m.full_like(m.arange(4.0), 2.5),
    "arange": lambda m: m.arange(2, 11, 3),
    "arange_float": lambda m: m.arange(0.0, 1.0, 0.25, dtype=m.float32),
    "linspace": lambda m: m.linspace(0, 1, 7),
    "eye": lambda m: m.eye(3, 4, k=1),
    "identity": lambda m: m.identity(3, dtype=m.int32),
}


@pytest.mark.parametrize("name", sorted(CREATION))
def test_creation(name):
    check(CREATION[name](tnp), CREATION[name](numpy))


def test_empty_has_shape_and_dtype():
    e = tnp.empty((2, 5), dtype=numpy.float32)
    assert e.shape == (2, 5) and e.dtype == numpy.float32
    assert tnp.empty_like(e).shape == (2, 5)


REDUCTIONS = ["sum", "prod", "max", "min", "amax", "amin", "mean", "var", "std", "any", "all"]
AXES = [None, 0, -1, (0, 2), 1]


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("fn", REDUCTIONS)
def test_reductions(fn, axis):
    t = tnp.asarray(H)
    for keepdims in (False, True):
        check(getattr(tnp, fn)(t, axis=axis, keepdims=keepdims),
              getattr(numpy, fn)(H, axis=axis, keepdims=keepdims), rtol=1e-10)


def test_reduction_arguments():
    hi = (H * 10).astype(numpy.int8)
    ti = tnp.asarray(hi)
    check(tnp.sum(ti), numpy.sum(hi))  # int8 sums in int64
    check(tnp.sum(ti, dtype=numpy.int8), numpy.sum(hi, dtype=numpy.int8))  # wraps
    check(tnp.mean(ti, axis=1), numpy.mean(hi, axis=1))  # ints average in float64
    check(tnp.mean(ti, dtype=numpy.float32), numpy.mean(hi, dtype=numpy.float32), rtol=1e-6)
    check(tnp.var(tnp.asarray(H), ddof=1, axis=2), numpy.var(H, ddof=1, axis=2))
    check(tnp.std(tnp.asarray(H), ddof=2), numpy.std(H, ddof=2))
    m = H.mean(axis=1, keepdims=True) + 0.25  # a given mean is used as it is
    check(tnp.var(tnp.asarray(H), axis=1, mean=tnp.asarray(m)), numpy.var(H, axis=1, mean=m))
    check(tnp.std(tnp.asarray(H), axis=1, mean=m), numpy.std(H, axis=1, mean=m))
    check(tnp.max(tnp.asarray(H), axis=0, initial=0.5), numpy.max(H, axis=0, initial=0.5))
    check(tnp.sum(tnp.asarray(H), initial=3.0), numpy.sum(H, initial=3.0))
    e = numpy.empty((3, 0), numpy.int16)  # nothing to reduce: the result is `initial`
    for fn, kw in [("max", dict(axis=1, initial=5)), ("min", dict(initial=-2)),
                   ("sum", dict(axis=1, initial=3, keepdims=True))]:
        check(getattr(tnp, fn)(tnp.asarray(e), **kw), getattr(numpy, fn)(e, **kw))
    out_h, out_t = numpy.zeros(4), tnp.zeros(4)
    numpy.sum(H, axis=(0, 2), out=out_h)
    tnp.sum(tnp.asarray(H), axis=(0, 2), out=out_t)
    check(out_t, out_h)
    t = tnp.asarray(H)
    check(t.sum(1), H.sum(1))
    check(t.mean(axis=(1, 2)), H.mean(axis=(1, 2)))


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_argmax_argmin(axis):
    h = H.copy()
    h[1, 2, 3] = numpy.nan
    t = tnp.asarray(h)
    for fn in ("argmax", "argmin"):
        check(getattr(tnp, fn)(t, axis=axis), getattr(numpy, fn)(h, axis=axis))
        check(getattr(tnp, fn)(t, axis=axis, keepdims=True),
              getattr(numpy, fn)(h, axis=axis, keepdims=True))


SHAPES = {
    "reshape": lambda m, a: m.reshape(a, (4, -1)),
    "method_reshape": lambda m, a: a.reshape(5, 3, 4),
    "transpose": lambda m, a: m.transpose(a, (2, 0, 1)),
    "T": lambda m, a: a.T,
    "swapaxes": lambda m, a: m.swapaxes(a, 0, 2),
    "moveaxis": lambda m, a: m.moveaxis(a, 0, -1),
    "expand_dims": lambda m, a: m.expand_dims(a, (0, 3)),
    "squeeze": lambda m, a: m.squeeze(m.expand_dims(a, 1), axis=1),
    "broadcast_to": lambda m, a: m.broadcast_to(a[:, :1, :], (3, 4, 5)),
    "ravel": lambda m, a: m.ravel(a[:, ::2]),
    "flatten": lambda m, a: a.flatten(),
    "concatenate": lambda m, a: m.concatenate([a, a[:1]], axis=0),
    "concatenate_none": lambda m, a: m.concatenate([a, a], axis=None),
    "stack": lambda m, a: m.stack([a, a * 2], axis=1),
    "vstack": lambda m, a: m.vstack([a[0], a[1]]),
    "hstack": lambda m, a: m.hstack([a[0], a[1]]),
    "flip": lambda m, a: m.flip(a, axis=(0, 2)),
    "flip_all": lambda m, a: m.flip(a),
    "where": lambda m, a: m.where(a > 0, a, -a),
    "where_scalars": lambda m, a: m.where(a > 0, 1.0, 0),
    "clip": lambda m, a: m.clip(a, -0.5, 0.5),
    "astype": lambda m, a: (a * 10).astype(m.int32),
    "basic_index": lambda m, a: a[1, ::-2, None, 1:4],
    "ellipsis": lambda m, a: a[..., 2],
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_functions(name):
    check(SHAPES[name](tnp, tnp.asarray(H)), SHAPES[name](numpy, H))


MATMUL = {
    "vec_vec": ((5,), (5,)),
    "mat_vec": ((4, 5), (5,)),
    "vec_mat": ((4,), (4, 5)),
    "mat_mat": ((3, 4), (4, 5)),
    "batched": ((2, 3, 4), (2, 4, 5)),
    "broadcast_batch": ((2, 3, 4), (4, 6)),
}


@pytest.mark.parametrize("name", sorted(MATMUL))
def test_matmul_dot(name):
    sa, sb = MATMUL[name]
    rng = numpy.random.default_rng(1)
    ha, hb = rng.standard_normal(sa), rng.standard_normal(sb)
    a, b = tnp.asarray(ha), tnp.asarray(hb)
    check(a @ b, ha @ hb)
    check(tnp.matmul(a, b), numpy.matmul(ha, hb))
    if len(sb) <= 2:
        check(tnp.dot(a, b), numpy.dot(ha, hb))


def test_int_matmul_and_promotion():
    ha = numpy.arange(6, dtype=numpy.int8).reshape(2, 3)
    hb = numpy.arange(3, dtype=numpy.float32)
    check(tnp.asarray(ha) @ tnp.asarray(hb), ha @ hb, rtol=1e-6)


PROMOTION = {
    "f32_plus_pyfloat": lambda m: m.ones(3, m.float32) + 1.5,
    "u8_plus_pyfloat": lambda m: m.ones(3, m.uint8) * 2.5,
    "int_truediv_int": lambda m: m.arange(4) / 2,
    "i8_plus_i16": lambda m: m.ones(3, m.int8) + m.ones(3, m.int16),
    "i8_lt_big_int": lambda m: m.arange(3, dtype=m.int8) < 1000,
    "u64_gt_minus_one": lambda m: m.arange(3, dtype=m.uint64) > -1,
    "f32_times_f64_scalar": lambda m: m.ones(2, m.float32) * m.float64(3.0),
    "bool_plus_int": lambda m: m.ones(2, bool) + 1,
    "u8_wraps": lambda m: m.full(2, 250, m.uint8) + 10,
    "i32_plus_u32": lambda m: m.ones(2, m.int32) + m.ones(2, m.uint32),
    "f32_power_int": lambda m: m.arange(4, dtype=m.float32) ** 3,
}


@pytest.mark.parametrize("name", sorted(PROMOTION))
def test_nep50_promotion(name):
    check(PROMOTION[name](tnp), PROMOTION[name](numpy), rtol=1e-6)


@pytest.mark.lazy
def test_metadata_does_not_evaluate_and_conversions_do():
    t = tnp.asarray(H) * 2
    before = tracer.stats().evaluations
    assert (t.shape, t.dtype, t.ndim, t.size, t.nbytes, t.T.shape) == \
        (H.shape, H.dtype, 3, H.size, H.nbytes, H.T.shape)
    assert tracer.stats().evaluations == before
    s = t.sum()
    assert float(s) == pytest.approx(float((H * 2).sum()))
    assert tracer.stats().evaluations == before + 1
    assert bool(s > -1e9) and int(tnp.asarray(7.9)) == 7 and len(t) == 3
    assert t[0, 0, 1].item() == H[0, 0, 1] * 2
    assert t.tolist() == (H * 2).tolist()
    assert repr(tnp.arange(3)) == repr(numpy.arange(3)) and str(t[0]) == str(H[0] * 2)
    assert [r.shape for r in t] == [(4, 5)] * 3


@pytest.mark.lazy
def test_evaluate_computes_several_as_one_graph():
    a = tnp.asarray(H)
    x, y = a * 2, a.sum(axis=0)
    ev = tracer.stats().evaluations
    tracer.evaluate(x, y)
    assert tracer.stats().evaluations == ev + 1
    check(x, H * 2)
    check(y, H.sum(axis=0))


@pytest.mark.lazy
def test_numpy_functions_dispatch_lazily():
    t = tnp.asarray(H)
    for r in (numpy.sum(t, axis=1), numpy.exp(t), numpy.add(t, 1), numpy.mean(t),
              numpy.transpose(t), numpy.concatenate([t, t])):
        assert isinstance(r, tracer.ndarray)
    check(numpy.sum(t, axis=1), H.sum(axis=1))
    check(numpy.maximum(H, t), numpy.maximum(H, H))


def test_unknown_function_falls_back_warns_once_and_counts():
    t = tnp.asarray(H)
    before = tracer.stats().fallbacks
    with pytest.warns(tracer.TracerFallbackWarning, match="gradient"):
        for _ in range(3):
            r = tnp.gradient(t, axis=1)  # the same line: one warning
    check(r, numpy.gradient(H, axis=1))
    assert tracer.stats().fallbacks == before + 3
    check(numpy.gradient(t, axis=0), numpy.gradient(H, axis=0))  # via __array_function__
    assert "gradient" in tracer.coverage_report()


def test_long_loop_flushes_the_pending_graph():
    with context(flush_nodes=500):
        h = numpy.linspace(0, 1, 8)
        t = tnp.asarray(h)
        for _ in range(600):
            t = t * 0.999 + 0.001
            h = h * 0.999 + 0.001
        assert tracer.stats().evaluations > 0
        check(t, h, rtol=1e-9)


def test_other_ndarray_methods_fall_back_and_in_place_ones_write_back():
    h = numpy.array([3, 1, 2])
    t = tnp.asarray(h)
    v = t[::-1]
    with pytest.warns(tracer.TracerFallbackWarning):
        r = t.byteswap(inplace=True)
    h.byteswap(inplace=True)
    assert r is t
    check(t, h)
    check(v, h[::-1])  # views see the in-place write
    with pytest.warns(tracer.TracerFallbackWarning):
        check(t.compress([True, False, True]), h.compress([True, False, True]))
    check(tnp.asarray(numpy.array([1 + 2j])).imag, numpy.array([2.0]))
    check(t.imag, h.imag)
    with pytest.raises(AttributeError):
        t.not_a_method


def test_type_queries_read_dtypes_without_evaluating():
    a = tnp.arange(3, dtype=tnp.int32)
    h = numpy.arange(3, dtype=numpy.int32)
    ev = tracer.stats().evaluations
    for m, x in ((tnp, a), (numpy, a)):  # numpy's own functions dispatch to tracer's
        assert m.result_type(x, 1.0) == numpy.result_type(h, 1.0)
        assert m.result_type(x, numpy.int64) == numpy.result_type(h, numpy.int64)
        assert m.can_cast(x, numpy.int16) == numpy.can_cast(h, numpy.int16)
        assert m.can_cast(x, numpy.float64, "same_kind")
    assert tnp.promote_types("i4", "f4") == numpy.float64
    assert tnp.finfo(tnp.float32).eps == numpy.finfo(numpy.float32).eps
    assert tnp.iinfo(a.dtype).max == 2**31 - 1
    assert tracer.stats().evaluations == ev


def test_numpy_functions_that_write_in_place_write_back_through_the_lazy_array():
    cases = [
        (lambda m, a: m.place(a, a > 3, [-1, -2]), numpy.arange(8)),
        (lambda m, a: m.copyto(a, 7.0, where=a > 2), numpy.arange(5.0)),
        (lambda m, a: m.fill_diagonal(a, 5), numpy.zeros((3, 3))),
        (lambda m, a: m.putmask(a, a % 2 == 0, a ** 2), numpy.arange(6)),
    ]
    for fn, h in cases:
        t = tnp.asarray(h.copy())
        v = t.reshape(-1)
        with pytest.warns(tracer.TracerFallbackWarning):
            fn(tnp, t)
        fn(numpy, h)
        check(t, h)
        check(v, h.reshape(-1))  # a view of the same base sees it
    ro = tnp.broadcast_to(tnp.arange(3), (2, 3))
    with pytest.warns(tracer.TracerFallbackWarning), pytest.raises(ValueError):
        tnp.fill_diagonal(ro, 1)


def test_strings_and_objects_stay_numpy_arrays():
    with warnings.catch_warnings():
        warnings.simplefilter("error", tracer.TracerFallbackWarning)  # not a fallback
        f = tnp.array(["pear", "apple", "fig"])
        assert tnp.array([["a", "b"], ["c", "d"]], order="F").flags.f_contiguous
    assert type(f) is numpy.ndarray
    with pytest.warns(tracer.TracerFallbackWarning):
        s = tnp.sort(f)
    assert type(s) is numpy.ndarray and s.tolist() == ["apple", "fig", "pear"]
    with pytest.warns(tracer.TracerFallbackWarning):
        assert tnp.concatenate([f, ["kiwi"]]).tolist()[-1] == "kiwi"
    assert type(tnp.asarray([{"a": 1}], dtype=object)) is numpy.ndarray


def test_flags_and_base_follow_numpy():
    for m in (tnp, numpy):
        a = m.arange(8)
        r = a[::-1]
        assert r.base is a and a.base is None
        assert a.flags.c_contiguous and a.flags["C_CONTIGUOUS"] and a.flags.owndata
        assert not r.flags.c_contiguous and not r.flags.owndata
        assert a.reshape(2, 4).T.flags.f_contiguous
        assert not m.broadcast_to(a, (2, 8)).flags.writeable
        a.flags.writeable = False
        with pytest.raises(ValueError, match="read-only"):
            a[0] = 1


def test_shape_assignment_and_scalar_hashing_follow_numpy():
    for m in (tnp, numpy):
        a = m.arange(6)
        a.shape = (2, 3)
        assert a.shape == (2, 3) and int(a[1, 2]) == 5
        b = a.T
        with pytest.raises(AttributeError, match="Incompatible shape"):
            b.shape = (6,)
        counts = {}
        for v in m.array([1, 2, 1]):  # NumPy's scalars hash
            counts[v] = counts.get(v, 0) + 1
        assert {int(k): n for k, n in counts.items()} == {1: 2, 2: 1}
        with pytest.raises(TypeError, match="unhashable"):
            hash(m.array(5.0))  # a 0-d array does not
