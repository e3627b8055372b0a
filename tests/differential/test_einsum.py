"""tracer/einsum.py against NumPy's einsum: values, dtypes, shapes, views, errors; that it
records without evaluating, and that contractions reach the optimizer as matmuls."""
from __future__ import annotations

import warnings

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir import toposort

RNG = numpy.random.default_rng(0)

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ii", [(3, 3)]), ("ii->i", [(3, 3)]),
    ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]), ("ij->j", [(3, 4)]), ("i,i", [(4,), (4,)]),
    ("i,j", [(3,), (4,)]), ("i,j->ji", [(3,), (4,)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk", [(2, 3, 4), (4, 5)]), ("ij,ij->i", [(3, 4), (3, 4)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]), ("iij->j", [(3, 3, 4)]), ("iji->j", [(3, 4, 3)]),
    ("ijk,ikj->i", [(2, 3, 4), (2, 4, 3)]), ("i,i,i->", [(3,), (3,), (3,)]),
    (",ij->ij", [(), (2, 3)]), ("ij,jk", [(2, 1), (3, 4)]), ("...,...", [(2, 3), (1, 3)]),
    ("i...->...", [(2, 3, 4)]), ("ba", [(3, 4)]), ("iijj->ij", [(2, 2, 3, 3)]),
    ("ijk,jil->kl", [(3, 4, 5), (4, 3, 2)]), ("i,ij,j->", [(3,), (3, 4), (4,)]),
    ("Ab,bA->", [(2, 3), (3, 2)]), ("iii->i", [(3, 3, 3)]), ("ij,ik->jk", [(0, 3), (0, 2)]),
    (" i j , j k -> i k ", [(2, 3), (3, 2)]), ("ab,cd,bc->ad", [(2, 3), (4, 2), (3, 4)]),
    ("i,i->i", [(0,), (1,)]), ("ij,j->i", [(2, 0), (1,)]),
]


def data(shape, dtype):
    if dtype == numpy.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    if numpy.dtype(dtype).kind == "f":
        return RNG.standard_normal(shape).astype(dtype)
    return RNG.integers(-3, 4, shape).astype(dtype)


def check(got, want, rtol=1e-12):
    g = numpy.asarray(got)
    assert isinstance(got, np.ndarray) or \
        isinstance(want, numpy.generic) and type(got) is type(want)  # adaptive laziness
    assert g.dtype == numpy.asarray(want).dtype and g.shape == numpy.shape(want)
    numpy.testing.assert_allclose(g, want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32, numpy.int64, numpy.int8,
                                   numpy.bool_])
def test_matches_numpy(dtype):
    ins = [[data(s, dtype) for s in shapes] for _, shapes in CASES]
    before = tracer.stats().evaluations
    got = [np.einsum(sub, *[np.asarray(a) for a in arrs]) for (sub, _), arrs in zip(CASES, ins)]
    assert tracer.stats().evaluations == before
    tracer.evaluate(*got)
    for (sub, _), arrs, g in zip(CASES, ins, got):
        check(g, numpy.einsum(sub, *arrs), 1e-5 if dtype == numpy.float32 else 1e-12)


def test_mixed_dtypes_and_arguments():
    f32, i8 = data((3, 4), numpy.float32), data((4,), numpy.int8)
    a, b = np.asarray(f32), np.asarray(i8)
    check(np.einsum("ij,j->i", a, b), numpy.einsum("ij,j->i", f32, i8), 1e-6)
    check(np.einsum("ij,j", a, b, dtype=numpy.float64, casting="same_kind"),
          numpy.einsum("ij,j", f32, i8, dtype=numpy.float64, casting="same_kind"))
    check(np.einsum("i,i", b, b, dtype="i2"), numpy.einsum("i,i", i8, i8, dtype="i2"))
    check(np.einsum(",i", 2.5, b), numpy.einsum(",i", 2.5, i8))  # Python scalars are strong
    check(np.einsum("ij,jk", a, a.T, optimize=True), numpy.einsum("ij,jk", f32, f32.T), 1e-5)
    check(np.einsum("ij->i", [[1, 2], [3, 4]]), numpy.einsum("ij->i", [[1, 2], [3, 4]]))
    # one operand, nothing summed: NumPy's view ignores dtype=, and so does this
    check(np.einsum("ij->ji", b[None], dtype=float), numpy.einsum("ij->ji", i8[None], dtype=float))


def test_sublist_form_and_path():
    x = data((3, 4), numpy.float64)
    a = np.asarray(x)
    check(np.einsum(a, [0, 1], a, [0, 2], [1, 2]), numpy.einsum(x, [0, 1], x, [0, 2], [1, 2]))
    check(np.einsum(a, [26, 0]), numpy.einsum(x, [26, 0]))
    check(np.einsum(a, [Ellipsis, 1], [Ellipsis]), numpy.einsum(x, [Ellipsis, 1], [Ellipsis]))
    before = tracer.stats().evaluations
    got = np.einsum_path("ij,jk,kl->il", a, a.T, a, optimize="greedy")
    assert tracer.stats().evaluations == before
    assert got == numpy.einsum_path("ij,jk,kl->il", x, x.T, x, optimize="greedy")


def test_single_operand_is_a_view():
    for m in (numpy, np):
        x = m.asarray(numpy.arange(9.0).reshape(3, 3))
        m.einsum("ii->i", x)[1] = -1
        m.einsum("ij->ji", x)[0, 2] = -2
        m.einsum("ii->i", x.T)[2] = -3
        assert x.tolist() == [[0, 1, 2], [3, -1, 5], [-2, 7, -3]]
    # a diagonal whose axes do not merge into one strided axis is a copy (a gather)
    x = numpy.arange(36.0).reshape(6, 6)[::2, ::2]
    check(np.einsum("ii->i", np.asarray(numpy.arange(36.0).reshape(6, 6))[::2, ::2]),
          numpy.einsum("ii->i", x))


def test_out():
    x = data((3, 4), numpy.float64)
    host = numpy.zeros(3, numpy.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # out= runs NumPy, warned once per call site
        assert np.einsum("ij->i", np.asarray(x), out=host, casting="unsafe") is host
        lazy = np.zeros((2, 3))
        row = lazy[1]
        assert np.einsum("ij->i", np.asarray(x), out=row) is row
    numpy.testing.assert_allclose(host, x.sum(1).astype(numpy.float32), rtol=1e-6)
    numpy.testing.assert_allclose(numpy.asarray(lazy), [[0, 0, 0], x.sum(1)])


@pytest.mark.lazy
def test_float16_runs_numpy():
    x = data((3, 4), numpy.float16)
    with pytest.warns(tracer.TracerFallbackWarning):
        got = np.einsum("ij,kj->ik", np.asarray(x), np.asarray(x))
    check(got, numpy.einsum("ij,kj->ik", x, x), 0)


@pytest.mark.parametrize("args, kwargs", [
    (("ij,jk", (2, 2), (3, 4)), {}), (("ii", (2, 3)), {}), (("ij", (3,)), {}),
    (("i->j", (3,)), {}), (("...,...", (2, 3), (4, 3)), {}), (("i,j", (3,)), {}),
    (("i", (3,), (3,)), {}), (("i->ii", (3,)), {}), (("i.->i", (3,)), {}), (("i-i", (3,)), {}),
    (("i1", (3, 3)), {}), (("...i->i", (2, 3)), {}), (("ij", (2, 3)), {"foo": 1}),
    (("i,i", (3,), (3,)), {"dtype": numpy.int64}), (("i,i", (3,), (3,)), {"casting": "bad"}),
])
def test_errors_match_numpy(args, kwargs):
    sub, shapes = args[0], args[1:]
    with pytest.raises(Exception) as want:
        numpy.einsum(sub, *[numpy.ones(s) for s in shapes], **kwargs)
    with pytest.raises(type(want.value)) as got:
        np.einsum(sub, *[np.ones(s) for s in shapes], **kwargs)
    assert str(got.value) == str(want.value)


def _ops(x) -> list[str]:
    return [n.op for n in toposort(tracer.explain(x).graph_after.roots)]


@pytest.mark.lazy
def test_contractions_are_matmuls():
    A, B, C = (np.asarray(data(s, numpy.float64)) for s in [(2, 30), (30, 40), (40, 3)])
    chain = np.einsum("ij,jk,kl->il", A, B, C)
    before = [n.op for n in toposort(tracer.explain(chain).graph_before.roots)]
    assert before.count("matmul") == 2 and "transpose" not in before
    assert sorted(set(_ops(chain))) == ["input", "matmul", "reshape"]
    # transposed operands fold into the dot, no copy
    assert sorted(set(_ops(np.einsum("ji,kj->ik", A.T, B.T)))) == ["input", "matmul", "reshape"]
    batched = _ops(np.einsum("bij,bjk->bik", np.ones((2, 3, 4)), np.ones((2, 4, 5))))
    assert batched.count("matmul") == 1
    rows = tracer.explain(np.einsum("ij,ij->i", A, A))  # rows of dots: one fused kernel
    assert len(rows.kernels) == 1 and "matmul" not in _ops(np.einsum("ij,ij->i", A, A))
