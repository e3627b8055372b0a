"""tracer.numpy.linalg against numpy.linalg: values, dtypes, shapes, result types, errors;
the lazy functions record without evaluating, the others evaluate and return lazy arrays."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir import toposort

RNG = numpy.random.default_rng(0)
M = RNG.standard_normal((3, 4))
S = RNG.standard_normal((3, 3)) + 3 * numpy.eye(3)   # well conditioned
SPD = S @ S.T
STACK = RNG.standard_normal((2, 3, 3)) + 3 * numpy.eye(3)
INF = numpy.inf


def check(got, want, rtol=1e-12):
    if isinstance(want, tuple):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w, rtol)
        return
    if not isinstance(want, (numpy.ndarray, numpy.generic)):
        assert got == want
        return
    assert isinstance(got, np.ndarray)
    g = numpy.asarray(got)
    assert g.dtype == want.dtype and g.shape == want.shape
    numpy.testing.assert_allclose(g, want, rtol=rtol, atol=rtol)


# (ord, axis, keepdims) NumPy computes without singular values
NORMS = [(None, None, False), (None, None, True), ("fro", None, False), (1, None, True),
         (-1, None, False), (INF, None, False), (-INF, None, False)]
NORMS += [(o, ax, k) for o in (None, 0, 1, 2, 3, -1, 0.5, INF, -INF)
          for ax, k in ((0, False), (-1, True))]
NORMS += [(o, (1, 0), k) for o in (None, "fro", 1, -1, INF, -INF) for k in (False, True)]


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32, numpy.int64])
def test_norm_matches_numpy(dtype):
    x = (M * 3).astype(dtype)
    a = np.asarray(x)
    before = tracer.stats().evaluations
    got = [np.linalg.norm(a, o, ax, k) for o, ax, k in NORMS]
    got += [np.linalg.norm(a[0]), np.linalg.norm(a[0], 2), np.linalg.norm(a[0], 3, keepdims=True),
            np.linalg.norm(np.asarray(x[None]), axis=(0, 2)), np.linalg.vector_norm(a),
            np.linalg.vector_norm(a, axis=(1, 0), ord=3, keepdims=True),
            np.linalg.matrix_norm(a, ord=INF, keepdims=True)]
    assert tracer.stats().evaluations == before
    want = [numpy.linalg.norm(x, o, ax, k) for o, ax, k in NORMS]
    want += [numpy.linalg.norm(x[0]), numpy.linalg.norm(x[0], 2),
             numpy.linalg.norm(x[0], 3, keepdims=True), numpy.linalg.norm(x[None], axis=(0, 2)),
             numpy.linalg.vector_norm(x), numpy.linalg.vector_norm(x, axis=(1, 0), ord=3,
                                                                  keepdims=True),
             numpy.linalg.matrix_norm(x, ord=INF, keepdims=True)]
    tracer.evaluate(*got)
    with numpy.errstate(divide="ignore"):
        for g, w in zip(got, want):
            check(g, numpy.asarray(w), 1e-5 if dtype == numpy.float32 else 1e-12)


def test_norm_singular_values_and_complex_evaluate():
    c = M + 1j * M[::-1]
    for x, args in [(M, ("nuc",)), (M, (2,)), (M, (-2,)), (STACK, (2, (1, 2), True)),
                    (STACK, ("nuc", (2, 0))), (c, ()), (c, ("fro",)), (c[0], (None, 0)),
                    (c, (INF,)), (c, (1, 1))]:
        check(np.linalg.norm(np.asarray(x), *args), numpy.asarray(numpy.linalg.norm(x, *args)))


@pytest.mark.parametrize("args", [
    ("fro", 0), ("nuc", 1), ("bad", (0, 1)), (3, (0, 1)), (None, (0, 0)), (None, (0, 1, 2)),
    (None, [0, 1]), (None, 5), (1, None, False, "3d"),
])
def test_norm_errors_match_numpy(args):
    x = STACK if args[-1] == "3d" else M
    args = args[:3]
    with pytest.raises(Exception) as want:
        numpy.linalg.norm(x, *args)
    with pytest.raises(type(want.value)) as got:
        np.linalg.norm(np.asarray(x), *args)
    assert str(got.value) == str(want.value)


def _ops(x) -> list[str]:
    return [n.op for n in toposort(tracer.explain(x).graph_after.roots)]


@pytest.mark.lazy
def test_multi_dot():
    mats = [RNG.standard_normal(s) for s in [(4, 2), (2, 5), (5, 3), (3, 6)]]
    v, w = RNG.standard_normal(4), RNG.standard_normal(6)
    lazy = [np.asarray(m) for m in mats]
    before = tracer.stats().evaluations
    got = [np.linalg.multi_dot(lazy[:2]), np.linalg.multi_dot(lazy[:3]),
           np.linalg.multi_dot(lazy), np.linalg.multi_dot([np.asarray(v)] + lazy),
           np.linalg.multi_dot(lazy + [np.asarray(w)]),
           np.linalg.multi_dot([np.asarray(v)] + lazy + [np.asarray(w)])]
    assert tracer.stats().evaluations == before
    assert set(_ops(got[2])) == {"input", "matmul", "reshape"}
    want = [numpy.linalg.multi_dot(mats[:2]), numpy.linalg.multi_dot(mats[:3]),
            numpy.linalg.multi_dot(mats), numpy.linalg.multi_dot([v] + mats),
            numpy.linalg.multi_dot(mats + [w]),
            numpy.asarray(numpy.linalg.multi_dot([v] + mats + [w]))]
    for g, wt in zip(got, want):
        check(g, wt)
    out, host = np.zeros((4, 6)), numpy.zeros((4, 6))
    assert np.linalg.multi_dot(lazy, out=out) is out
    with pytest.warns(tracer.TracerFallbackWarning):
        assert np.linalg.multi_dot(lazy, out=host) is host
    check(out, want[2])
    numpy.testing.assert_allclose(host, want[2], rtol=1e-12)
    for bad in ([lazy[0]], [lazy[0], lazy[1], np.ones((5, 3, 1))]):
        with pytest.raises(Exception) as want_e:
            numpy.linalg.multi_dot([numpy.asarray(b) for b in bad])
        with pytest.raises(type(want_e.value), match=str(want_e.value)):
            np.linalg.multi_dot(bad)


def test_matrix_power():
    ints = (S * 2).astype(numpy.int64)
    before = tracer.stats().evaluations
    cases = [(x, n) for x in (S, ints, STACK) for n in (0, 1, 2, 3, 6, 13)]
    got = [np.linalg.matrix_power(np.asarray(x), n) for x, n in cases]
    assert tracer.stats().evaluations == before
    for g, (x, n) in zip(got, cases):
        check(g, numpy.linalg.matrix_power(x, n), 1e-10)
    for n in (-1, -3):  # negative powers invert first (evaluates)
        check(np.linalg.matrix_power(np.asarray(S), n), numpy.linalg.matrix_power(S, n), 1e-10)
    a = np.asarray(S)
    assert np.linalg.matrix_power(a, 1) is a
    for x, n, exc in [(M, 2, numpy.linalg.LinAlgError), (M[0], 2, numpy.linalg.LinAlgError),
                      (S, 1.5, TypeError)]:
        with pytest.raises(exc) as want:
            numpy.linalg.matrix_power(x, n)
        with pytest.raises(exc, match=str(want.value)):
            np.linalg.matrix_power(np.asarray(x), n)


EVALUATING = [
    ("inv", (S,), {}), ("inv", (STACK,), {}), ("solve", (S, M), {}), ("det", (S,), {}),
    ("det", (STACK,), {}), ("slogdet", (S,), {}), ("eig", (S,), {}), ("eigh", (SPD,), {}),
    ("eigvals", (S,), {}), ("eigvalsh", (SPD,), {"UPLO": "U"}), ("svd", (M,), {}),
    ("svd", (M,), {"compute_uv": False}), ("svdvals", (STACK,), {}), ("qr", (M,), {}),
    ("qr", (M,), {"mode": "r"}), ("cholesky", (SPD,), {}), ("cholesky", (SPD,), {"upper": True}),
    ("lstsq", (M.T, M[0]), {"rcond": None}), ("pinv", (M,), {}), ("matrix_rank", (M,), {}),
    ("cond", (S,), {}), ("cond", (S, "fro"), {}), ("tensorinv", (numpy.eye(4).reshape(4, 2, 2),),
                                                  {"ind": 1}),
    ("tensorsolve", (numpy.eye(6).reshape(6, 2, 3), numpy.arange(6.0)), {}),
]


@pytest.mark.parametrize("name, args, kwargs", EVALUATING)
def test_evaluating_functions_match_numpy(name, args, kwargs):
    want = getattr(numpy.linalg, name)(*args, **kwargs)
    # pending arrays, evaluated together
    lazy = [np.asarray(a) * 1 if isinstance(a, numpy.ndarray) else a for a in args]
    got = getattr(np.linalg, name)(*lazy, **kwargs)
    if isinstance(want, tuple):  # NumPy scalars come back as 0-d lazy arrays
        items = [numpy.asarray(w) if isinstance(w, numpy.generic) else w for w in want]
        want = type(want)(*items) if hasattr(want, "_fields") else tuple(items)
    elif not isinstance(want, numpy.ndarray):
        want = numpy.asarray(want)
    check(got, want, 0)


def test_linalg_errors_and_fallbacks():
    assert np.linalg.LinAlgError is numpy.linalg.LinAlgError
    with pytest.raises(numpy.linalg.LinAlgError, match="Singular matrix"):
        np.linalg.inv(np.zeros((2, 2)))
    before = tracer.stats().fallbacks
    got = np.linalg.cross(np.asarray(M[:, :3]), np.asarray(S))  # lazy since issue 22
    assert tracer.stats().fallbacks == before
    check(got, numpy.linalg.cross(M[:, :3], S))


def test_array_api_functions():
    a, s = np.asarray(M), np.asarray(STACK)
    before = tracer.stats().evaluations
    got = [np.linalg.matmul(a, a.T), np.linalg.tensordot(a, a, axes=([1], [1])),
           np.linalg.outer(a[0], a[1]), np.linalg.diagonal(s, offset=1), np.linalg.trace(s),
           np.linalg.trace(s, offset=-1, dtype=numpy.float32), np.linalg.matrix_transpose(s)]
    assert tracer.stats().evaluations == before
    want = [numpy.linalg.matmul(M, M.T), numpy.linalg.tensordot(M, M, axes=([1], [1])),
            numpy.linalg.outer(M[0], M[1]), numpy.linalg.diagonal(STACK, offset=1),
            numpy.linalg.trace(STACK), numpy.linalg.trace(STACK, offset=-1, dtype=numpy.float32),
            numpy.linalg.matrix_transpose(STACK)]
    for g, w in zip(got, want):
        check(g, w, 1e-6)
    for fn in (lambda m: m.linalg.outer(m.asarray(M), m.asarray(M[0])),
               lambda m: m.linalg.matrix_transpose(m.asarray(M[0]))):
        with pytest.raises(ValueError) as want_e:
            fn(numpy)
        with pytest.raises(ValueError) as got_e:
            fn(np)
        assert str(got_e.value) == str(want_e.value)
