"""Programs the budget fuzzer (tests/fuzz_budget.py) found wrong, and a slice of its seeds: under
a budget between the results' size and NumPy's peak, tracer gives NumPy's answer within the
budget or refuses with MemoryBudgetError before running; never another error."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir.config import context
from tracer.ir.stats import STATS

from tests import fuzz_budget

pytestmark = pytest.mark.lazy


@pytest.fixture
def lazy():
    with context(small_graph=0, eager_size=0, compile_mode="sync"):
        yield


def _inputs(rng, dt, n=18, m=22, d=5):
    return {k: (rng.standard_normal(s) * 2).astype(dt)
            for k, s in (("x", (n, d)), ("y", (m, d)), ("z", (m,)))}


def test_a_split_through_a_partial_slice_of_an_outer_product(lazy, rng):
    """The split runs along D (the max's cut); y's side, independent of the split source, was
    chunked through its unit-axis reshape as if the axes matched (IndexError in row_block)."""
    h = _inputs(rng, numpy.float32)

    def prog(m, x, y, z):
        t = m.minimum(x[:, None, :], y[None, :, :]).max(-1) + z[None, :]
        return t[9:14].argmax(1)
    want = prog(numpy, **h)
    t = prog(np, **{k: np.asarray(v) for k, v in h.items()})
    try:
        with tracer.memory_budget(700, split_size=100):
            got = numpy.asarray(t)
    except tracer.MemoryBudgetError:
        got = numpy.asarray(t)  # refused before running: nothing lost
    numpy.testing.assert_array_equal(got, want)


def test_a_row_kernels_outputs_count_while_its_inputs_live(lazy, rng):
    """A multi-output fusion allocates all its outputs while its inputs are alive: the plan
    counted them after the inputs died, and the run went over the budget."""
    x, y = rng.standard_normal((11, 3)), rng.standard_normal((20, 3))

    def prog(m, x, y):
        t = (x[:, None, :] - y[None, :, :]).sum(-1)
        t = t - t.max(1, keepdims=True)
        return (m.exp(t) / m.exp(t).sum(1, keepdims=True)).min(0)
    want = prog(numpy, x, y)
    t = prog(np, np.asarray(x), np.asarray(y))
    with tracer.memory_budget(3395):
        got = numpy.asarray(t)
    assert STATS.measured_peak_bytes <= 3395
    numpy.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("seed", range(0, 600, 40))
def test_fuzzed_programs_under_budgets(lazy, seed):
    kind, detail = fuzz_budget.check(fuzz_budget.draw(seed))
    assert kind in ("ok", "refused"), detail
