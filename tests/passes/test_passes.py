"""Small hand-built graphs for each pass, before and after; the IR's own contracts."""
from __future__ import annotations

import numpy as np
import pytest

from tracer import opt
from tracer.ir import Buffer, VerifyError, format_graph, make, run_graph, toposort, verify
from tracer.ir.config import context
from tracer.opt.fusion import fusion
from tracer.opt.simplify import constant_folding, cse, dce, simplify
from tracer import graph as G

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph


def leaf(shape=(4,), dtype=np.float64, seed=0):
    return G.leaf(np.random.default_rng(seed).random(shape).astype(dtype))


def c(v, dtype=np.float64, shape=(4,)):
    return G.broadcast(G.const(v, dtype), shape)


def test_nodes_are_interned():
    x = leaf()
    assert G.elementwise("add", (x, x)) is G.elementwise("add", (x, x))
    assert G.const(2.0, np.float32) is G.const(2.0, np.float32)
    assert G.const(2.0, np.float32) is not G.const(2.0, np.float64)
    assert G.const(float("nan"), np.float64) is G.const(float("nan"), np.float64)


def test_printer_one_line_per_node():
    x = leaf()
    y = G.elementwise("multiply", (x, c(2.0)))
    text = format_graph([y])
    lines = text.splitlines()
    assert lines[-1] == f"return %{y.uid}"
    assert f"%{y.uid}:f64[4] = multiply %{x.uid}, " in text
    assert len(lines) == len(toposort([y])) + 1


def test_verifier_catches_a_wrong_dtype():
    x = leaf()
    bad = make("add", (x, x), (4,), np.float32)
    with pytest.raises(VerifyError, match="dtype"):
        verify([bad])
    bad_shape = make("add", (x, x), (5,), np.float64)
    with pytest.raises(VerifyError, match="shape"):
        verify([bad_shape])


def test_simplify_identities():
    x = leaf()
    y = G.elementwise("multiply", (x, c(1.0)))
    z = G.elementwise("negative", (G.elementwise("negative", (y,)),))
    w = G.elementwise("subtract", (z, c(0.0)))
    assert simplify([w]) == [x]


def test_simplify_keeps_x_plus_zero_for_floats():
    x = leaf()
    y = G.elementwise("add", (x, c(0.0)))
    assert simplify([y]) == [y]  # -0.0 + 0.0 is 0.0: not an identity
    xi = leaf(dtype=np.int64)
    yi = G.elementwise("add", (xi, c(0, np.int64)))
    assert simplify([yi]) == [xi]


def test_transpose_pair_cancels():
    x = leaf((2, 3))
    t = G.transpose(G.transpose(x, (1, 0)), (1, 0))
    assert t is x  # builders already fold; the rule handles what rewrites create
    t1 = make("transpose", (x,), (3, 2), x.dtype, (("perm", (1, 0)),))
    t2 = make("transpose", (t1,), (2, 3), x.dtype, (("perm", (1, 0)),))
    assert simplify([t2]) == [x]


def test_constant_folding():
    e = G.elementwise("multiply", (c(3.0), c(4.0)))
    (out,) = constant_folding([e])
    assert out.op == "broadcast_to" and out.inputs[0].attr("value") == 12.0
    i8 = G.elementwise("add", (c(100, np.int8), c(100, np.int8)))
    (o8,) = constant_folding([i8])
    assert o8.inputs[0].attr("value") == -56  # wraps like NumPy


def test_cse_merges_non_interned_duplicates():
    x = leaf()
    a = make("exp", (x,), (4,), np.float64, (("tag", [1]),))  # unhashable attr: not interned
    b = make("exp", (x,), (4,), np.float64, (("tag", [1]),))
    assert a is not b
    y = make("add", (a, b), (4,), np.float64)
    (out,) = cse([y])
    assert out.inputs[0] is out.inputs[1]


def test_dce_drops_overwritten_slice_write():
    base = leaf((6,))
    v1, v2 = leaf((2,), seed=1), leaf((2,), seed=2)
    s = ((1, 3, 1),)
    w = G.setslice(G.setslice(base, v1, s), v2, s)
    (out,) = dce([w])
    assert out.inputs[0] is base
    np.testing.assert_array_equal(run_graph([out])[0], run_graph([w])[0])


def test_fusion_groups_and_bodies():
    a, b = leaf(seed=1), leaf(seed=2)
    s = G.reduce("reduce_sum", G.elementwise("multiply", (a, b)), (0,))
    out = G.elementwise("sqrt", (s,))
    (f,) = fusion([out])
    assert f.op == "fusion" and f.attr("kind") == "reduce"
    assert [i for i in f.inputs] == [a, b]
    ops = [n.op for n in toposort([f.attr("body")])]
    assert ops.count("param") == 2 and "reduce_sum" in ops and ops[-1] == "sqrt"
    verify([f])
    np.testing.assert_allclose(run_graph([f])[0], run_graph([out])[0])


def test_fusion_two_reductions_split():
    a = leaf((3, 40))
    s1 = G.reduce("reduce_sum", a, (1,))
    s2 = G.reduce("reduce_max", s1, (0,))
    (f,) = fusion([s2])
    assert f.op == "fusion" and f.inputs[0].op == "fusion"  # the inner sum is materialized


def test_short_reduction_computes_inline_in_its_readers_kernel():
    """The naive min-distance at D = 3: the sum over D unrolls inside the min over M (one
    kernel, no N x M value), and gives NumPy's bits (the sum in numpy's order)."""
    x, y = leaf((5, 1, 3), seed=1), leaf((1, 7, 3), seed=2)
    d = G.elementwise("subtract", (G.broadcast(x, (5, 7, 3)), G.broadcast(y, (5, 7, 3))))
    s = G.reduce("reduce_sum", G.elementwise("multiply", (d, d)), (2,))
    m = G.reduce("reduce_min", s, (1,))
    (f,) = fusion([m])
    assert f.op == "fusion" and f.attr("kind") == "reduce" and set(f.inputs) == {x, y}
    (inner,) = [n for n in toposort([f.attr("body")]) if n.op == "reduce_sum"]
    assert inner.attr("inline") == (3,)
    verify([f])
    assert run_graph([f])[0].tobytes() == run_graph([m])[0].tobytes()


def test_short_reduction_read_through_a_broadcast_is_not_inline():
    """Spread to other rows, an inline sum would be recomputed at each: it is materialized."""
    a, b = leaf((6, 3), seed=1), leaf((6, 50), seed=2)
    s = G.reduce("reduce_sum", a, (1,))
    t = G.elementwise("multiply", (G.broadcast(G.reshape(s, (6, 1)), (6, 50)), b))
    (f,) = fusion([G.reduce("reduce_max", t, (1,))])
    assert not any(n.attr("inline") for n in toposort([f.attr("body")]))


def test_pipeline_reports_passes_and_names_failures(monkeypatch):
    a = leaf()
    res = opt.optimize([G.elementwise("multiply", (a, c(1.0)))])
    assert [p[0] for p in res.passes] == [p[0] for p in opt.PIPELINE]
    assert res.roots == [a]

    def boom(roots):
        raise RuntimeError("kaput")
    pipeline = [e for e in opt.PIPELINE if e[0] in ("simplify", "constant_folding")] + \
        [("boom", boom, "test")]
    with pytest.raises(opt.PassError, match="pass 'boom' failed after: simplify, constant_folding"):
        opt.optimize([a], pipeline)


def test_dump_writes_graph_after_each_pass(tmp_path):
    a = leaf()
    with context(dump_dir=str(tmp_path)):
        opt.optimize([G.elementwise("exp", (a,))])
    names = sorted(p.name for p in tmp_path.iterdir())
    assert any(n.endswith("_fusion.txt") for n in names) and any("00_input" in n for n in names)


def test_interpreter_runs_fusion_bodies():
    a = leaf((2, 3))
    t = G.elementwise("add", (G.transpose(a, (1, 0)), c(1.0, shape=(3, 2))))
    (f,) = fusion([t])
    np.testing.assert_allclose(run_graph([f])[0], a.attr("buf").value.T + 1)
    assert isinstance(a.attr("buf"), Buffer)
