"""tracer.memory_budget: sizes, nesting, splitting the three examples under a budget a tenth of
their unbudgeted plan (planned and measured peaks within it, results as NumPy's), and a budget
that cannot be met raising before anything runs."""
from __future__ import annotations

import math

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.opt import splitter
from tracer.budget import active, parse_size
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # budgets split the recorded graph

MiB = 2**20


@pytest.mark.parametrize("text,want", [(1000, 1000), ("512 MiB", 512 * MiB), ("2GB", 2 * 10**9),
                                       ("1.5 GiB", int(1.5 * 2**30)), ("64kib", 64 * 1024),
                                       (" 10 b ", 10)])
def test_sizes(text, want):
    assert parse_size(text) == want


def test_percent_of_free_memory():
    import psutil
    free = psutil.virtual_memory().available
    assert 0.4 * free < parse_size("50%") < 0.6 * free


@pytest.mark.parametrize("bad,err", [("lots", ValueError), ("12 parsecs", ValueError),
                                     (0, ValueError), (-5, ValueError), ("150%", ValueError),
                                     (None, TypeError), (True, TypeError)])
def test_bad_sizes_raise_at_the_call(bad, err):
    with pytest.raises(err, match="memory_budget"):
        tracer.memory_budget(bad)


def test_nested_budgets_innermost_wins():
    assert active() is None
    with tracer.memory_budget("1 GiB") as outer:
        assert active().limit == outer.limit == 2**30
        with tracer.memory_budget("1 MiB", split_size="64 KiB"):
            assert active().limit == MiB and active().split_size == 64 * 1024
        assert active().limit == 2**30 and active().split_size == 2**28
    assert active() is None


def _knn(m, x, y):
    d = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    return d.min(1), d.argmin(1)


def _attention(m, q, k, v):
    s = q @ k.T / math.sqrt(q.shape[1])
    e = m.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


def _gaussian(m, x, z, w):
    return m.exp(-((x[:, None, :] - z[None, :, :]) ** 2).sum(-1) / 2.0) @ w


def _data(rng, *shapes):
    return [rng.standard_normal(s).astype(numpy.float32) for s in shapes]


EXAMPLES = {  # program, input shapes, budget
    "knn": (_knn, [(1200, 16), (1000, 16)], 256 * 1024),
    "attention": (_attention, [(600, 32), (600, 32), (600, 32)], 128 * 1024),
    "gaussian": (_gaussian, [(1200, 8), (900, 8), (900,)], 256 * 1024),
}


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_examples_split_within_a_tenth_of_their_plan(name, rng):
    prog, shapes, limit = EXAMPLES[name]
    host = _data(rng, *shapes)
    args = [np.asarray(h) for h in host]
    outs = prog(np, *args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    unbudgeted = tracer.explain(*outs).peak_bytes
    assert unbudgeted >= 10 * limit
    tracer.reset_stats()
    with tracer.memory_budget(limit):
        tracer.evaluate(*outs)
    s = tracer.stats()
    assert s.split_chunks > 1
    assert 0 < s.planned_peak_bytes <= limit
    assert 0 < s.measured_peak_bytes <= limit
    want = prog(numpy, *[h.astype(numpy.float64) for h in host])
    want = want if isinstance(want, tuple) else (want,)
    for got, ref in zip(outs, want):
        got = numpy.asarray(got)
        if got.dtype.kind == "i":
            assert (got == ref).mean() > 0.999  # argmin: ties under float32 rounding aside
        else:
            assert numpy.abs(got - ref).max() <= 1e-5 * numpy.abs(ref).max()


def test_self_attention_splits_on_the_queries(rng):
    """Q, K and V all come from X: X's rows are not independent, Q's are once K and V are
    realized."""
    x, wq, wk, wv = _data(rng, (500, 16), (16, 16), (16, 16), (16, 16))
    X, Wq, Wk, Wv = map(np.asarray, (x, wq, wk, wv))
    out = _attention(np, X @ Wq, X @ Wk, X @ Wv)
    split = splitter.find([out._node])
    assert split is not None and split.source.op != "input"
    tracer.reset_stats()
    with tracer.memory_budget(200 * 1024):
        got = numpy.asarray(out)
    assert tracer.stats().split_chunks > 1 and tracer.stats().measured_peak_bytes <= 200 * 1024
    x64 = x.astype(numpy.float64)
    want = _attention(numpy, x64 @ wq, x64 @ wk, x64 @ wv)
    assert numpy.abs(got - want).max() <= 1e-5 * numpy.abs(want).max()


def test_within_budget_runs_unsplit_and_measures(rng):
    a = np.asarray(_data(rng, (300, 400))[0])
    r = (np.exp(a) * 2 + 1).sum(axis=1)
    tracer.reset_stats()
    with tracer.memory_budget("1 GiB"):
        tracer.evaluate(r)
    assert tracer.stats().split_chunks == 0
    assert tracer.stats().measured_peak_bytes <= tracer.stats().planned_peak_bytes + 4096


def test_impossible_budget_raises_before_running_and_loses_nothing(rng):
    h = _data(rng, (400, 300), (300, 500))
    a, b = map(np.asarray, h)
    r = np.tanh(a @ b).argmax()  # over the flattened product: no rows to split
    launched = tracer.stats().kernels_launched
    with pytest.raises(tracer.MemoryBudgetError) as e, tracer.memory_budget("100 KiB"):
        int(r)
    msg = str(e.value)
    assert "cannot be split" in msg and "made by matmul" in msg
    assert "float32[1, 400, 500]" in msg and "smallest budget that would work" in msg
    assert tracer.stats().kernels_launched == launched  # nothing ran
    assert int(r) == numpy.tanh(h[0] @ h[1]).argmax()


def test_budget_below_one_row_names_the_smallest_that_works(rng):
    x, y = map(np.asarray, _data(rng, (300, 8), (2000, 8)))
    d, _ = _knn(np, x, y)
    with pytest.raises(tracer.MemoryBudgetError, match="single rows") as e, \
            tracer.memory_budget(100):
        tracer.evaluate(d)
    smallest = int(str(e.value).rsplit("(", 1)[1].split()[0])
    with tracer.memory_budget(smallest):
        tracer.evaluate(d)
    assert tracer.stats().measured_peak_bytes <= smallest


def test_jit_under_a_budget_splits(rng):
    x, y = _data(rng, (800, 16), (700, 16))
    f = tracer.jit(lambda a, b: _knn(np, a, b)[0])
    with tracer.memory_budget(256 * 1024):
        got = numpy.asarray(f(x, y))
    assert tracer.stats().measured_peak_bytes <= 256 * 1024
    want = _knn(numpy, x.astype(numpy.float64), y.astype(numpy.float64))[0]
    assert numpy.abs(got - want).max() <= 1e-5 * numpy.abs(want).max()


@pytest.mark.cuda
def test_budget_on_the_cuda_backend_under_the_simulator():
    """The same split on the cuda backend (tiny sizes: the simulator runs a thread at a time);
    chunk results are assembled on the device (tests/api/test_budget_device.py)."""
    from tracer.ir.config import context
    rng = numpy.random.default_rng(3)
    x, y = _data(rng, (4, 3), (20, 3))
    with context(backend="cuda", cuda_sim=True):
        X, Y = np.asarray(x), np.asarray(y)
        d, i = _knn(np, X, Y)  # (both read the N x M distances: one alone computes them inline)
        assert tracer.explain(d, i).peak_bytes > 160
        tracer.reset_stats()
        with tracer.memory_budget(160):
            tracer.evaluate(d, i)
            got = numpy.asarray(d)
    s = tracer.stats()
    assert s.split_chunks > 1 and 0 < s.measured_peak_bytes <= 160
    want = _knn(numpy, x.astype(numpy.float64), y.astype(numpy.float64))[0]
    assert numpy.abs(got - want).max() <= 1e-5 * numpy.abs(want).max()


def test_live_intermediates_are_not_kept_under_a_budget(rng):
    """Outside a budget, a live array computed on the way (d2 here) is kept; inside, keeping
    it would hold the N x M matrix the split avoids, so it stays lazy."""
    x, y = map(np.asarray, _data(rng, (600, 16), (500, 16)))
    d2 = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    nearest = d2.min(1)
    with tracer.memory_budget(64 * 1024):
        tracer.evaluate(nearest)
    assert d2._var.node.op != "input" and tracer.stats().measured_peak_bytes <= 64 * 1024
    numpy.testing.assert_allclose(numpy.asarray(d2).min(1), numpy.asarray(nearest), rtol=1e-5)


def test_reductions_over_the_split_rows_combine_in_order(rng):
    """A full sum, a max, the mean of row minima (computed after the combined sum) and a
    column minimum all reduce over X's rows: each chunk reduces its rows and the partials
    combine with the op's combiner."""
    x, y = _data(rng, (900, 16), (700, 16))
    X, Y = np.asarray(x), np.asarray(y)
    d = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    outs = (d.sum(), d.max(), d.min(1).mean(), d.min(0), (d > 30).any(axis=0))
    assert tracer.explain(*outs).peak_bytes >= 10 * 200 * 1024
    tracer.reset_stats()
    with tracer.memory_budget(200 * 1024):
        tracer.evaluate(*outs)
    assert tracer.stats().split_chunks > 1
    assert tracer.stats().measured_peak_bytes <= 200 * 1024
    D = ((x[:, None, :].astype(numpy.float64) - y[None]) ** 2).sum(-1)
    for got, want in zip(outs, (D.sum(), D.max(), D.min(1).mean(), D.min(0), (D > 30).any(0))):
        got = numpy.asarray(got)
        assert got.shape == want.shape
        if want.dtype == bool:
            assert (got == want).mean() > 0.999
        else:
            assert numpy.abs(got - want).max() <= 1e-5 * numpy.abs(want).max()


def test_a_slice_whole_along_the_split_axis_is_cut_to_the_chunk(rng):
    """A chunk's slice of a value whole along the split axis (exp(x).T[::-1]: the rows are
    its columns) takes the chunk's rows, as the verifier checks."""
    h = rng.standard_normal((4000, 8))
    with context(verify=True), tracer.memory_budget(64 * 1024):
        got = numpy.asarray((np.exp(np.asarray(h)).T[::-1] + 1).sum(0))
    assert tracer.stats().split_chunks > 1
    numpy.testing.assert_allclose(got, (numpy.exp(h).T[::-1] + 1).sum(0), rtol=1e-12)


def test_the_split_is_the_optimizers_and_plans_under_a_budget_stay_apart(rng):
    """The pipeline's tensor_splitter stage seeks the split only under a budget; a plan made
    without one (no split) is not reused under one; switched off, nothing splits."""
    x, y = map(np.asarray, _data(rng, (600, 16), (500, 16)))
    assert ("tensor_splitter", 0.0, False) in tracer.explain(_knn(np, x, y)[0]).passes
    tracer.evaluate(_knn(np, x, y)[0])  # planned and cached without a budget
    d = _knn(np, x, y)[0]
    with tracer.memory_budget(64 * 1024):
        ran = {p[0]: p[1] for p in tracer.explain(d).passes}
        assert ran["tensor_splitter"] > 0
        with pytest.raises(tracer.MemoryBudgetError, match="cannot be split"), \
                context(disable_passes={"tensor_splitter"}):
            tracer.evaluate(d)
        tracer.reset_stats()
        tracer.evaluate(d)
    assert tracer.stats().split_chunks > 1
    assert tracer.stats().measured_peak_bytes <= 64 * 1024
