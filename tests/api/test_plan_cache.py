"""The plan cache (a graph evaluated again with the same structure reuses its program) and the
cpu backend's host buffer pool: reuse must never change a result."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # the plan cache of recorded graphs


def _hits() -> int:
    return tracer.stats().plan_cache_hits


def test_same_structure_new_data_hits_and_is_correct(rng):
    def prog(x, y):
        return (np.exp(x - y.max()) * 2).sum(axis=0)
    hs = [rng.standard_normal((2, 9, 4)).astype(numpy.float32) for _ in range(3)]
    want = [(numpy.exp(a - b.max()) * 2).sum(axis=0) for a, b in hs]
    got = numpy.asarray(prog(np.asarray(hs[0][0]), np.asarray(hs[0][1])))
    h0 = _hits()
    for (a, b), w in zip(hs[1:], want[1:]):
        numpy.testing.assert_allclose(numpy.asarray(prog(np.asarray(a), np.asarray(b))), w,
                                      rtol=1e-6)
    assert _hits() == h0 + 2
    numpy.testing.assert_allclose(got, want[0], rtol=1e-6)


@pytest.mark.parametrize("c1, c2", [(2.0, 3.0), (0.0, -0.0), (1.0, 0.0), (numpy.nan, 1.0)])
def test_constants_are_part_of_the_key(c1, c2):
    h = numpy.array([-1.5, 0.0, -0.0, 2.0], numpy.float32)
    for c in (c1, c2, c1):
        got = numpy.asarray(np.asarray(h) * 1.0 + c)
        want = h * 1.0 + numpy.float32(c)
        numpy.testing.assert_array_equal(got, want)
        assert (numpy.signbit(got) == numpy.signbit(want)).all()


def test_same_buffer_twice_is_not_two_buffers(rng):
    a, b = rng.standard_normal((2, 50)).astype(numpy.float32)
    x, y = np.asarray(a), np.asarray(b)
    numpy.testing.assert_array_equal(numpy.asarray(x * x - 1), a * a - 1)
    numpy.testing.assert_array_equal(numpy.asarray(x * y - 1), a * b - 1)
    numpy.testing.assert_array_equal(numpy.asarray(y * y - 1), b * b - 1)


def test_layout_is_part_of_the_key(rng):
    h = rng.standard_normal((6, 8)).astype(numpy.float32)
    for src in (h, numpy.asfortranarray(h), h.copy()):
        numpy.testing.assert_array_equal(numpy.asarray(np.asarray(src) * 3 + 1), src * 3 + 1)


def test_disabled_passes_are_part_of_the_key(rng):
    h = rng.standard_normal((5, 5)).astype(numpy.float32)
    x = np.asarray(h)
    numpy.testing.assert_allclose(numpy.asarray((x + 1) * 2), (h + 1) * 2)
    with context(disable_passes={"fusion"}):
        plan_before = _hits()
        numpy.testing.assert_allclose(numpy.asarray((x + 1) * 2), (h + 1) * 2)
        assert _hits() == plan_before  # a new plan, not the fused one
        assert tracer.stats().interpreted_nodes > 0


def test_cached_plans_hold_slots_not_user_buffers():
    from tracer.ir import Slot
    from tracer import plans
    h = numpy.ones(1000, numpy.float32)
    numpy.testing.assert_array_equal(numpy.asarray(np.asarray(h) * 5.5 - 1), h * 5.5 - 1)
    assert plans._PLANS
    for entry in plans.entries():
        leaves = [n for n in entry.program.order if n.op == "input"]
        assert all(isinstance(n.attr("buf"), Slot) and n.attr("buf").value is None
                   for n in leaves)


def test_host_pool_reuses_a_dropped_result_and_never_a_held_one(rng):
    h = rng.standard_normal((512, 1024)).astype(numpy.float32)  # 2 MiB: pooled
    x = np.asarray(h)
    first = numpy.asarray(x * 2)
    held = first.ctypes.data
    second = numpy.asarray(x * 3)
    assert second.ctypes.data != held  # `first` still holds its block
    numpy.testing.assert_array_equal(first, h * 2)
    ptr = second.ctypes.data
    del second
    third = numpy.asarray(x * 4)
    assert third.ctypes.data == ptr  # the dropped block is handed out again
    numpy.testing.assert_array_equal(third, h * 4)
    numpy.testing.assert_array_equal(first, h * 2)


def test_a_new_size_class_of_a_known_kernel_counts_as_a_recompile():
    """Below executor.PARALLEL_MIN elements a kernel runs serial, above it parallel: two
    kernels of one body. A program whose sizes cross the line compiles the other one, and
    `recompiles` says so; sizes on the same side compile nothing."""
    from tracer.cuda_kernels.executor import PARALLEL_MIN
    with context(small_graph=0, compile_mode="sync"):
        for n in (PARALLEL_MIN // 16, PARALLEL_MIN // 8, PARALLEL_MIN * 2):
            before = tracer.stats().recompiles, tracer.stats().kernels_compiled
            h = numpy.arange(float(n))  # a body no other test compiles at either size
            a = np.asarray(h)
            numpy.testing.assert_allclose(numpy.asarray(np.hypot(a, 0.5) - np.log1p(a) * a),
                                          numpy.hypot(h, 0.5) - numpy.log1p(h) * h, rtol=1e-13)
            new = tracer.stats().recompiles - before[0]
            assert new == (1 if n > PARALLEL_MIN else 0)
