"""Reshape and transpose sinking on hand-built graphs (exact structure after the pass, NumPy's
values before and after) and on lazy programs with the pass on and off."""
from __future__ import annotations

import itertools

import numpy
import pytest

import tracer
import tracer.numpy as tnp
from tracer.ir import make, toposort, verify
from tracer.ir.config import context
from tracer.ir.interp import eval_node
from tracer.opt.sinking import sink_movement, sink_reshape, sink_transpose, transpose_into_reduce
from tracer import graph as G

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph

F = numpy.dtype(numpy.float64)


def leaf(shape, seed=0, dtype=numpy.float64):
    v = numpy.random.default_rng(seed).standard_normal(shape)
    v.flat[:3] = [numpy.nan, -0.0, numpy.inf][:v.size]
    return G.leaf(v.astype(dtype))


def op(name, *ins):
    return G.elementwise(name, ins)


def scalar(v, like, dtype=numpy.float64):
    return G.broadcast(G.const(v, dtype), like.shape)


def run(roots):
    """NumPy's values (the interpreter, with -0.0 constants)."""
    v = {}
    for n in toposort(roots):
        v[id(n)] = numpy.asarray(n.attr("value"), n.dtype) if n.op == "const" else \
            eval_node(n, [v[id(i)] for i in n.inputs])
    return [v[id(r)] for r in roots]


def assert_same_values(before, after):
    verify(after)
    for a, b in zip(run(before), run(after)):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert numpy.array_equal(a, b, equal_nan=True)
        keep = ~numpy.isnan(a) if a.dtype.kind == "f" else numpy.ones(a.shape, bool)
        assert numpy.array_equal(numpy.signbit(a)[keep], numpy.signbit(b)[keep])


def count(roots, name):
    return sum(1 for n in toposort(roots) if n.op == name)


# ---------------------------------------------------------------- transposes

def test_binary_op_of_two_transposes_sinks():
    x, y = leaf((2, 3, 4), 1), leaf((2, 3, 4), 2)
    p = (2, 0, 1)
    e = op("add", G.transpose(x, p), G.transpose(y, p))
    assert sink_transpose(e) is G.transpose(op("add", x, y), p)
    assert_same_values([e], sink_movement([e]))


def test_scalar_operands_are_rebroadcast_to_the_source_shape():
    x = leaf((2, 3))
    t = G.transpose(x, (1, 0))
    e = G.where(op("less", t, scalar(0.5, t)), scalar(-0.0, t), t)
    (out,) = sink_movement([e])
    two = (scalar(0.5, x), scalar(-0.0, x))
    assert out is G.transpose(G.where(op("less", x, two[0]), two[1], x), (1, 0))
    assert_same_values([e], [out])


def test_chain_sinks_to_the_output_and_transposes_cancel():
    x, y = leaf((3, 4), 1), leaf((3, 4), 2)
    t = op("exp", op("multiply", G.transpose(x, (1, 0)), G.transpose(y, (1, 0))))
    back = make("transpose", (t,), (3, 4), F, (("perm", (1, 0)),))
    (out,) = sink_movement([back])
    assert out is op("exp", op("multiply", x, y))
    assert_same_values([back], [out])


def test_mixed_movements_do_not_sink():
    x, y = leaf((3, 3), 1), leaf((3, 3), 2)
    for e in (op("add", G.transpose(x, (1, 0)), y),                        # one operand not moved
              op("add", G.transpose(x, (1, 0)), G.reshape(G.reshape(y, (9,)), (3, 3))),
              op("add", G.transpose(x, (1, 0)), G.broadcast(leaf((3,), 3), (3, 3)))):
        assert sink_transpose(e) is None and sink_movement([e]) == [e]
    a, b = leaf((2, 3, 4), 1), leaf((4, 2, 3), 2)
    e = op("add", G.transpose(a, (0, 2, 1)), G.transpose(b, (1, 0, 2)))  # both (2, 4, 3)
    assert sink_transpose(e) is None


def test_shared_transpose_keeps_one_elementwise_op_each():
    x = leaf((2, 5))
    t = G.transpose(x, (1, 0))
    a, b = op("exp", t), op("sin", t)
    roots = [a, b, t]
    out = sink_movement(roots)
    assert out[0] is G.transpose(op("exp", x), (1, 0))
    assert out[1] is G.transpose(op("sin", x), (1, 0))
    assert out[2] is t  # other users keep their transpose
    assert count(out, "exp") == count(out, "sin") == 1
    assert_same_values(roots, out)


# ---------------------------------------------------------------- reshapes

def test_reshape_of_computed_values_sinks():
    x, y = leaf((2, 6), 1), leaf((2, 6), 2)
    ex, ey = op("exp", x), op("negative", y)
    e = op("subtract", G.reshape(ex, (3, 4)), G.reshape(ey, (3, 4)))
    e = op("multiply", e, scalar(2.0, e))
    (out,) = sink_movement([e])
    inner = op("multiply", op("subtract", ex, ey), scalar(2.0, ex))
    assert out is G.reshape(inner, (3, 4))
    assert_same_values([e], [out])


def test_reshape_of_leaves_stays_a_view_before_the_op():
    x, y = leaf((2, 6), 1), leaf((2, 6), 2)
    e = op("add", G.reshape(x, (3, 4)), G.reshape(y, (3, 4)))
    assert sink_reshape(e) is None  # nothing to fuse with: the reshapes are free views


def test_unit_axis_reshape_is_an_index_remap_and_sinks():
    x, y = leaf((3, 1, 4), 1), leaf((3, 1, 4), 2)
    e = op("add", G.reshape(x, (3, 4)), G.reshape(y, (3, 4)))
    assert sink_reshape(e) is G.reshape(op("add", x, y), (3, 4))


def test_reshapes_from_different_shapes_do_not_sink():
    x, y = op("exp", leaf((2, 6), 1)), op("exp", leaf((3, 4), 2))
    e = op("add", G.reshape(x, (12,)), G.reshape(y, (12,)))
    assert sink_reshape(e) is None


def test_reshape_chains_compose_when_sunk():
    x = op("exp", leaf((2, 6)))
    e = op("sqrt", G.reshape(x, (3, 4)))
    f = op("negative", G.reshape(e, (4, 3)))
    (out,) = sink_movement([f])
    assert out is G.reshape(op("negative", op("sqrt", x)), (4, 3))
    assert_same_values([f], [out])


# ---------------------------------------------------------------- transposes into reductions

def test_transpose_folds_into_reduction():
    x = leaf((2, 3, 4))
    t = G.transpose(x, (2, 0, 1))                    # (4, 2, 3)
    r = G.reduce("reduce_sum", t, (1,))              # (4, 3): x's axes 2, 1
    assert transpose_into_reduce(r) is G.transpose(G.reduce("reduce_sum", x, (0,)), (1, 0))
    r2 = G.reduce("reduce_max", t, (0,))             # (2, 3): x's axes 0, 1 in order
    assert transpose_into_reduce(r2) is G.reduce("reduce_max", x, (2,))
    a = G.reduce("argmax", G.transpose(x, (1, 0, 2)), (0,))
    assert transpose_into_reduce(a) is G.reduce("argmax", x, (1,))
    assert_same_values([r, r2, a], sink_movement([r, r2, a]))


def test_row_reduction_of_a_transpose_stays_a_row_reduction():
    x = leaf((3, 4))
    r = G.reduce("reduce_max", G.transpose(x, (1, 0)), (1,))  # a row kernel's trailing axis
    assert transpose_into_reduce(r) is None
    y = leaf((2, 3, 4))
    r = G.reduce("reduce_sum", G.transpose(y, (0, 2, 1)), (1, 2))  # trailing either way
    assert transpose_into_reduce(r) is G.reduce("reduce_sum", y, (1, 2))


def test_softmax_of_a_transpose_is_still_one_row_kernel():
    h = numpy.random.default_rng(0).random((32, 24))
    t = tnp.asarray(h).T
    e = tnp.exp(t - t.max(axis=-1, keepdims=True))
    out = e / e.sum(axis=-1, keepdims=True)
    assert len(tracer.explain(out).kernels) == 1
    want = numpy.exp(h.T - h.T.max(-1, keepdims=True))
    numpy.testing.assert_allclose(numpy.asarray(out), want / want.sum(-1, keepdims=True),
                                  rtol=1e-12)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
def test_transposed_reductions_match_numpy_bit_for_bit(name):
    # NumPy reduces a transposed view in memory order: the folded reduction is the same sum
    rng = numpy.random.default_rng(4)
    v = rng.standard_normal((3, 5, 4)) * 10.0 ** rng.integers(-8, 8, (3, 5, 4))
    if name in ("reduce_max", "reduce_min"):  # ties between -0.0 and 0.0
        v = numpy.where(rng.random(v.shape) < 0.5, 0.0, -0.0) - (rng.random(v.shape) < 0.3)
    x = G.leaf(v)
    roots = []
    for p in itertools.permutations(range(3)):
        for k in (1, 2, 3):
            for axes in itertools.combinations(range(3), k):
                roots.append(G.reduce(name, G.transpose(x, p), axes))
    out = sink_movement(roots)
    folded = [o for o in out if (o.inputs[0] if o.op == "transpose" else o).inputs[0] is x]
    assert len(folded) > len(roots) // 2
    assert_same_values(roots, out)


# ---------------------------------------------------------------- lazy programs

_OFF = {"sink_movement"}


def _programs(np_, a, b):
    s = np_.exp(a.T * 2.0 + b.T).sum(axis=0)           # transposes into the reduction
    r = (np_.sqrt(np_.abs(a * b)).reshape(4, 6) - 1.0) * 0.5
    m = (np_.maximum(a.T, b.T) * -1.0).max(axis=1)
    return s, r, m


def test_lazy_programs_match_numpy_with_and_without_sinking():
    rng = numpy.random.default_rng(7)
    ha, hb = rng.standard_normal((2, 12)), rng.standard_normal((2, 12))
    ha[0, :2] = [numpy.nan, -0.0]
    with numpy.errstate(all="ignore"):
        want = _programs(numpy, ha, hb)
    for off in (frozenset(), _OFF):
        with context(disable_passes=off):
            got = tracer.evaluate(*_programs(tnp, tnp.asarray(ha), tnp.asarray(hb)))
        for g, w in zip(got, want):
            numpy.testing.assert_allclose(numpy.asarray(g), w, rtol=1e-12, equal_nan=True)


def test_sinking_removes_movement_from_the_plan():
    ha = numpy.arange(24.0).reshape(2, 12)
    a = tnp.asarray(ha)
    expr = (tnp.sqrt(a * a).reshape(4, 6) + 1.0) * 3.0
    with context(disable_passes=_OFF):
        off = tracer.explain(expr)
    on = tracer.explain(expr)
    assert len(on.kernels) < len(off.kernels)   # sqrt, add, multiply fuse past the reshape
    assert str(on.graph_after).splitlines()[-2].split("= ")[1].startswith("reshape")
    numpy.testing.assert_allclose(numpy.asarray(expr), (numpy.sqrt(ha * ha).reshape(4, 6) + 1) * 3)
