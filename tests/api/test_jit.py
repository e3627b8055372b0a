"""tracer.jit: trace once per signature, replay the plan; fall back where replay cannot stand
for the function."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np


def _counted(f):
    calls = []

    def g(*a):
        calls.append(1)
        return f(*a)
    return g, calls


def test_replay_matches_numpy_and_skips_tracing(rng):
    def f(x, y):
        z = np.exp(x - x.max(axis=1, keepdims=True)) * y
        return z / z.sum(axis=1, keepdims=True), (x @ y.T).sum()
    g, calls = _counted(f)
    jf = tracer.jit(g)
    for k in range(4):
        hx, hy = rng.standard_normal((2, 5, 7))
        got = jf(hx, np.asarray(hy))
        e = numpy.exp(hx - hx.max(axis=1, keepdims=True)) * hy
        numpy.testing.assert_allclose(numpy.asarray(got[0]), e / e.sum(axis=1, keepdims=True),
                                      rtol=1e-12)
        numpy.testing.assert_allclose(numpy.asarray(got[1]), (hx @ hy.T).sum(), rtol=1e-12)
    assert len(calls) == 1  # traced once; three replays


def test_new_signature_traces_again(rng):
    g, calls = _counted(lambda x: x * 2 + 1)
    jf = tracer.jit(g)
    for shape, dtype in [((3,), numpy.float32), ((3,), numpy.float32), ((4, 2), numpy.float32),
                         ((3,), numpy.int64), ((4, 2), numpy.float32)]:
        h = numpy.arange(numpy.prod(shape)).reshape(shape).astype(dtype)
        got = numpy.asarray(jf(h))
        assert got.dtype == (h * 2 + 1).dtype
        numpy.testing.assert_array_equal(got, h * 2 + 1)
    assert len(calls) == 3


def test_functions_that_need_values_run_unjitted_each_time():
    def f(x):
        return x * 2 if float(x.sum()) > 0 else x * -1
    g, calls = _counted(f)
    jf = tracer.jit(g)
    for h in (numpy.ones(3), -numpy.ones(3), numpy.ones(3)):
        numpy.testing.assert_array_equal(numpy.asarray(jf(h)), h * 2 if h.sum() > 0 else -h)
    assert len(calls) == 3


def test_writes_into_an_argument_reach_it():
    def f(x):
        x[0] = 9.0
        return x + 1
    jf = tracer.jit(f)
    t = np.asarray(numpy.zeros(3))
    r = jf(t)
    numpy.testing.assert_array_equal(numpy.asarray(t), [9.0, 0.0, 0.0])
    numpy.testing.assert_array_equal(numpy.asarray(r), [10.0, 1.0, 1.0])
    t2 = np.asarray(numpy.ones(3))
    jf(t2)
    numpy.testing.assert_array_equal(numpy.asarray(t2), [9.0, 1.0, 1.0])


def test_captured_arrays_are_frozen_at_the_first_call():
    w = numpy.array([1.0, 2.0])
    jf = tracer.jit(lambda x: x * w)
    numpy.testing.assert_array_equal(numpy.asarray(jf(numpy.ones(2))), [1.0, 2.0])
    w[:] = 5.0  # as with jax.jit, the traced plan keeps the value it saw
    numpy.testing.assert_array_equal(numpy.asarray(jf(numpy.ones(2))), [1.0, 2.0])


def test_lazy_and_view_arguments(rng):
    jf = tracer.jit(lambda x, y: (x * y).sum(axis=0))
    h = rng.standard_normal((4, 6))
    t = np.asarray(h)
    for a, b in [(t, t), (t.T, t.T), (t[1:] * 2, t[:3])]:
        want = (numpy.asarray(a) * numpy.asarray(b)).sum(axis=0)
        numpy.testing.assert_allclose(numpy.asarray(jf(a, b)), want, rtol=1e-12)


def test_non_array_results_fall_back():
    jf = tracer.jit(lambda x: (x.shape, x * 2))
    shape, y = jf(numpy.ones(2))
    assert shape == (2,)
    numpy.testing.assert_array_equal(numpy.asarray(y), [2.0, 2.0])


@pytest.mark.parametrize("n_ops", [200])
def test_replay_of_a_long_chain(n_ops):
    def f(x, y):
        for _ in range(n_ops // 2):
            x = x * 1.0001 + y
        return x
    jf = tracer.jit(f)
    h, g = numpy.arange(10.0), numpy.ones(10)
    want = h
    for _ in range(n_ops // 2):
        want = want * 1.0001 + g
    for k in range(2):
        numpy.testing.assert_allclose(numpy.asarray(jf(h, g)), want, rtol=1e-13)


def test_new_sizes_compile_nothing(rng):
    """Kernels are shape-generic: sizes are arguments, so the same program on new sizes (same
    ranks, dtypes and broadcast pattern) compiles no kernel."""
    def prog(x, y):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True) + (x * y).sum(axis=0)
    numpy.asarray(prog(np.asarray(rng.standard_normal((5, 7))),
                       np.asarray(rng.standard_normal((5, 7)))))
    before = tracer.stats().kernels_compiled, tracer.stats().recompiles
    for shape in [(9, 7), (3, 3), (40, 17)]:
        hx, hy = rng.standard_normal((2,) + shape)
        got = numpy.asarray(prog(np.asarray(hx), np.asarray(hy)))
        e = numpy.exp(hx - hx.max(axis=1, keepdims=True))
        numpy.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True) + (hx * hy).sum(0),
                                      rtol=1e-12)
    assert (tracer.stats().kernels_compiled, tracer.stats().recompiles) == before


@pytest.mark.lazy
def test_debug_level_one_logs_new_kernels_and_each_phase(capsys):
    from tracer.ir.config import context
    h = numpy.arange(7.0)
    with context(debug=1):
        numpy.asarray(np.arctan(np.asarray(h)) * 3 - 2)  # a structure no other test compiles
        numpy.asarray(np.arctan(np.asarray(h + 1)) * 3 - 2)
    err = capsys.readouterr().err.splitlines()
    evals = [line for line in err if "evaluated" in line]
    assert any("new kernel loop_arctan_mul_sub_f64_" in line for line in err)
    assert "new plan" in evals[0] and "cached plan" in evals[1]
    for phase in ("trace", "optimize", "codegen", "load", "compile", "run"):
        assert f" {phase} " in evals[0]
    assert tracer.stats().load_s >= 0.0


def test_a_long_function_of_small_arrays_replays_its_compiled_plan():
    """A jit of many ops on tiny arrays (W5) replays fused kernels, not NumPy op by op: its
    compile pays back over the calls (6 ms a call op by op, 0.06 ms compiled, 1000 ops)."""
    from tracer.ir.config import context

    def f(x, y):
        for _ in range(20):
            x = x * 1.0001 + y
        return x
    hx, hy = numpy.ones(10, numpy.float32), numpy.full(10, 0.5, numpy.float32)
    with context(small_graph=4096, compile_mode="sync"):
        jf = tracer.jit(f)
        jf(hx, hy)
        before = tracer.stats().small_graphs, tracer.stats().kernels_launched
        got = jf(hx, hy)
        assert tracer.stats().small_graphs == before[0]
        assert tracer.stats().kernels_launched > before[1]
        tiny = tracer.jit(lambda x: x * 2 + 1)  # a few ops: NumPy op by op, as evaluate does
        tiny(hx)
        tiny(hx)
        assert tracer.stats().small_graphs == before[0] + 2
    numpy.testing.assert_allclose(numpy.asarray(got), f(hx, hy), rtol=1e-6)
