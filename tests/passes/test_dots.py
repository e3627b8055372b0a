"""Dots: matrix-chain reordering, the dot decomposer and the dot merger.

Hand-built graphs before and after each pass (values through the interpreter, which runs the
same np.matmul the backends run), the cuda matmul kernel's transpose flags under the simulator,
and differential tests through the API with each pass on and off.
"""
from __future__ import annotations

import numpy
import pytest

import tracer.opt.dots as dots
import tracer
import tracer.numpy as tnp
from tracer.ir import run_graph, toposort, verify
from tracer.ir.config import context
from tracer.opt.dots import Factor, best_order, dot_decompose, dot_merge, matrix_chain
from tracer import graph as G

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph

DOT_PASSES = ("matrix_chain", "dot_decompose", "dot_merge")


def arr(shape, dtype=numpy.float64, seed=0):
    rng = numpy.random.default_rng(seed)
    dtype = numpy.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        return rng.integers(-4 if dtype.kind == "i" else 0, 5, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def leaf(shape, dtype=numpy.float64, seed=0):
    return G.leaf(arr(shape, dtype, seed))


def mm(a, b):
    """matmul as the tracer records it: vectors as [1, K] / [K, 1], the result reshaped back."""
    an = G.reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    bn = G.reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    out = G.matmul(an, bn)
    shape = out.shape
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    return G.reshape(out, shape)


def T(x):
    return G.transpose(x, tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def dots_of(roots):
    return [n for n in toposort(roots) if n.op == "matmul"]


def same_values(before, after, exact=False):
    verify(after)
    for b, a in zip(run_graph(before), run_graph(after)):
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
        if exact or b.dtype.kind in "biu":
            numpy.testing.assert_array_equal(a, b)
        else:
            numpy.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- matrix chains

def test_chain_matrix_matrix_vector_becomes_two_matrix_vector_products():
    n = 6
    A, B, v = leaf((n, n)), leaf((n, n), seed=1), leaf((n,), seed=2)
    root = mm(mm(A, B), v)
    out = matrix_chain([root])
    assert [d.shape for d in dots_of(out)] == [(n, 1), (n, 1)]  # no n*n intermediate
    same_values([root], out)


def test_chain_optimal_or_shared_intermediates_stay():
    n = 5
    A, B, v = leaf((n, n)), leaf((n, n), seed=1), leaf((n,), seed=2)
    good = mm(A, mm(B, v))
    assert matrix_chain([good]) == [good]
    ab = mm(A, B)  # A@B is also a result: reordering would compute it twice
    shared = [mm(ab, v), ab]
    assert matrix_chain(shared) == shared
    twice = G.elementwise("add", (mm(ab, v), mm(ab, G.elementwise("negative", (v,)))))
    assert matrix_chain([twice]) == [twice]


def test_chain_picks_the_cheapest_of_three_rectangular_factors():
    A, B, C = leaf((10, 100)), leaf((100, 5), seed=1), leaf((5, 50), seed=2)
    root = mm(A, mm(B, C))  # 75000 multiply-adds; (A@B)@C needs 7500
    out = matrix_chain([root])
    assert [d.shape for d in dots_of(out)] == [(10, 5), (10, 50)]
    same_values([root], out)


def test_chain_through_transposes():
    n = 5
    A, B, v = leaf((n, n)), leaf((n, n), seed=1), leaf((n,), seed=2)
    root = mm(T(mm(A, B)), v)  # (A@B)^T @ v = B^T @ (A^T @ v)
    out = matrix_chain([root])
    assert [d.shape for d in dots_of(out)] == [(n, 1), (n, 1)]
    same_values([root], out)


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.int64])
@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1)])
def test_chain_sum_of_a_product_sums_a_factor_first(axes, dtype):
    A, B = leaf((6, 4), dtype), leaf((4, 7), dtype, seed=1)
    root = G.reduce("reduce_sum", mm(A, B), axes)
    out = matrix_chain([root])
    # sum(A@B, 0) = sum(A, 0) @ B; sum(A@B, 1) = A @ sum(B, 1): no 6x7 product
    assert all(1 in d.shape for d in dots_of(out))
    reds = [n for n in toposort(out) if n.op == "reduce_sum"]
    assert {r.inputs[0].shape for r in reds} <= {(6, 4), (4, 7), (6, 1), (1, 7)}
    same_values([root], out)


def test_chain_of_four_with_vector_ends_and_a_sum():
    w, A, B, C, v = (leaf(s, seed=k) for k, s in enumerate([(4,), (4, 8), (8, 8), (8, 3), (3,)]))
    root = mm(mm(mm(mm(w, A), B), C), v)
    assert matrix_chain([root]) == [root]  # already left to right over vectors
    root2 = mm(w, mm(mm(A, B), mm(C, v)))
    out = matrix_chain([root2])
    assert all(1 in d.shape for d in dots_of(out))
    same_values([root2], out)
    root3 = G.reduce("reduce_sum", mm(mm(A, B), C), (0,))  # a sum is a row of ones
    out3 = matrix_chain([root3])
    assert all(1 in d.shape for d in dots_of(out3))
    same_values([root3], out3)


def test_chain_batched_broadcast():
    A, B, v = leaf((2, 5, 5)), leaf((5, 5), seed=1), leaf((5,), seed=2)
    root = mm(mm(A, B), v)
    out = matrix_chain([root])
    assert all(d.shape[-1] == 1 for d in dots_of(out))
    same_values([root], out)


def test_chain_integer_products_stay_exact():
    big = numpy.int64(1) << 40
    A = G.leaf(numpy.full((3, 3), big, numpy.int64))  # products wrap around
    B, v = leaf((3, 3), numpy.int64, 1), leaf((3,), numpy.int64, 2)
    root = mm(mm(A, B), v)
    out = matrix_chain([root])
    assert out != [root]
    same_values([root], out, exact=True)


def test_best_order_textbook_example():
    dims = [30, 35, 15, 5, 10, 20, 25]  # CLRS 15.2: 15125 scalar multiplications
    fs = [Factor(None, False, r, c, ()) for r, c in zip(dims, dims[1:])]
    (flops, _mem), split = best_order(fs)
    assert flops == 15125
    assert split[0, 5] == 2  # ((A1 (A2 A3)) ((A4 A5) A6))


# ---------------------------------------------------------------- decomposer

def test_decompose_folds_transposes_into_flags():
    A, B = leaf((4, 3)), leaf((5, 4), seed=1)
    root = G.matmul(T(A), T(B))  # [3,4] @ [4,5]
    out = dot_decompose([root])
    (d,) = dots_of(out)
    assert d.attr("ta") and d.attr("tb")
    assert [i.shape for i in d.inputs] == [(1, 4, 3), (1, 5, 4)]
    assert not any(n.op == "transpose" for n in toposort(out))
    same_values([root], out)
    assert dot_decompose(out) == out  # canonical dots stay


def test_decompose_result_transpose_swaps_the_operands():
    A, B = leaf((3, 4)), leaf((4, 5), seed=1)
    root = T(G.matmul(A, B))  # (A@B)^T = B^T @ A^T, read in place
    out = dot_decompose([root])
    (d,) = dots_of(out)
    assert d.attr("ta") and d.attr("tb") and d.shape == (1, 5, 3)
    assert not any(n.op == "transpose" for n in toposort(out))
    same_values([root], out)


@pytest.mark.parametrize("sa, sb, dots_shape", [
    ((4,), (4,), (1, 1, 1)),
    ((3, 4), (4,), (1, 3, 1)),
    ((4,), (2, 4, 5), (2, 1, 5)),
    ((2, 3, 4), (4, 5), (1, 6, 5)),       # shared rhs: the batch folds into the rows
    ((4, 5), (2, 3, 5, 6), (6, 4, 6)),    # shared lhs: batch of 6
    ((2, 1, 3, 4), (3, 4, 2), (6, 3, 2)),  # partial broadcast: made explicit
])
def test_decompose_canonical_batched_form(sa, sb, dots_shape):
    root = mm(leaf(sa), leaf(sb, seed=1))
    out = dot_decompose([root])
    (d,) = dots_of(out)
    assert d.shape == dots_shape and all(i.ndim == 3 for i in d.inputs)
    assert all(i.shape[0] in (1, dots_shape[0]) for i in d.inputs)
    assert any(n.op == "broadcast_to" for n in toposort(out)) == (sa == (2, 1, 3, 4))
    same_values([root], out)


@pytest.mark.parametrize("da, db", [
    ("bool", "bool"), ("int8", "int8"), ("int8", "uint8"), ("uint16", "uint16"),
    ("int32", "int64"), ("float32", "float32"), ("float32", "int16"), ("float64", "float64"),
    ("complex64", "complex64"), ("float16", "float16"),
])
def test_decompose_dtypes_match_numpy_exactly(da, db):
    a, b = arr((2, 4, 3), da), arr((5, 4), db, seed=1)
    root = G.matmul(T(G.leaf(a)), T(G.leaf(b)))
    out = dot_decompose([root])
    (got,) = run_graph(out)
    want = numpy.matmul(numpy.swapaxes(a, -1, -2), b.T)
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- merger

def _canon(*roots):
    return dot_decompose(list(roots))


def test_merge_dots_sharing_the_lhs():
    X, W1, W2 = leaf((4, 3)), leaf((3, 2), seed=1), leaf((3, 5), seed=2)
    before = _canon(G.matmul(X, W1), G.matmul(X, W2))
    out = dot_merge(before)
    (d,) = dots_of(out)
    assert d.shape == (1, 4, 7)
    cat = d.inputs[1]
    assert cat.op == "concatenate" and cat.attr("axis") == 2
    assert sum(n.op == "slice" for n in toposort(out)) == 2
    same_values(before, out)


def test_merge_dots_sharing_the_rhs_with_transposed_operands():
    A1, A2, W = leaf((3, 2)), leaf((3, 4), seed=1), leaf((3, 5), seed=2)
    before = _canon(G.matmul(T(A1), W), G.matmul(T(A2), W))  # ta: rows on axis 2
    out = dot_merge(before)
    (d,) = dots_of(out)
    assert d.attr("ta") and d.shape == (1, 6, 5)
    assert d.inputs[0].attr("axis") == 2
    same_values(before, out)


def test_merge_skips_dependent_mixed_and_big_dots(monkeypatch):
    X, W1, W2 = leaf((4, 4)), leaf((4, 4), seed=1), leaf((4, 4), seed=2)
    d1 = G.matmul(X, W1)
    dependent = _canon(d1, G.matmul(X, G.elementwise("add", (d1, W2))))
    assert dot_merge(dependent) == dependent
    mixed = _canon(G.matmul(X, W1), G.matmul(X, T(W2)))  # tb differs
    assert dot_merge(mixed) == mixed
    pair = _canon(G.matmul(X, W1), G.matmul(X, W2))
    monkeypatch.setattr(dots, "DOT_MERGE_MAX_BYTES", W1.nbytes)  # both together would pass it
    assert dot_merge(pair) == pair


# ---------------------------------------------------------------- cuda kernel flags

@pytest.mark.cuda
def test_cuda_matmul_reads_transposed_operands_in_place():
    from tracer.cuda_kernels import backends
    with context(backend="cuda", cuda_sim=True):
        be = backends.get("cuda")
        for dt, ta, tb, (ba, bb) in [("float32", 1, 0, (1, 1)), ("float64", 0, 1, (2, 1)),
                                     ("int32", 1, 1, (1, 2)), ("bool", 1, 1, (2, 2))]:
            M, K, N = 5, 18, 3
            a = arr((ba,) + ((K, M) if ta else (M, K)), dt)
            b = arr((bb,) + ((N, K) if tb else (K, N)), dt, seed=1)
            node = dots.dot(G.leaf(a), G.leaf(b), bool(ta), bool(tb))
            got = be.to_host(be.run_node(node, [a, b]))
            want = numpy.matmul(a.swapaxes(-1, -2) if ta else a, b.swapaxes(-1, -2) if tb else b)
            assert got.dtype == want.dtype and got.shape == want.shape
            numpy.testing.assert_allclose(got, want, rtol=1e-6)


# ---------------------------------------------------------------- through the API

def _forms(m, A, B, C, v, w):
    return [(A @ B) @ v, w @ (A @ B), ((A @ B) @ C) @ v, (A @ B).T @ v, (A @ B).sum(0),
            (A @ B @ C).sum(1), (A @ B).sum(), (A @ B).sum(0) @ C, A.T @ B.T, v @ v,
            (A @ B) * 2 + (A @ C), (B.T @ A.T) * (C.T @ A.T), m.dot(A, v)]


@pytest.mark.parametrize("dtype", [numpy.float64, numpy.float32, numpy.int64, numpy.bool_])
@pytest.mark.parametrize("off", [(), *[(p,) for p in DOT_PASSES]])
def test_api_agrees_with_numpy_with_each_pass_on_and_off(dtype, off):
    host = [arr((5, 5), dtype, k) for k in range(3)] + [arr((5,), dtype, k) for k in (3, 4)]
    want = _forms(numpy, *host)
    if dtype is numpy.bool_:  # no sums or arithmetic on bool products
        want = [want[k] for k in (0, 1, 2, 3, 8, 9, 12)]
    with context(disable_passes=set(off)):
        got = _forms(tnp, *(tnp.asarray(h) for h in host))
        got = [got[k] for k in (0, 1, 2, 3, 8, 9, 12)] if dtype is numpy.bool_ else got
        tracer.evaluate(*got)
    for g, w in zip(got, want):
        g, w = numpy.asarray(g), numpy.asarray(w)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        if w.dtype.kind == "f":
            numpy.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
        else:
            numpy.testing.assert_array_equal(g, w)


def test_api_batched_and_transposed_operands():
    ha, hb, hv = arr((2, 3, 4, 5)), arr((3, 6, 5), seed=1), arr((6,), seed=2)
    a, b, v = tnp.asarray(ha), tnp.asarray(hb), tnp.asarray(hv)
    got = [a @ tnp.swapaxes(b, -1, -2), (a @ tnp.swapaxes(b, -1, -2)) @ v,
           tnp.swapaxes(a @ tnp.swapaxes(b, -1, -2), -1, -2)]
    want = [ha @ numpy.swapaxes(hb, -1, -2), (ha @ numpy.swapaxes(hb, -1, -2)) @ hv,
            numpy.swapaxes(ha @ numpy.swapaxes(hb, -1, -2), -1, -2)]
    for g, w in zip(got, want):
        assert g.shape == w.shape
        numpy.testing.assert_allclose(numpy.asarray(g), w, rtol=1e-10)


def test_explain_matrix_vector_chain_plans_no_square_intermediate():
    n = 64
    A, B = tnp.asarray(arr((n, n), numpy.float32)), tnp.asarray(arr((n, n), numpy.float32, 1))
    v = tnp.asarray(arr((n,), numpy.float32, 2))
    plan = tracer.explain((A @ B) @ v)
    assert [d.shape for d in dots_of(plan.graph_after.roots)] == [(1, n, 1), (1, n, 1)]
    assert plan.peak_bytes <= 4 * n  # one n-vector, never the n*n product
    with context(disable_passes={"matrix_chain"}):
        assert tracer.explain((A @ B) @ v).peak_bytes >= 4 * n * n
