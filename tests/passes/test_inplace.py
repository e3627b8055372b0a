"""Buffer assignment for updates (cpu): slice writes and scatters write into their operand's
buffer when nothing else still reads the old value, and copy only when something does."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph


def test_row_loop_through_a_reshape_copies_nothing():
    buf = np.zeros((100, 50), np.float32)
    view = buf.reshape(10, 10, 50)
    rows = numpy.arange(100 * 50, dtype=numpy.float32).reshape(100, 50)
    for i in range(100):
        view[i // 10, i % 10] = rows[i]
    plan = tracer.explain(buf)
    assert plan.bytes_copied == 0 and plan.peak_bytes == 0 and plan.kernels == []
    numpy.testing.assert_array_equal(numpy.asarray(buf), rows)


def test_a_live_reader_of_the_old_value_forces_one_copy():
    h = numpy.arange(12.0).reshape(3, 4)
    a = np.asarray(h) * 2            # computed here: a candidate for in-place writes
    before = a * 1                   # still reads a's old value after the write
    a[1] = -1.0
    plan = tracer.explain(a, before)
    assert plan.bytes_copied == a.nbytes
    got_a, got_before = tracer.evaluate(a, before)
    want = h * 2
    numpy.testing.assert_array_equal(numpy.asarray(got_before), want)
    want[1] = -1.0
    numpy.testing.assert_array_equal(numpy.asarray(got_a), want)


def test_scatter_into_a_computed_buffer_is_in_place():
    h = numpy.arange(6.0)
    a = np.asarray(h) * 1.5
    np.add.at(a, [0, 0, 5], 1.0)
    a[[2, 3]] = 7.0
    assert tracer.explain(a).bytes_copied == 0
    want = h * 1.5
    numpy.add.at(want, [0, 0, 5], 1.0)
    want[[2, 3]] = 7.0
    numpy.testing.assert_array_equal(numpy.asarray(a), want)


def test_writes_into_an_evaluated_array_leave_earlier_snapshots_alone():
    a = np.asarray(numpy.arange(5.0)) + 1
    snap = numpy.asarray(a)          # evaluates a: later writes must not reach this snapshot
    a[[0, 4]] = 0.0
    a[1:3] = 9.0
    numpy.testing.assert_array_equal(snap, numpy.arange(5.0) + 1)
    numpy.testing.assert_array_equal(numpy.asarray(a), [0.0, 9.0, 9.0, 4.0, 0.0])


def test_fill_of_negative_zero_keeps_its_sign():
    got = numpy.asarray(np.full((4,), -0.0))
    assert numpy.signbit(got).all()


def test_indexing_benchmark_quick_run(tmp_path):
    from bench import bench_indexing
    out = tmp_path / "indexing.md"
    assert bench_indexing.main(["--quick", "--out", str(out)]) == 0
    text = out.read_text()
    assert "row writes" in text and text.count("add.at") == 2 and "bytes_copied 0" in text


def test_dead_intermediates_are_released_during_the_run():
    """Fusion off: twelve 1 MiB temporaries in a chain; each is let go once read, so the run
    holds about two at a time (measured by tracemalloc, which sees NumPy's allocations)."""
    import tracemalloc
    from tracer.ir.config import context
    h = numpy.linspace(0, 1, 1 << 17)  # 1 MiB of float64
    x = np.asarray(h)
    with context(disable_passes={"fusion"}):
        y = x
        for k in range(6):
            y = y * 1.01 + k
        plan = tracer.explain(y)
        assert plan.peak_bytes <= 2 * h.nbytes
        tracemalloc.start()
        got = tracer.evaluate(y)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 4.5 * h.nbytes  # two live temporaries plus the result, with slack
    want = h
    for k in range(6):
        want = want * 1.01 + k
    numpy.testing.assert_allclose(numpy.asarray(got), want, rtol=1e-15)


def test_buffer_assignment_marks_updates_and_switching_it_off_copies():
    from tracer.ir.config import context
    from tracer.ir.verifier import verify
    from tracer.opt.buffer_assignment import buffer_assignment
    from tracer import graph as G
    x = G.leaf(numpy.ones((4, 3), numpy.float32))
    made = G.elementwise("multiply", (x, x))
    row = G.leaf(numpy.zeros((1, 3), numpy.float32))
    w1 = G.setslice(made, row, ((0, 1, 1), (0, 3, 1)))
    w2 = G.setslice(w1, row, ((2, 3, 1), (0, 3, 1)))
    into_input = G.setslice(x, row, ((1, 2, 1), (0, 3, 1)))
    out = buffer_assignment([w2, into_input])
    verify(out)
    assert out[0].attr("inplace") and out[0].inputs[0].attr("inplace")
    assert not out[1].attr("inplace")  # the user's buffer is never written
    h = numpy.arange(12.0).reshape(4, 3)
    a = np.asarray(h) * 3
    a[1] = 0.0
    assert tracer.explain(a).bytes_copied == 0
    with context(disable_passes={"buffer_assignment"}):
        assert tracer.explain(a).bytes_copied == a.nbytes
        got = numpy.asarray(a * 1)
    want = h * 3
    want[1] = 0.0
    numpy.testing.assert_array_equal(got, want)


def test_elementwise_kernel_writes_over_its_dying_input():
    from tracer.ir import toposort
    h = numpy.arange(12.0).reshape(3, 4)
    x = np.asarray(h)

    def reuse_marks(*arrays):
        plan = tracer.explain(*arrays)
        return [n.attr("reuse") for n in toposort(plan.graph_after.roots) if n.op == "fusion"]

    y = (x @ x.T) * 2 + 1
    assert reuse_marks(y) == [0] and tracer.explain(y).peak_bytes == 0
    m = x @ x.T
    z = m * 2 + 1
    assert reuse_marks(z, m) == [None]  # m is also a result: it must stay
    t = (x @ x.T).T * 2          # read through a transpose: element order differs
    assert reuse_marks(t) == [None]
    want = (h @ h.T) * 2 + 1
    got_y, got_z, got_m, got_t = tracer.evaluate(y, z, m, t)
    numpy.testing.assert_array_equal(numpy.asarray(got_y), want)
    numpy.testing.assert_array_equal(numpy.asarray(got_z), want)
    numpy.testing.assert_array_equal(numpy.asarray(got_m), h @ h.T)
    numpy.testing.assert_array_equal(numpy.asarray(got_t), (h @ h.T).T * 2)


def test_benchmark_suite_quick_run(tmp_path):
    """The suite at a tiny scale: every installed peer runs each program and agrees with
    float64 NumPy; tracer's row is there."""
    from bench import suite
    out = tmp_path / "suite.md"
    assert suite.main(["--scale", "1e-4", "--repeat", "1", "--only", "W1',W2 sum",
                       "--out", str(out)]) == 0
    rows = [r.split("|") for r in out.read_text().splitlines() if r.startswith("| W")]
    assert {r[2].strip() for r in rows} >= {"numpy", "tracer"}
    assert all(float(r[-2]) < 1e-5 for r in rows)


def test_a_producer_writes_into_the_slice_it_is_assigned_to():
    """`c[1:300] = a[1:300] * 2`: the product is computed straight into c's rows (the memory
    plan's `into`), so no (299, 256) temporary is planned or made, and nothing is copied."""
    from tracer.ir import toposort
    h = numpy.random.default_rng(0).standard_normal((512, 256)).astype(numpy.float32)
    a = tracer.evaluate(np.asarray(h) * 1)
    c = np.zeros((512, 256), np.float32)
    c[1:300] = a[1:300] * 2
    plan = tracer.explain(c)
    (w,) = [n for n in toposort(plan.graph_after.roots) if n.op == "setslice"]
    assert w.attr("inplace") and w.attr("into")
    assert plan.peak_bytes == 0 and plan.bytes_copied == 0  # the temporary was 306176 bytes
    launched = tracer.stats().kernels_launched
    got = numpy.asarray(c)
    assert tracer.stats().kernels_launched - launched == 1  # (the zeros: np.full, no kernel)
    want = numpy.zeros((512, 256), numpy.float32)
    want[1:300] = h[1:300] * 2
    numpy.testing.assert_array_equal(got, want)


def test_a_producer_writes_into_its_slice_only_when_nothing_reads_the_base_in_between():
    """In an order where the base is read after the producer ran and before the write, the
    producer must not write into the base early: it keeps its temporary."""
    from tracer.ir import toposort
    from tracer.ir.config import context
    from tracer.opt.liveness import Storage
    x = tracer.evaluate(np.asarray(numpy.ones((12, 4), numpy.float32)) * 1)
    c = x * 2
    total = c.sum(axis=0)
    c[2:6] = x[2:6] * 3
    with context(disable_passes={"horizontal_fusion", "multi_output_fusion"}):
        roots = tracer.explain(c, total).graph_after.roots
    order = toposort(roots)
    w, y = roots
    v = w.inputs[1]
    assert v.op == "fusion" and y.op == "fusion"
    rest = [n for n in order if n not in (v, y, w)]
    for late, ok in (([y, v, w], True), ([v, y, w], False)):
        st = Storage(rest + late, [w, y])
        inplace, _ = st.walk_updates(lambda n: True, None, lambda n: True)
        assert id(w) in inplace and (id(w) in st.into) is ok
