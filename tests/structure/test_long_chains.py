"""Issue 19 item 4: a value updated in a loop makes a chain of 100,000 nodes before its one
evaluation (flush_nodes raised so nothing flushes it on the way), and that chain evaluates with
no recursion and no quadratic walk: op by op by NumPy (a small graph), and compiled into kernels
of at most MAX_GROUP ops each (a fifth of the chain: the suite's time; 100,000 nodes compile in
about 10 s, most of it in linear passes). The bounds are loose, for a loaded machine: on an idle
one the small graph takes about 0.35 s."""
from __future__ import annotations

import math
import time

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir import toposort
from tracer.ir.config import SMALL_GRAPH, context
from tracer.opt.fusion import MAX_GROUP

pytestmark = pytest.mark.lazy  # kernel and node counts of recorded graphs

STEPS = 50_000  # two nodes a step


def _chain(np_, shape: tuple[int, ...], steps: int = STEPS):
    """r = r * 1.0001 + x, `steps` times, in place where r is an array (`r += ...`)."""
    x = np_.asarray(numpy.linspace(0.5, 1, math.prod(shape)).reshape(shape))
    r = np_.zeros(shape)
    for _ in range(steps):
        if shape:
            r *= 1.0001
            r += x
        else:
            r = r * 1.0001 + x
    return r


def _evaluate(r, steps: int = STEPS) -> tuple[numpy.ndarray, float]:
    assert len(toposort([r._var.node])) >= 2 * steps
    t0 = time.perf_counter()
    got = numpy.asarray(r)
    return got, time.perf_counter() - t0


@pytest.mark.parametrize("shape", [(8,), ()])
def test_a_100000_node_chain_runs_op_by_op(shape):
    with context(flush_nodes=10 * STEPS, small_graph=SMALL_GRAPH):
        runs = tracer.stats().small_graphs
        got, seconds = _evaluate(_chain(np, shape))
        assert tracer.stats().small_graphs == runs + 1
    numpy.testing.assert_array_equal(got, _chain(numpy, shape))
    assert seconds < 10


@pytest.mark.slow
def test_a_20000_node_chain_compiles_to_bounded_kernels():
    steps = STEPS // 5
    with context(flush_nodes=10 * STEPS, small_graph=0):
        launched = tracer.stats().kernels_launched
        got, seconds = _evaluate(_chain(np, (8,), steps), steps)
        kernels = tracer.stats().kernels_launched - launched
    assert kernels >= 2 * steps // MAX_GROUP  # no giant kernel
    numpy.testing.assert_allclose(got, _chain(numpy, (8,), steps), rtol=1e-12)
    assert seconds < 60
