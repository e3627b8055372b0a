"""Hypothesis-generated small programs, run lazily by tracer and eagerly by NumPy, must agree:
values within a tolerance, dtype and shape exactly, and every input array too (writes through
views reach them).

A program is 3-8 steps drawn from: binary arithmetic (with a scalar, a same-shape array, a row or
a column to broadcast), unary math, a comparison feeding `where`, transposes, reductions over a
random axis with or without keepdims, slicing, and in-place writes through slices. Some steps ask
for evaluation in the middle, so programs are also cut into several graphs.

Compile time is bounded on purpose: dtypes are float64/float32/int64 and shapes (4,), (3, 4) and
(2, 3, 4) only (kernels are cached on structure, dtypes and ranks, not sizes), and the examples
are derandomized, so a warm kernel cache serves every example of a later run.
"""
from __future__ import annotations

import numpy
from hypothesis import HealthCheck, given, settings, strategies as st

import tracer
import tracer.numpy as tnp

SHAPES = [(4,), (3, 4), (2, 3, 4)]
DTYPES = [numpy.float64, numpy.float32, numpy.int64]

UNARY = ["negative", "absolute", "square", "sin", "sqrt_abs", "floor", "tanh"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]
OPERANDS = ["scalar", "same", "row", "column", "reversed"]
REDUCE = ["sum", "max", "min", "mean"]
KINDS = ["unary", "binary", "where", "transpose", "reduce", "slice", "write", "evaluate"]

step = st.tuples(st.sampled_from(KINDS), st.integers(0, 1 << 16), st.integers(0, 1 << 16))


@st.composite
def programs(draw):
    return (draw(st.sampled_from(SHAPES)), draw(st.sampled_from(DTYPES)),
            draw(st.lists(step, min_size=3, max_size=8)), draw(st.integers(0, 2**32 - 1)))


class World:
    """numpy or tracer.numpy, and how a host array enters it."""

    def __init__(self, m):
        self.m = m

    def wrap(self, h):
        return numpy.array(h, copy=True) if self.m is numpy else tnp.asarray(h)


def operand(w: World, x, kind: str, rng, value):
    """The second operand of a binary op, broadcast-compatible with x."""
    if kind == "scalar" or x.ndim == 0:
        return value
    if kind == "reversed":
        return x[..., ::-1]
    shape = {"same": x.shape, "row": x.shape[-1:],
             "column": x.shape[:-1] + (1,)}[kind]
    h = numpy.round(rng.standard_normal(shape) * 3, 1).astype(x.dtype)
    return w.wrap(h)


def run(m, hx, hy, steps, seed):
    """Apply the steps with module m (numpy or tracer.numpy); returns everything to compare."""
    w = World(m)
    rng = numpy.random.default_rng(seed)
    x0, y = w.wrap(hx), w.wrap(hy)
    x = x0
    for kind, r, s in steps:
        nd = x.ndim
        is_int = x.dtype.kind == "i"
        value = (r % 5 + 1) if is_int else (r % 7) / 2 - 1.25     # a Python scalar
        if kind == "unary":
            name = UNARY[r % len(UNARY)]
            if name == "sqrt_abs":
                x = m.sqrt(m.abs(x))
            elif name == "square" and is_int:
                x = m.clip(x, -1000, 1000) ** 2                   # no int64 overflow
            else:
                x = getattr(m, name)(x)
        elif kind == "binary":
            name = BINARY[r % len(BINARY)]
            other = operand(w, x, OPERANDS[s % len(OPERANDS)], rng, value)
            x = getattr(m, name)(other, x) if s % 2 else getattr(m, name)(x, other)
            if s % 3 == 0 and not is_int:
                x = x / (m.abs(x) + 1)                            # keep magnitudes bounded
        elif kind == "where":
            other = operand(w, x, OPERANDS[s % len(OPERANDS)], rng, value)
            cond = (x > other) if r % 2 else (x <= value)
            x = m.where(cond, x, other if s % 3 else value)
        elif kind == "transpose" and nd > 1:
            x = x.T if r % 2 else m.swapaxes(x, 0, -1)
        elif kind == "reduce" and nd > 0:
            name = REDUCE[r % len(REDUCE)]
            axis = (s % (nd + 1)) - 1 if s % 5 else None           # -1, 0, ... or None
            keep = bool(r % 3)
            red = getattr(m, name)(x, axis=axis, keepdims=keep)
            # keep the rank up half the time: broadcast the reduction back
            x = x - red if keep and r % 2 else red
        elif kind == "slice" and nd > 0:
            ax = s % nd
            key = [slice(None)] * nd
            key[ax] = [slice(1, None), slice(None, None, 2), slice(None, None, -1),
                       slice(0, -1)][r % 4] if x.shape[ax] > 1 else slice(None)
            x = x[tuple(key)]
        elif kind == "write" and nd > 0:
            ax = s % nd
            key = [slice(None)] * nd
            key[ax] = slice(None, None, 2) if r % 2 else slice(1, None)
            view = x[tuple(key)]
            mode = r % 3
            if mode == 0:
                view *= value                                     # in place through a view
            elif mode == 1:
                view[...] = value
            else:
                view += view[..., ::-1]                           # overlapping value
            if s % 4 == 0:
                y[...] = y * 2                                    # another base changes
        elif kind == "evaluate" and m is tnp:
            tracer.evaluate(x)
    return {"x": x, "x0": x0, "y": y}


def tolerance(dtype):
    return {numpy.dtype(numpy.float32): 2e-4, numpy.dtype(numpy.float64): 1e-9}.get(
        numpy.dtype(dtype), 0)


@settings(max_examples=45, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_lazy_program_equals_eager(program):
    shape, dtype, steps, seed = program
    rng = numpy.random.default_rng(seed)
    hx = numpy.round(rng.standard_normal(shape) * 4, 2).astype(dtype)
    hy = numpy.round(rng.standard_normal(shape) * 4, 2).astype(dtype)
    with numpy.errstate(all="ignore"):
        want = run(numpy, hx.copy(), hy.copy(), steps, seed)
        got = run(tnp, hx.copy(), hy.copy(), steps, seed)
    for name in want:
        w = numpy.asarray(want[name])
        g = got[name]
        assert isinstance(g, tracer.ndarray), (name, type(g))
        g = numpy.asarray(g)
        assert g.dtype == w.dtype, (name, g.dtype, w.dtype, steps)
        assert g.shape == w.shape, (name, g.shape, w.shape, steps)
        tol = tolerance(w.dtype)
        scale = max(1.0, float(numpy.nanmax(numpy.abs(w), initial=0.0))) if w.size else 1.0
        numpy.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale, equal_nan=True,
                                      err_msg=f"{name}: {steps}")
