"""Horizontal fusion: independent small loop kernels run as one kernel (one launch), on the cpu
backend and under the CUDA simulator (its PTX: tests/backends/cuda/test_cuda_ptx.py)."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir.config import context
from tracer.ir.verifier import verify
from tracer.opt.fusion import fusion
from tracer.opt.horizontal import SMALL, horizontal_fusion

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph


def _three(xp, a, b):
    """Three independent results of three shapes: an optimizer-step-like update."""
    return a * 0.9 + 1, xp.sqrt(b * b + 1), (a[:7] - 2).astype(xp.int32)


def _inputs(rng):
    return rng.standard_normal(40).astype(numpy.float32), \
        rng.standard_normal((6, 5)).astype(numpy.float64)


def _check(got, want):
    for g, w in zip(got, want):
        g = numpy.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        numpy.testing.assert_allclose(g, w, rtol=1e-6)


def test_independent_small_loops_are_one_kernel(rng):
    ha, hb = _inputs(rng)
    a, b = np.asarray(ha), np.asarray(hb)
    plan = tracer.explain(*_three(np, a, b))
    assert [k.kind for k in plan.kernels] == ["horizontal"]
    _check(tracer.evaluate(*_three(np, a, b)), _three(numpy, ha, hb))
    with context(disable_passes={"horizontal_fusion"}):
        assert len(tracer.explain(*_three(np, a, b)).kernels) == 3
        _check(tracer.evaluate(*_three(np, a, b)), _three(numpy, ha, hb))


def test_same_shape_independent_loops_become_one_loop(rng):
    ha, hb = rng.standard_normal((2, 30)).astype(numpy.float32)
    a, b = np.asarray(ha), np.asarray(hb)
    (k,) = tracer.explain(a * 2, np.exp(b)).kernels
    assert k.kind == "loop"
    _check(tracer.evaluate(a * 2, np.exp(b)), (ha * 2, numpy.exp(hb)))


def test_dependent_kernels_stay_apart(rng):
    """y reads x through a matmul (not a fusion): one launch cannot hold both."""
    h = rng.standard_normal((8, 8)).astype(numpy.float32)
    x = np.asarray(h) * 2
    y = (x @ x) + 1
    assert len(tracer.explain(x, y).kernels) == 2
    _check(tracer.evaluate(x, y), (h * 2, (h * 2) @ (h * 2) + 1))


def test_large_kernels_are_not_merged(rng):
    big = numpy.ones(SMALL + 1, numpy.float32)
    small = numpy.ones(10, numpy.float32)
    assert len(tracer.explain(np.asarray(big) + 1, np.asarray(small) * 3).kernels) == 2


def test_reductions_are_not_merged(rng):
    h = rng.standard_normal((6, 5)).astype(numpy.float32)
    x = np.asarray(h)
    kinds = sorted(k.kind for k in tracer.explain(x.sum(0), x[:3] * 2).kernels)
    assert kinds == ["loop", "reduce"]


def test_hand_built_graph_before_and_after():
    from tracer import graph as G
    a = G.leaf(numpy.ones(5, numpy.float32))
    b = G.leaf(numpy.ones((2, 3), numpy.int64))
    before = fusion([G.elementwise("exp", (a,)), G.elementwise("multiply", (b, b))])
    assert [n.op for n in before] == ["fusion", "fusion"]
    after = horizontal_fusion(before)
    verify(after)
    assert [n.op for n in after] == ["output", "output"]
    assert after[0].inputs[0] is after[1].inputs[0]
    assert [n.attr("index") for n in after] == [0, 1]
    f = after[0].inputs[0]
    assert f.attr("kind") == "horizontal"
    assert [(o.op, o.shape) for o in f.attr("body").inputs] == [("exp", (5,)), ("multiply", (2, 3))]


@pytest.mark.cuda
def test_horizontal_kernel_under_the_cuda_simulator(rng):
    ha, hb = _inputs(rng)
    with context(backend="cuda", cuda_sim=True):
        a, b = np.asarray(ha), np.asarray(hb)
        assert [k.kind for k in tracer.explain(*_three(np, a, b)).kernels] == ["horizontal"]
        _check(tracer.evaluate(*_three(np, a, b)), _three(numpy, ha, hb))


def test_many_small_kernels_fill_groups_up_to_the_size_cap(rng):
    from tracer.opt.fusion import MAX_GROUP
    hs = rng.standard_normal((2 * MAX_GROUP + 3, 7)).astype(numpy.float32)
    x = np.asarray(hs)
    outs = [x[i] * 2 for i in range(hs.shape[0])]
    plan = tracer.explain(*outs)
    assert len(plan.kernels) == 3  # 64 + 64 + 3 single-op kernels
    got = tracer.evaluate(*outs)
    for g, h in zip(got, hs):
        numpy.testing.assert_array_equal(numpy.asarray(g), h * 2)
