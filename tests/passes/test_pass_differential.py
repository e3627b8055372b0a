"""Each pass of PIPELINE switched off in turn: random small programs still agree with NumPy.

A pass that others silently rely on (a rewrite that fusion or codegen assumes happened) shows up
here as a wrong value, dtype or shape, or a crash, under that pass's name. The pass list is read
at collection time, so a new pass is covered without editing this file.

A program evaluates two to four forms together (one graph, so siblings share inputs), each with
elementwise steps after it. The forms: elementwise chains, broadcasts, transposes, reductions,
softmax-like reduce-then-broadcast, matmul chains with vector ends, distance-like forms, and
common subexpressions. Inputs have fixed shapes and three dtypes, and a fixed seed gives every
pass the same examples, so most kernels compile once and are shared.
"""
from __future__ import annotations

import numpy
import pytest
from hypothesis import HealthCheck, given, seed, settings, strategies as st

from tracer import opt
import tracer
import tracer.numpy as tnp
from tracer.ir.config import context
from tracer.opt.pipeline import UNDER_BUDGET

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph

# stages that rewrite nothing (the splitter, without a budget) have the budget tests instead
PASSES = list(dict.fromkeys(name for name, _fn, _why in opt.PIPELINE
                            if name not in UNDER_BUDGET))
DTYPES = [numpy.float64, numpy.float32, numpy.int64]
# x, y: (3, 4) operands; w: (4, 5) matrix; v: (5,) vector; z: (2, 4) points for distances
SHAPES = {"x": (3, 4), "y": (3, 4), "w": (4, 5), "v": (5,), "z": (2, 4)}


def chain(m, a, r):
    x, y = a["x"], a["y"]
    steps = [lambda t: t * y + 1, lambda t: m.maximum(t, y) - t, lambda t: -(-t) * 1,
             lambda t: m.abs(t) - y, lambda t: m.where(t > y, t, y * 2)]
    for k in range(2 + r % 3):
        x = steps[(r >> (3 * k)) % len(steps)](x)
    return x


def broadcast(m, a, r):
    x, y = a["x"], a["y"]
    return [x + y[0], x * y[:, :1], (x[:, :, None] * y[:, None, :]).sum(1),
            x - y.max(1, keepdims=True)][r % 4]


def transpose(m, a, r):
    x, y = a["x"], a["y"]
    return [(x.T * 2).T + y, x.T.T - y, m.swapaxes(x, 0, 1) * y.T, (x + y).T[::-1]][r % 4]


def reduce(m, a, r):
    x = a["x"] * a["y"]
    name = ["sum", "max", "min", "mean"][r % 4]
    axis = [0, 1, None, -1][(r >> 2) % 4]
    return getattr(x, name)(axis=axis, keepdims=bool(r >> 4 & 1))


def softmax(m, a, r):
    x, ax = a["x"], (r >> 2) % 2
    if r % 3 == 0:
        e = m.exp(x - x.max(axis=ax, keepdims=True))
        return e / e.sum(axis=ax, keepdims=True)
    if r % 3 == 1:
        mu = x.mean(axis=ax, keepdims=True)
        return (x - mu) / m.sqrt(((x - mu) ** 2).mean(axis=ax, keepdims=True) + 1)
    top = x.max(axis=ax, keepdims=True)
    return m.log(m.exp(x - top).sum(axis=ax)) + m.squeeze(top, ax)


def matmul(m, a, r):
    x, y, w, v = a["x"], a["y"], a["w"], a["v"]
    return [(x @ w) @ v, x @ (w @ v), (y.T @ x) @ w @ v, v @ (w.T @ x.T),
            m.maximum(x @ w + v, 0) @ v, m.dot(x, w) * 2][r % 6]


def distance(m, a, r):
    x, z = a["x"], a["z"]
    d = ((x[:, None, :] - z[None, :, :]) ** 2).sum(-1)
    if r % 4 == 3:  # the expanded form a rewriter may produce or start from
        d = (x * x).sum(1)[:, None] - 2 * (x @ z.T) + (z * z).sum(1)[None, :]
    return [d.min(1), d, d.argmin(1), d.sum(0)][(r >> 2) % 4]


def common(m, a, r):
    x, y = a["x"], a["y"]
    return [x * y + y * x - x * x, (x + y) * (x + y) - x, x - x + y * 1,
            m.maximum(x, y) + m.maximum(x, y)][r % 4]


FORMS = [chain, broadcast, transpose, reduce, softmax, matmul, distance, common]
POST = [lambda m, t: -t, lambda m, t: m.abs(t) * 3, lambda m, t: t + 2,
        lambda m, t: m.maximum(t, 0), lambda m, t: m.tanh(t)]

form = st.tuples(st.sampled_from(range(len(FORMS))), st.integers(0, 1 << 12),
                 st.lists(st.sampled_from(range(len(POST))), max_size=2))
programs = st.tuples(st.sampled_from(DTYPES), st.lists(form, min_size=2, max_size=4),
                     st.integers(0, 7))


def run(m, arrays, forms):
    outs = []
    for f, r, post in forms:
        t = FORMS[f](m, arrays, r)
        for p in post:
            t = POST[p](m, t)
        outs.append(t)
    if m is tnp:
        tracer.evaluate(*outs)
    return outs


def inputs(dtype, seed):
    rng = numpy.random.default_rng(seed)
    if numpy.dtype(dtype).kind == "i":
        return {k: rng.integers(-4, 5, s).astype(dtype) for k, s in SHAPES.items()}
    return {k: numpy.round(rng.standard_normal(s) * 2, 2).astype(dtype) for k, s in SHAPES.items()}


def tolerance(dtype) -> float:
    return {numpy.dtype(numpy.float32): 2e-4, numpy.dtype(numpy.float64): 1e-9}.get(dtype, 0)


@pytest.mark.parametrize("pass_name", PASSES)
@settings(max_examples=10, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@seed(2002)  # not derandomize: under pytest that seeds each pass apart, and kernels would differ
@given(programs)
def test_program_agrees_with_numpy_without_the_pass(pass_name, program):
    dtype, forms, seed = program
    host = inputs(dtype, seed)
    with numpy.errstate(all="ignore"):
        want = run(numpy, {k: h.copy() for k, h in host.items()}, forms)
        with context(disable_passes={pass_name}):
            got = run(tnp, {k: tnp.asarray(h) for k, h in host.items()}, forms)
    for w, g in zip(want, got):
        w = numpy.asarray(w)
        assert isinstance(g, tracer.ndarray)
        g = numpy.asarray(g)
        assert (g.dtype, g.shape) == (w.dtype, w.shape), (pass_name, forms)
        tol = tolerance(w.dtype)
        scale = max(1.0, float(numpy.nanmax(numpy.abs(w), initial=0.0))) if w.size else 1.0
        numpy.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, equal_nan=True,
                                      err_msg=f"without {pass_name}: {forms}")
