"""The fusion family: row kernels (reduce-then-broadcast), on the cpu backend, against NumPy,
with kernel-count structure checks."""
from __future__ import annotations

import re

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir import toposort
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph


def _softmax(xp, x, axis=-1):
    e = xp.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _logsumexp(xp, x):
    m = x.max(1)
    return m + xp.log(xp.exp(x - m[:, None]).sum(1))


def _layernorm(xp, x):
    mu = x.mean(-1, keepdims=True)
    return (x - mu) / xp.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)


def _log_softmax(xp, x):
    m = x.max(1, keepdims=True)
    return x - m - xp.log(xp.exp(x - m).sum(1, keepdims=True))


PROGRAMS = {"softmax": _softmax, "logsumexp": _logsumexp, "layernorm": _layernorm,
            "log_softmax": _log_softmax}


def _kinds(*arrays):
    return [k.kind for k in tracer.explain(*arrays).kernels]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
def test_row_programs_are_one_kernel_and_match_numpy(name, dtype, rng):
    f = PROGRAMS[name]
    h = rng.standard_normal((20, 37)).astype(dtype)
    got = f(np, np.asarray(h))
    assert _kinds(got) == ["row"]
    want = f(numpy, h)
    r = numpy.asarray(got)
    assert r.dtype == want.dtype and r.shape == want.shape
    numpy.testing.assert_allclose(r, want, rtol=2e-6 if dtype == numpy.float32 else 1e-12,
                                  atol=1e-6)


def test_softmax_stashes_exp_instead_of_recomputing_it(rng):
    x = np.asarray(rng.standard_normal((20, 37)).astype(numpy.float32))
    src = tracer.explain(_softmax(np, x)).kernels[0].source
    # exp is computed once, in the loop that stores it before the sum's pass; the sum and the
    # final pass read it back from out
    assert src.count("_f32(_exp_f32(") == 1
    final = src[src.rindex("acc = _f32(acc + ps)"):]  # (float32 sums add in float32)
    assert "_exp_f32" not in final and "out[" in final


def test_row_kernel_with_nan_inf_and_batch_axes(rng):
    h = rng.standard_normal((3, 4, 9)).astype(numpy.float32)
    h[0, 1, 2] = numpy.nan
    h[1, 2, :] = -numpy.inf
    h[2, 0, 3] = numpy.inf
    with numpy.errstate(all="ignore"):
        want = _softmax(numpy, h)
        got = numpy.asarray(_softmax(np, np.asarray(h)))
    numpy.testing.assert_allclose(got, want, rtol=2e-6, equal_nan=True)


def test_two_trailing_axes_reduce_in_one_row_kernel(rng):
    h = rng.standard_normal((20, 3, 5)).astype(numpy.float32)
    x = np.asarray(h)
    got = x / x.sum((1, 2), keepdims=True) - x.max((1, 2), keepdims=True)
    assert _kinds(got) == ["row"]
    numpy.testing.assert_allclose(numpy.asarray(got),
                                  h / h.sum((1, 2), keepdims=True) - h.max((1, 2), keepdims=True),
                                  rtol=2e-6, atol=1e-6)


def test_leading_axis_normalization_is_not_a_row_kernel(rng):
    """Reductions over leading axes keep column kernels (rows read contiguously)."""
    h = rng.standard_normal((40, 6)).astype(numpy.float32)
    x = np.asarray(h)
    got = (x - x.mean(0)) / x.std(0)
    assert "row" not in _kinds(got)
    numpy.testing.assert_allclose(numpy.asarray(got), (h - h.mean(0)) / h.std(0), rtol=1e-5)


def test_one_long_row_is_not_serialized(rng):
    """A few very long rows stay parallel reductions instead of one-thread row kernels."""
    h = rng.standard_normal((2, 20000)).astype(numpy.float32)
    got = _softmax(np, np.asarray(h))
    assert "row" not in _kinds(got)
    numpy.testing.assert_allclose(numpy.asarray(got), _softmax(numpy, h), rtol=2e-6, atol=1e-9)


def test_integer_row_reductions_keep_numpy_dtypes(rng):
    h = rng.integers(-50, 50, (20, 7)).astype(numpy.int16)
    x = np.asarray(h)
    got = x - x.max(1, keepdims=True) + x.sum(1, keepdims=True)
    want = h - h.max(1, keepdims=True) + h.sum(1, keepdims=True)
    assert _kinds(got) == ["row"]
    r = numpy.asarray(got)
    assert r.dtype == want.dtype
    numpy.testing.assert_array_equal(r, want)


def test_row_kernel_disabled_fusion_still_matches(rng):
    h = rng.standard_normal((20, 37)).astype(numpy.float32)
    with context(disable_passes={"fusion"}):
        got = numpy.asarray(_softmax(np, np.asarray(h)))
    numpy.testing.assert_allclose(got, _softmax(numpy, h), rtol=2e-6)


def test_keepdims_reshape_is_a_remap_not_a_copy(rng):
    h = rng.standard_normal((20, 37)).astype(numpy.float32)
    x = np.asarray(h)
    plan = tracer.explain(x / x.sum(1, keepdims=True))
    after = toposort(plan.graph_after.roots)
    assert not [n for n in after if n.op == "reshape"]
    assert plan.peak_bytes == 0


# ---------------------------------------------------------------- fusion merger

def _check_all(got, want):
    for g, w in zip(got, want):
        r = numpy.asarray(g)
        assert r.dtype == w.dtype and r.shape == w.shape
        numpy.testing.assert_allclose(r, w, rtol=2e-6, atol=1e-6)


def _two_readers(xp, a, b):
    y = a * b + 1
    return (y * 2).sum(1), y.max(0)


def test_cheap_shared_producer_merges_into_its_readers(rng):
    ha, hb = (rng.standard_normal((20, 37)).astype(numpy.float32) for _ in range(2))
    a, b = np.asarray(ha), np.asarray(hb)
    plan = tracer.explain(*_two_readers(np, a, b))
    assert len(plan.kernels) == 2 and plan.peak_bytes == 0
    with context(disable_passes={"fusion_merger", "multi_output_fusion"}):
        off = tracer.explain(*_two_readers(np, a, b))
        assert len(off.kernels) == 3 and off.peak_bytes == ha.nbytes
        _check_all(tracer.evaluate(*_two_readers(np, a, b)), _two_readers(numpy, ha, hb))
    _check_all(tracer.evaluate(*_two_readers(np, a, b)), _two_readers(numpy, ha, hb))


def test_expensive_shared_producer_is_computed_once(rng):
    h = rng.standard_normal((20, 37)).astype(numpy.float32)
    x = np.asarray(h)
    y = np.exp(x) * 3
    got = (y.sum(1), y.max(0))
    with context(disable_passes={"multi_output_fusion"}):
        assert len(tracer.explain(*got).kernels) == 3
    kernels = tracer.explain(*got).kernels  # the producer is written by its row consumer
    # exp is computed and written out once, in the row kernel's loop before its sum pass
    assert len(kernels) == 2 and [k.source.count("_f32(_exp_f32(") for k in kernels
                                  if "_exp_f32" in k.source] == [1]
    _check_all(tracer.evaluate(*got), ((numpy.exp(h) * 3).sum(1), (numpy.exp(h) * 3).max(0)))


def test_merge_that_would_read_more_bytes_is_not_done(rng):
    """Four inputs read by each of three readers would move more than one written temporary."""
    hs = [rng.standard_normal((20, 37)).astype(numpy.float32) for _ in range(4)]
    a, b, c, d = (np.asarray(h) for h in hs)
    y = a * b + c * d
    got = (y.sum(1), y.max(1), y.min(0))
    with context(disable_passes={"multi_output_fusion"}):
        assert len(tracer.explain(*got).kernels) == 4
    y0 = hs[0] * hs[1] + hs[2] * hs[3]
    _check_all(tracer.evaluate(*got), (y0.sum(1), y0.max(1), y0.min(0)))


def test_merged_producer_chain_into_row_kernel(rng):
    h = rng.standard_normal((20, 37)).astype(numpy.float32)
    x = np.asarray(h)
    y = x * 2 - 1
    got = (_softmax(np, y), y.sum(0))
    want = (_softmax(numpy, h * 2 - 1), (h * 2 - 1).sum(0))
    assert sorted(k.kind for k in tracer.explain(*got).kernels) == ["reduce", "row"]
    _check_all(tracer.evaluate(*got), want)


# ---------------------------------------------------------------- multi-output fusion

MULTI = {
    "sibling_row_reductions": (lambda m, x: (x.sum(1), x.max(1)), 1),
    "producer_kept_with_its_reduction": (lambda m, x: (m.exp(x), m.exp(x).sum(1)), 1),
    "sibling_loops": (lambda m, x: (x * 2, m.sqrt(m.abs(x))), 1),
    "mean_and_var": (lambda m, x: (x.mean(1), x.var(1)), 1),
    "softmax_and_its_max": (lambda m, x: (_softmax(m, x), x.max(1)), 1),
    "column_and_row_sums_stay_apart": (lambda m, x: (x.sum(0), x.sum(1)), 2),
}


@pytest.mark.parametrize("name", sorted(MULTI))
def test_multi_output_fusion_kernel_counts_and_values(name, rng):
    f, kernels = MULTI[name]
    h = rng.standard_normal((20, 37)).astype(numpy.float32)
    x = np.asarray(h)
    got = f(np, x)
    assert len(tracer.explain(*got).kernels) == kernels
    _check_all(tracer.evaluate(*got), f(numpy, h))
    with context(disable_passes={"multi_output_fusion"}):
        got = f(np, x)
        assert len(tracer.explain(*got).kernels) >= kernels
        _check_all(tracer.evaluate(*got), f(numpy, h))


def test_producer_output_is_written_once_in_the_reduction_pass(rng):
    x = np.asarray(rng.standard_normal((20, 37)).astype(numpy.float32))
    e = np.exp(x)
    (k,) = tracer.explain(e, e.sum(1)).kernels
    # computed and stored once, in a loop of its own before the sum's pass, which reads it back
    stores = re.findall(r"out1\[[^\]]*\] = ", k.source)
    assert k.source.count("_f32(_exp_f32(") == len(stores) == 1


def test_dependent_fusions_are_not_merged_into_a_cycle(rng):
    """b reads a's reduction through a matmul: merging a and b would make b read itself."""
    h = rng.standard_normal((20, 20)).astype(numpy.float32)
    x = np.asarray(h)
    s = x.sum(1, keepdims=True)
    y = (s @ s.T) + x
    got = (s, y.max(1))
    _check_all(tracer.evaluate(*got), (h.sum(1, keepdims=True),
                                        ((h.sum(1, keepdims=True) @ h.sum(1, keepdims=True).T) +
                                         h).max(1)))


def test_structure_of_a_merged_graph():
    from tracer.ir.verifier import verify
    from tracer.opt.fusion import fusion
    from tracer.opt.multi_output import multi_output_fusion
    from tracer import graph as G
    x = G.leaf(numpy.ones((20, 5), numpy.float32))
    a = G.reduce("reduce_sum", x, (1,))
    b = G.reduce("reduce_max", x, (1,))
    out = multi_output_fusion(fusion([a, b]))
    verify(out)
    assert [o.op for o in out] == ["output", "output"]
    assert out[0].inputs[0] is out[1].inputs[0]
    assert [o.attr("index") for o in out] == [0, 1]
    body = out[0].inputs[0].attr("body")
    assert body.op == "tuple" and [i.op for i in body.inputs] == ["reduce_sum", "reduce_max"]


def test_merged_fusions_stay_within_the_group_cap_along_a_chain():
    """A scalar updated in a loop (b -= lr * mean) makes a chain of cheap fusions; merging
    them into their consumers must not add up past MAX_GROUP (it reached hundreds of ops and
    Python's recursion limit in codegen)."""
    from tracer.ir import toposort
    from tracer.opt.fusion import MAX_GROUP
    X = np.asarray(numpy.linspace(0, 1, 200).reshape(100, 2))
    b = 0.0
    for _ in range(200):
        b = b - 0.5 * (X.sum(axis=1) + b).mean()
    plan = tracer.explain(b)
    for n in toposort(plan.graph_after.roots):
        if n.op == "fusion":
            ops = [m for m in toposort([n.attr("body")])
                   if m.op not in ("param", "const", "tuple", "broadcast_to", "reshape")]
            assert len(ops) <= MAX_GROUP
