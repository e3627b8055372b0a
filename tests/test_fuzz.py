"""Differential fuzzing: random small programs run lazily (tracer) and eagerly (NumPy) agree.

Shapes and dtypes come from a small fixed set so the kernels compiled stay few."""
from __future__ import annotations

import numpy
from hypothesis import HealthCheck, given, settings, strategies as st

import tracer.numpy as tnp

SHAPES = [(4,), (3, 4), (2, 3, 4)]
DTYPES = [numpy.float64, numpy.float32, numpy.int64]

UNARY = ["negative", "absolute", "square", "sin", "exp", "sqrt", "floor"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "true_divide"]


@st.composite
def programs(draw):
    shape = draw(st.sampled_from(SHAPES))
    dtype = draw(st.sampled_from(DTYPES))
    steps = draw(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 1 << 30)),
                          min_size=3, max_size=8))
    return shape, dtype, steps


def run(m, x, y, steps):
    """Apply the steps with module m (numpy or tracer.numpy) to arrays x, y."""
    for kind, r in steps:
        nd = x.ndim
        if kind == 0:
            name = UNARY[r % len(UNARY)]
            if name == "sqrt":
                x = m.abs(x)
            elif name == "sin":  # sin of a huge value turns a 1-ulp difference into any value
                x = m.clip(x, -1e3, 1e3)
            x = getattr(m, name)(x)
        elif kind == 1:
            x = getattr(m, BINARY[r % len(BINARY)])(x, y if r % 3 else 1.5)
        elif kind == 2:  # broadcast a row
            x = x + y[(0,) * (nd - 1)] if nd > 1 else x * 2
        elif kind == 3:  # compare and select
            x = m.where(x > y, x, y)
        elif kind == 4 and nd > 1:  # transpose round trip through arithmetic
            x = (x.T * 2).T - x
        elif kind == 5:  # reduce with keepdims, broadcast back
            ax = r % nd
            x = x - x.max(axis=ax, keepdims=True)
        elif kind == 6:  # write through a slice
            x = x.copy()
            x[..., ::2] = x[..., ::2] * 0.5
        elif kind == 7:  # a full reduction broadcast back
            x = x + x.sum() * 0
    return x.sum(axis=-1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**32 - 1))
def test_lazy_equals_eager(program, seed):
    shape, dtype, steps = program
    rng = numpy.random.default_rng(seed)
    hx = (rng.standard_normal(shape) * 3).astype(dtype)
    hy = (rng.standard_normal(shape) * 3).astype(dtype)
    with numpy.errstate(all="ignore"):
        want = run(numpy, hx, hy, steps)
        got = numpy.asarray(run(tnp, tnp.asarray(hx), tnp.asarray(hy), steps))
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-4 if want.dtype == numpy.float32 else 1e-9
    numpy.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
