"""The pass manager: passes share one topological order per graph (the graph is sorted again only
after a pass changed it), passes whose op kinds are absent are skipped, and the simplification
group runs to a fixed point."""
from __future__ import annotations

import sys

import numpy
import pytest

from tracer import graph as G
from tracer.ir import node as ir_node
from tracer.ir.config import context
from tracer.ir.registry import VIEW_OPS, Kind
from tracer import opt
from tracer.opt.pipeline import FIXPOINT_ROUNDS, NEEDS, PIPELINE, SIMPLIFICATION

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph


def _leaf(shape=(8,)):
    return G.leaf(numpy.ones(shape, numpy.float32))


def _count_sorts(fn):
    """(fn's result, whole-graph toposorts, all toposorts) while fn runs; a fusion body's sort
    (a graph holding params) or a traversal with `follow` is not a whole-graph sort."""
    code = ir_node.toposort.__code__
    calls: list[bool] = []
    old = sys.getprofile()

    def prof(frame, event, arg):
        if frame.f_code is code and event == "return":
            body = frame.f_locals.get("follow") is not None or \
                any(n.op == "param" for n in (arg or ()))
            calls.append(not body)
    sys.setprofile(prof)
    try:
        out = fn()
    finally:
        sys.setprofile(old)
    return out, sum(calls), len(calls)


def test_optimize_sorts_the_graph_at_most_twice():
    a, b, c = _leaf(), _leaf(), _leaf()
    s = G.reduce("reduce_sum", G.elementwise("add", (G.elementwise("multiply", (a, b)), c)), (0,))
    assert len(ir_node.toposort([s])) == 6  # 3 inputs, multiply, add, reduce_sum
    for check in (False, True):  # verification (always on in tests) sorts no more graphs
        with context(verify=check):
            res, whole, total = _count_sorts(lambda: opt.optimize([s]))
        assert [p[0] for p in res.passes if p[2]] == ["fusion"]
        assert whole <= 2, whole  # once at the start, once after fusion changed the graph
        # and fusion's group walk, buffer assignment's body walk (and verify's of the body)
        assert total <= 4 + check, total


def test_passes_whose_op_kinds_are_absent_are_skipped():
    a = _leaf()
    roots = [G.elementwise("exp", (a,))]
    res = opt.optimize(roots)
    by_name = {p[0]: p for p in res.passes}
    # no contraction, update, gather or scatter: those passes never ran (no time)
    for name in ("matrix_chain", "dot_decompose", "dot_merge", "dce", "scatter_expander"):
        assert by_name[name][1] == 0.0 and not by_name[name][2], name
    assert set(NEEDS) <= {name for name, _, _ in PIPELINE}


def test_simplification_runs_to_a_fixed_point():
    # -(T'(-(T(x)))): simplify sees no -(-x) until sinking moved the transposes, which cancel;
    # only a second round of the group then removes the double negation
    x = _leaf((3, 4))
    t = G.transpose(G.elementwise("negative", (G.transpose(x, (1, 0)),)), (1, 0))
    root = G.elementwise("negative", (t,))
    with context(disable_passes={"fusion", "buffer_assignment"}):
        res = opt.optimize([root])
    assert res.roots == [x]
    assert FIXPOINT_ROUNDS >= 2


def test_one_round_of_simplification_is_not_enough_there(monkeypatch):
    import tracer.opt.pipeline as P
    x = _leaf((3, 4))
    t = G.transpose(G.elementwise("negative", (G.transpose(x, (1, 0)),)), (1, 0))
    root = G.elementwise("negative", (t,))
    monkeypatch.setattr(P, "FIXPOINT_ROUNDS", 1)
    once = opt.optimize([root], [e for e in PIPELINE if e[0] in SIMPLIFICATION])
    assert once.roots[0].op == "negative" and once.roots[0].inputs[0].op == "negative"


def test_kinds_and_properties_replace_name_lists():
    from tracer.ir.registry import CHEAP_OPS, LIBRARY_OPS, OPS
    assert OPS["fusion"].kind is Kind.FUSION and OPS["param"].kind is Kind.PARAM
    assert OPS["sort"].kind is Kind.LIBRARY and "sort" in LIBRARY_OPS and "matmul" in LIBRARY_OPS
    assert set(VIEW_OPS) == {"slice", "dynamic_slice", "reshape", "transpose", "broadcast_to"}
    assert "add" in CHEAP_OPS and "exp" not in CHEAP_OPS and "chunk" in CHEAP_OPS
    for name in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_any",
                 "reduce_all"):
        d = OPS[name]
        assert d.ufunc is not None and d.combine and d.accumulate, name
