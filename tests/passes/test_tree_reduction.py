"""Tree-reduction rewriter: structure of the split, and values against NumPy with the pass on,
off, and forced onto innermost axes."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir import make, toposort
from tracer.ir.config import context
from tracer.ir.interp import run_graph
from tracer.opt import tree_reduction as tr
from tracer import graph as G

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph


def test_column_reduction_splits_into_two_stages_through_one_chunk():
    x = G.leaf(numpy.ones((70001, 3), numpy.int32))
    red = G.reduce("reduce_sum", x, (0,))
    (out,) = tr.tree_reduction([red])
    assert out.op == "reduce_sum" and out.attr("axes") == (0,) and out.shape == (3,)
    inner = out.inputs[0]
    chunk = inner.inputs[0]
    assert inner.op == "reduce_sum" and inner.attr("axes") == (1,)
    assert chunk.op == "chunk" and chunk.attr("split") == (265, 265)  # ceil(sqrt(70001))
    assert chunk.shape == (265, 265, 3) and chunk.attr("fill") == 0
    assert [c.attr("value") for c in chunk.inputs[1:]] == [70001, 265]  # sizes as arguments


def test_short_many_output_arg_and_float_sum_reductions_stay():
    x = G.leaf(numpy.ones((100, 3), numpy.float32))
    big = G.leaf(numpy.ones((70001, 80), numpy.float32))
    tall = G.leaf(numpy.ones((70001, 3), numpy.float32))  # a float sum: NumPy's order stays
    for red in (G.reduce("reduce_sum", x, (0,)), G.reduce("reduce_sum", big, (0,)),
                make("argmax", (big,), (80,), numpy.dtype(numpy.intp), (("axes", (0,)),)),
                G.reduce("reduce_sum", tall, (0,))):
        assert tr.tree_reduction([red])[0] is red


def test_innermost_axis_is_left_to_the_kernel():
    x = G.leaf(numpy.ones((100003,), numpy.float32))
    red = G.reduce("reduce_max", x, (0,))
    assert tr.tree_reduction([red])[0] is red


CASES = [((70001, 3), (0,)), ((5, 70001), (1,)), ((100003,), (0,)), ((3, 300, 200), (1, 2)),
         ((200, 3, 300), (0, 2))]


@pytest.mark.parametrize("shape,axes", CASES)
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_max", "reduce_min", "reduce_any"])
def test_split_graph_matches_the_unsplit_one_in_the_interpreter(shape, axes, op, monkeypatch):
    monkeypatch.setattr(tr, "SPLIT_INNERMOST", True)
    h = numpy.random.default_rng(1).standard_normal(shape).astype(numpy.float32)
    if op == "reduce_any":
        h = h > 3.5
    elif op == "reduce_sum":  # (float sums keep one stage: NumPy's order)
        h = (h * 100).astype(numpy.int32)
    red = G.reduce(op, G.leaf(h), axes)
    (split,) = tr.tree_reduction([red])
    assert split is not red
    want, got = run_graph([red])[0], run_graph([split])[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("innermost", [False, True])
@pytest.mark.parametrize("shape,axis", [((70001, 3), 0), ((100003,), None), ((4, 70001), 1)])
def test_lazy_reductions_match_numpy(shape, axis, innermost, monkeypatch):
    monkeypatch.setattr(tr, "SPLIT_INNERMOST", innermost)
    h = numpy.random.default_rng(2).standard_normal(shape).astype(numpy.float32)
    h[1] = numpy.nan if axis is None else h[1]
    x = np.asarray(h)
    for f in ("sum", "max", "min"):
        with numpy.errstate(all="ignore"):
            want = getattr(h * numpy.float32(2), f)(axis=axis)
        got = numpy.asarray(getattr(x * 2, f)(axis=axis))
        assert got.dtype == want.dtype and got.shape == want.shape
        numpy.testing.assert_allclose(got, want, rtol=1e-5, equal_nan=True)


def test_column_max_plans_two_kernels_and_float_sum_one():
    h = numpy.random.default_rng(3).standard_normal((70001, 3)).astype(numpy.float32)
    x = np.asarray(h)
    plan = tracer.explain((x * x).max(0))
    assert len(plan.kernels) == 2
    assert any(n.op == "chunk" for f in toposort(plan.graph_after.roots) if f.op == "fusion"
               for n in toposort([f.attr("body")]))
    assert numpy.asarray((x * x).max(0)).tobytes() == (h * h).max(0).tobytes()
    assert len(tracer.explain((x * x).sum(0)).kernels) == 1  # one stage: NumPy's order...
    assert numpy.asarray((x * x).sum(0)).tobytes() == (h * h).sum(0).tobytes()  # ...its bits
