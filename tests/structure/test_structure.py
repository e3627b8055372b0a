"""Structure tests: kernel counts and planned bytes, no device and no timing needed."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np

pytestmark = pytest.mark.lazy  # kernel and node counts of recorded graphs


def _arrays(*shapes, dtype=numpy.float32):
    rng = numpy.random.default_rng(1)
    hosts = [rng.random(s).astype(dtype) for s in shapes]
    return hosts, [np.asarray(h) for h in hosts]


def fusions(plan) -> int:
    return sum(1 for line in str(plan.graph_after).splitlines() if "= fusion" in line and
               not line.startswith(" "))


def test_a_times_b_plus_c_is_one_kernel():
    _, (a, b, c) = _arrays((1000,), (1000,), (1000,))
    plan = tracer.explain(a * b + c)
    assert len(plan.kernels) == 1
    assert plan.peak_bytes == 0  # no intermediate buffer


def test_squared_distance_row_sum_is_one_kernel():
    (ha, hb), (a, b) = _arrays((50, 8), (50, 8))
    expr = ((a - b) ** 2).sum(axis=1)
    plan = tracer.explain(expr)
    assert len(plan.kernels) == 1
    assert plan.kernels[0].kind == "reduce"
    numpy.testing.assert_allclose(numpy.asarray(expr), ((ha - hb) ** 2).sum(axis=1), rtol=1e-6)


def test_broadcast_outer_difference_fuses_into_reduction():
    (hx, hy), (x, y) = _arrays((20, 4), (30, 4))
    expr = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    plan = tracer.explain(expr)
    assert len(plan.kernels) == 1
    assert plan.peak_bytes == 0  # the 20x30x4 difference is never materialized
    ref = ((hx[:, None, :] - hy[None, :, :]) ** 2).sum(-1)
    numpy.testing.assert_allclose(numpy.asarray(expr), ref, rtol=1e-5)


def test_reduction_epilogue_fuses():
    (ha,), (a,) = _arrays((40, 6))
    expr = np.sqrt(a.sum(axis=1) * 2.0 + 1.0)
    assert len(tracer.explain(expr).kernels) == 1
    numpy.testing.assert_allclose(numpy.asarray(expr), numpy.sqrt(ha.sum(axis=1) * 2 + 1),
                                  rtol=1e-6)


def test_transpose_is_an_index_remap():
    (ha, hb), (a, b) = _arrays((7, 5), (5, 7))
    expr = a.T * b + 1
    assert len(tracer.explain(expr).kernels) == 1
    numpy.testing.assert_allclose(numpy.asarray(expr), ha.T * hb + 1, rtol=1e-6)


def test_softmax_materializes_only_the_row_reductions():
    (ha,), (a,) = _arrays((16, 32))
    m = a.max(axis=1, keepdims=True)
    e = np.exp(a - m)
    sm = e / e.sum(axis=1, keepdims=True)
    plan = tracer.explain(sm)
    # max, exp-then-sum, and the normalizing loop: three kernels, none of size 16x32 kept
    # besides what the second pass needs
    assert len(plan.kernels) <= 4
    he = numpy.exp(ha - ha.max(axis=1, keepdims=True))
    numpy.testing.assert_allclose(numpy.asarray(sm), he / he.sum(axis=1, keepdims=True),
                                  rtol=1e-6)


def test_shared_subexpression_computed_once():
    (ha,), (a,) = _arrays((100,))
    t = np.exp(a)
    expr = t * 2 + t * 3
    plan = tracer.explain(expr)
    assert len(plan.kernels) == 1  # exp(a) is one node (interned), fused once
    assert str(plan.graph_after).count("= exp") == 1


def test_kernel_shared_across_sizes():
    _, (a, b) = _arrays((64,), (64,))
    tracer.evaluate(a * b - 3.0)
    before = tracer.stats().kernels_compiled
    hits = tracer.stats().cache_hits_memory
    _, (c, d) = _arrays((65,), (65,))
    tracer.evaluate(c * d - 5.0)  # new size, new constant: same kernel
    assert tracer.stats().kernels_compiled == before
    assert tracer.stats().cache_hits_memory == hits + 1


def test_evaluated_arrays_become_leaves():
    _, (a,) = _arrays((10,))
    b = a * 2
    tracer.evaluate(b)
    assert b._var.node.op == "input"
    c = b + 1
    assert len(tracer.explain(c).kernels) == 1
    assert "multiply" not in str(tracer.explain(c).graph_before)


def test_explain_shows_passes_groups_and_source():
    x = np.arange(10.0)
    plan = tracer.explain((x * 2 + 1).sum())
    text = str(plan)
    from tracer.opt.pipeline import PIPELINE
    assert [p[0] for p in plan.passes] == [name for name, _, _ in PIPELINE]
    assert {"simplify", "constant_folding", "cse", "dce", "fusion"} <= {p[0] for p in plan.passes}
    assert "fusion" in text and "def reduce_sum_mul_add_f64_" in text and "== passes" in text
    assert plan.kernels[0].backend == "cpu"


def test_disable_fusion_pass_runs_interpreter_free_ops_unfused():
    _, (a, b, c) = _arrays((100,), (100,), (100,))
    with tracer.context(disable_passes={"fusion"}):
        plan = tracer.explain(a * b + c)
        assert len(plan.kernels) == 0
        assert ("fusion", 0.0, False) in plan.passes


@pytest.mark.parametrize("n", [10, 100_000])
def test_planned_peak_counts_materialized_intermediates(n):
    _, (a,) = _arrays((n,))
    m = a.max()
    expr = np.exp(a - m)  # max must be materialized (it is broadcast): a 0-d buffer
    plan = tracer.explain(expr)
    assert plan.peak_bytes == 4
