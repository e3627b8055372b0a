"""The euclidean-distance rewriter: sum((a - b)**2, -1) over broadcast point pairs becomes norms
and one GEMM. Traced graphs before and after the pass (values through the interpreter), the
forms it must and must not match, differential tests through the API with the pass on and off,
and a plan past 2**31 elements that allocates nothing big."""
from __future__ import annotations

import re

import numpy
import pytest

import tracer
import tracer.numpy as tnp
from tracer.cuda_kernels.executor import PARALLEL_MIN
from tracer.ir import run_graph, toposort, verify
from tracer.ir.config import context
from tracer.opt.distance import MIN_DIM, euclidean_distance

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph

D = 2 * MIN_DIM  # above the threshold
N, M = 5, 4


def pts(shape, dtype=numpy.float32, seed=0):
    return numpy.random.default_rng(seed).standard_normal(shape).astype(dtype)


def lazy(*hs):
    return [tnp.asarray(h) for h in hs]


def rewritten(expr) -> list:
    roots = [expr._node]
    out = euclidean_distance(roots)
    verify(out)
    return out


def squared_distances(a, b):
    a, b = a.astype(numpy.float64), b.astype(numpy.float64)
    return ((a[..., :, None, :] - b[..., None, :, :]) ** 2).sum(-1)


@pytest.mark.parametrize("spelling", ["pow", "square", "mul", "power", "swapped"])
def test_rewrite_matches_each_spelling(spelling):
    hx, hy = pts((N, D)), pts((M, D), seed=1)
    X, Y = lazy(hx, hy)
    d = X[:, None, :] - Y[None, :, :]
    sq = {"pow": lambda: d ** 2, "square": lambda: tnp.square(d), "mul": lambda: d * d,
          "power": lambda: tnp.power(d, 2.0),
          "swapped": lambda: (Y[None, :, :] - X[:, None, :]) ** 2}[spelling]()
    out = rewritten(sq.sum(-1))
    nodes = toposort(out)
    assert max(n.size for n in nodes) < N * M * D  # no N*M*D tensor, not even as a loop
    (g,) = [n for n in nodes if n.op == "matmul"]
    assert g.shape == (N, M) and out[0].op == "maximum"
    numpy.testing.assert_allclose(run_graph(out)[0], squared_distances(hx, hy), rtol=1e-5)


def test_rewrite_rows_from_either_operand_and_batches():
    hx, hy = pts((2, N, D)), pts((M, D), seed=1)
    X, Y = lazy(hx, hy)
    out = rewritten(((X[:, :, None, :] - Y[None, None, :, :]) ** 2).sum(-1))  # [2, N, M]
    assert max(n.size for n in toposort(out)) < 2 * N * M * D
    numpy.testing.assert_allclose(run_graph(out)[0], squared_distances(hx, hy), rtol=1e-5)
    out = rewritten(((X[0][None, :, :] - Y[:, None, :]) ** 2).sum(2))  # rows are Y: [M, N]
    assert out[0].shape == (M, N)
    numpy.testing.assert_allclose(run_graph(out)[0], squared_distances(hy, hx[0]), rtol=1e-5)


def test_no_rewrite_where_it_does_not_pay_or_is_not_a_distance():
    hx, hy = pts((N, D)), pts((M, D), seed=1)
    X, Y = lazy(hx, hy)
    Xi, Yi = lazy(hx.astype(numpy.int32), hy.astype(numpy.int32))
    Xs, Ys = lazy(hx[:, :MIN_DIM - 1], hy[:, :MIN_DIM - 1])
    Xh, Yh = lazy(hx.astype(numpy.float16), hy.astype(numpy.float16))
    full = tnp.asarray(pts((N, M, D), seed=2))
    for expr in [((Xi[:, None, :] - Yi[None, :, :]) ** 2).sum(-1),  # integers: exact as is
                 ((Xs[:, None, :] - Ys[None, :, :]) ** 2).sum(-1),  # D below the threshold
                 ((Xh[:, None, :] - Yh[None, :, :]) ** 2).sum(-1),  # float16
                 ((X[:, None, :] - Y[None, :, :]) ** 2).sum(1),     # not over the points' axis
                 ((X[:, None, :] - full) ** 2).sum(-1),             # not two point sets
                 ((X[:, None, :] + Y[None, :, :]) ** 2).sum(-1),
                 ((X[:, None, :] - Y[None, :, :]) ** 3).sum(-1)]:
        assert euclidean_distance([expr._node]) == [expr._node]


def _forms(m, X, Y):
    d = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    return [d, m.sqrt(d), d.min(1), m.sqrt(d).min(0), ((Y[None] - X[:, None]) ** 2).mean(-1)]


@pytest.mark.parametrize("dim", [MIN_DIM - 1, MIN_DIM, 4 * MIN_DIM])
@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("on", [True, False])
def test_api_agrees_with_numpy_with_the_pass_on_and_off(dim, dtype, on):
    hx, hy = pts((6, dim), dtype), pts((7, dim), dtype, seed=1)
    with context(disable_passes=set() if on else {"euclidean_distance"}):
        got = _forms(tnp, *lazy(hx, hy))
        plan = tracer.explain(*got)
        tracer.evaluate(*got)
    assert any(n.op == "matmul" for n in toposort(plan.graph_after.roots)) == \
        (on and dim >= MIN_DIM)
    want = _forms(numpy, hx.astype(numpy.float64), hy.astype(numpy.float64))
    for g, w in zip(got, want):
        g = numpy.asarray(g)
        assert g.dtype == dtype and g.shape == w.shape
        numpy.testing.assert_allclose(g, w, rtol=2e-5 if dtype == numpy.float32 else 1e-12)


def test_identical_points_give_zero_not_nan_under_sqrt():
    h = pts((6, D)) * 1e3  # cancellation: |a|^2 + |a|^2 - 2 a.a may round below zero
    X = tnp.asarray(h)
    got = numpy.asarray(tnp.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)))
    assert not numpy.isnan(got).any()
    assert numpy.all(numpy.diag(got) < 1e-3 * numpy.abs(got).max())


def test_past_two_to_the_31_elements_plans_no_big_buffer_and_no_int32_index():
    """N*M = 2.5e9 > 2**31 (jax.jit returned wrong values at 1.6e9): planned without
    allocating; the kernels it leads to are run on small inputs of the same structure (sizes
    are arguments, so they are the same kernels) and checked for 32-bit integers."""
    big, dim = 50_000, 64
    small = PARALLEL_MIN // dim + 1  # big enough for the parallel kernels the big plan uses
    forms = lambda X, Y: [((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1).min(1)]  # noqa: E731
    hx, hy = pts((small, dim)), pts((small, dim), seed=1)
    got = forms(*lazy(hx, hy))[0]
    h64, g64 = hx.astype(numpy.float64), hy.astype(numpy.float64)
    want = ((h64 ** 2).sum(1)[:, None] + (g64 ** 2).sum(1)[None, :] - 2 * h64 @ g64.T).min(1)
    numpy.testing.assert_allclose(numpy.asarray(got), want, rtol=1e-5)
    X, Y = lazy(pts((big, dim)), pts((big, dim), seed=1))
    plan = tracer.explain(*forms(X, Y))
    nodes = toposort(plan.graph_after.roots)
    assert max(n.size for n in nodes) == big * big  # the GEMM result, never N*M*D
    assert plan.peak_bytes == 4 * (big * big + 2 * big)
    assert all(n.dtype.itemsize == 8 or n.dtype.kind == "f" for n in nodes)
    assert len(plan.kernels) == 3
    for k in plan.kernels:
        assert k.fn.signatures, "same structure as the small run: already compiled"
        for sig, cres in k.fn.overloads.items():
            assert all(str(t) != "int32" for t in sig)
            # every variable, index and size as numba typed it ("name :: type" lines)
            types = set(re.findall(r":: (.+)$", str(cres.type_annotation), re.M))
            assert "int64" in types and not [t for t in types if re.search(r"int(8|16|32)", t)]
