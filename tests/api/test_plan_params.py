"""Plan parameters (issue 19 item 2): a graph evaluated again with other scalar constants, slice
starts or integer indices reuses one plan, with those values as runtime parameters, and gives
NumPy's values, bit for bit the values of a plan made with them as constants."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer import plans
from tracer.ir import toposort
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # plan-cache hits and kernels of recorded loops


@pytest.fixture(autouse=True)
def fresh_plans():
    """Each test starts with no plan: a graph's first sighting is its test's own."""
    saved = dict(plans._PLANS)
    plans._PLANS.clear()
    yield
    plans._PLANS.clear()
    plans._PLANS.update(saved)


def _same(got, want):
    got = numpy.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_array_equal(got, want)
    assert (numpy.signbit(got) == numpy.signbit(want)).all()


def _lifted() -> list:
    """The lifted plans in the cache."""
    return [f.lifted for f in plans._PLANS.values() if f.lifted is not None]


def _misses() -> int:
    """Evaluations that planned."""
    s = tracer.stats()
    return s.evaluations - s.plan_cache_hits - s.small_graphs


H = numpy.random.default_rng(0).standard_normal(4000)


def _slide(x, k, c):  # slice bounds and a constant change
    return x[k:k + 1500] * c - 0.25


def _index(x, y, i):  # an integer index of a pending value
    return y * 0.5 + x[i]


def _strided(x, k, c):  # a negative step, bounds from the end
    return (numpy if type(x) is numpy.ndarray else np).maximum(x[-1 - k:-2101 - k:-3], c)


def _rows(x, k, c):  # two axes, one start moves
    return (x.reshape(40, 100)[k:k + 7, 3:90:2] + c).sum(axis=1)


@pytest.mark.parametrize("case, args", [
    (_slide, [(k, 1.0 + k / 8) for k in range(8)]),
    (_strided, [(k, 0.1 * k - 0.3) for k in range(6)]),
    (_rows, [(k, float(k)) for k in range(6)]),
])
def test_loops_with_changing_values_match_numpy_and_reuse_one_plan(case, args):
    x = np.asarray(H)
    for it, a in enumerate(args):
        misses, compiled = _misses(), tracer.stats().kernels_compiled
        got, want = numpy.asarray(case(x, *a)), case(H, *a)
        if case is _rows:  # (a float sum: NumPy's pairwise order is not the kernel's)
            numpy.testing.assert_allclose(got, want, rtol=1e-13)
        else:
            _same(got, want)
        if it >= 2:  # the first sighting and the one that lifts plan; no later one does
            assert _misses() == misses
            assert tracer.stats().kernels_compiled == compiled
    assert len(plans._PLANS) == 1 and len(_lifted()) == 1


def test_an_integer_index_is_a_parameter():
    x = np.asarray(H) + 0
    y, hy = np.zeros(3000), numpy.zeros(3000)
    hits = []
    for i in range(12):
        y, hy = _index(x, y, i), _index(H, hy, i)
        tracer.evaluate(y)
        hits.append(tracer.stats().plan_cache_hits)
        _same(y, hy)
    # the first two evaluations plan (y's graph differs while x is pending: x realizes in the
    # first); every later one is a hit
    assert numpy.diff(hits)[2:].tolist() == [1] * 9
    (entry,) = _lifted()
    assert any(n.op == "dynamic_slice" for n in entry.program.order)


def test_lifted_plan_gives_the_bits_of_a_plan_with_constants():
    """Sums included: the lifted plan runs the same reductions in the same order."""
    x = np.asarray(H)
    def f(k, c):
        return [np.exp(x[k:k + 999] * c), (x[k:k + 999] * c).sum(), np.sqrt(x[k:k + 9] + c)[:5]]
    for k, c in [(1, 0.5), (2, 0.75), (3, -1.25), (7, numpy.nan), (8, -0.0)]:
        lifted = [numpy.asarray(v) for v in tracer.evaluate(*f(k, c))]
    assert len(_lifted()) == 1
    plans._PLANS.clear()
    exact = [numpy.asarray(v) for v in tracer.evaluate(*f(8, -0.0))]
    assert not _lifted()
    for a, b in zip(lifted, exact):
        assert a.tobytes() == b.tobytes()


def _const_values(entry) -> set:
    """The constants of a plan's optimized graph, fusion bodies included."""
    out, todo = set(), list(toposort(entry.res.roots))
    while todo:
        n = todo.pop()
        if n.op == "const":
            out.add(n.attr("value"))
        elif n.op == "fusion":
            todo += toposort([n.attr("body")])
    return out


def test_only_values_that_change_are_lifted():
    x = np.asarray(H)
    for c in (2.0, 3.0, 4.0):
        _same(numpy.asarray(x[5:50] * c + 7.0), H[5:50] * c + 7.0)
    (entry,) = _lifted()
    assert [p.shape for p in entry.params] == [()]  # c; not the start 5, nor 7.0
    assert 7.0 in _const_values(entry) and 2.0 not in _const_values(entry)


def test_a_value_that_changes_later_widens_the_lifted_set():
    x = np.asarray(H)
    runs = [(0.5, 1), (1.5, 1), (2.5, 1), (2.5, 4), (3.5, 9)]
    for c, k in runs:
        _same(numpy.asarray(x[k:k + 100] * c), H[k:k + 100] * c)
    (entry,) = _lifted()
    assert len(entry.params) == 2
    hits = tracer.stats().plan_cache_hits
    _same(numpy.asarray(x[11:111] * 7.5), H[11:111] * 7.5)
    assert tracer.stats().plan_cache_hits == hits + 1


def test_the_first_values_keep_their_own_plan():
    x = np.asarray(H)
    for c in (2.0, 3.0, 2.0):
        _same(numpy.asarray(x * c), H * c)
    fam, = plans._PLANS.values()
    assert list(fam.exact) and fam.lifted is not None


def test_constants_of_every_kind_are_lifted_bit_for_bit():
    hi = numpy.arange(-6, 6, dtype=numpy.int32)
    hf = numpy.linspace(-2, 2, 12, dtype=numpy.float32)
    hc = (hf + 1j * hf[::-1]).astype(numpy.complex64)
    xi, xf, xc = np.asarray(hi), np.asarray(hf), np.asarray(hc)
    for c in (3, -7, 2**31 - 1, 0):
        _same(numpy.asarray(xi * c + 1), hi * c + 1)
    for c in (0.0, -0.0, numpy.inf, -numpy.nan, 1e-45, 3.4e38):
        with numpy.errstate(all="ignore"):
            _same(numpy.asarray(xf / c + xf), hf / c + hf)
    for c in (1j, -0.0 - 0.0j, 2.5 + numpy.inf * 1j):
        got, want = numpy.asarray(xc * c), hc * c
        assert got.dtype == want.dtype
        numpy.testing.assert_array_equal(got, want)
    for c in (True, False, True):
        _same(numpy.asarray(np.logical_and(xf > 0, c)), numpy.logical_and(hf > 0, c))
    assert len(_lifted()) == 4


def test_a_lifted_constant_that_is_a_root():
    for c in (1.5, 2.5, -3.0):
        got = numpy.asarray(np.full((), c) + 0)
        _same(got, numpy.full((), c) + 0)


def test_jit_replays_a_lifted_plan_with_its_own_values():
    x = np.asarray(H[:300])
    for c in (1.0, 2.0):  # the family is lifted before the trace
        numpy.asarray(x[2:200] * c)

    @tracer.jit
    def f(a):
        return a[2:200] * 3.0
    for _ in range(3):
        _same(numpy.asarray(f(x)), H[2:200] * 3.0)


def test_nothing_is_lifted_under_a_memory_budget():
    x = np.asarray(H)
    with tracer.memory_budget("1 GiB"):
        for k in range(4):
            _same(numpy.asarray(x[k:k + 10] * k), H[k:k + 10] * k)
    assert not _lifted()


def test_a_lifted_slice_is_a_view_in_the_graph_and_written_values_stay_numpys():
    h = H[:400].copy()
    a = np.asarray(h.copy())
    for k in range(6):
        a[k + 1:k + 50] = a[k:k + 49] * 0.5 + k  # a read through a moving slice, then a write
        h[k + 1:k + 50] = h[k:k + 49] * 0.5 + k
        _same(numpy.asarray(a), h)


def test_lift_all_runs_every_graph_through_parameters():
    x = np.asarray(H)
    with context(lift="all"):
        _same(numpy.asarray(x[3:30:2] * 4.0 - 1.0), H[3:30:2] * 4.0 - 1.0)
    (entry,) = _lifted()
    assert len(entry.params) == 3


def test_simulated_cuda_dynamic_slice():
    h = numpy.arange(60, dtype=numpy.float32).reshape(6, 10)
    with context(backend="cuda", cuda_sim=True):
        x = np.asarray(h)
        for k in range(4):
            _same(numpy.asarray(x[k:k + 2, 9 - k::-2] * (k + 0.5)),
                  h[k:k + 2, 9 - k::-2] * (k + 0.5))
    assert _lifted()


def test_lift_none_plans_each_new_value_and_ignores_a_lifted_plan():
    x = np.asarray(H)
    for c in (1.0, 2.0, 3.0):  # lifted from the second
        numpy.asarray(x[1:9] * c)
    with context(lift="none"):
        for c in (4.0, 5.0):
            misses = _misses()
            _same(numpy.asarray(x[1:9] * c), H[1:9] * c)
            assert _misses() == misses + 1
    fam, = plans._PLANS.values()
    assert len(fam.exact) == 3
