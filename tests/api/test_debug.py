"""Errors at the user's line, TRACER_EAGER, TRACER_CHECK_NANS, errstate, coverage_report."""
from __future__ import annotations

import sys
import traceback
import warnings

import numpy
import pytest

import tracer
import tracer.numpy as tnp
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # errors, NaN checks and logs of recorded graphs

HERE = __file__


def last_frame(excinfo) -> traceback.FrameSummary:
    return traceback.extract_tb(excinfo.tb)[-1]


def line_of(marker: str) -> int:
    """The line of this file that holds `marker` (after the marker comment's `#`)."""
    with open(HERE) as f:
        for k, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return k
    raise AssertionError(marker)


def test_out_of_bounds_computed_index_reports_the_users_line():
    a = tnp.arange(10.0)
    i = tnp.arange(5) * 3
    b = a[i] + 1  # oob-line
    with pytest.raises(IndexError, match="index 12 is out of bounds") as info:
        print(b)
    frame = last_frame(info)
    assert frame.filename == HERE and frame.lineno == line_of("oob-line")
    assert any("gather" in n and f"{HERE}:{line_of('oob-line')}" in n
               for n in info.value.__notes__)


def test_data_dependent_error_in_a_longer_program_reports_its_line():
    x = tnp.asarray(numpy.array([1, 2, 3]))
    e = tnp.asarray(numpy.array([1, -1, 2])) * 1  # computed: known only when it runs
    y = x * 2
    z = tnp.power(y, e)  # power-line
    w = z.sum() + 1
    with pytest.raises(ValueError, match="Integers to negative integer powers") as info:
        int(w)
    assert last_frame(info).lineno == line_of("power-line")


def test_eager_mode_runs_each_op_at_once():
    with context(eager=True):
        a = tnp.arange(6.0).reshape(2, 3)
        b = a * 2 + 1
        assert b._var.node.op == "input"  # already a value
        numpy.testing.assert_array_equal(numpy.asarray(b.sum(axis=0)),
                                         (numpy.arange(6.0).reshape(2, 3) * 2 + 1).sum(axis=0))
        i = tnp.asarray(numpy.array([0, 7]))
        with pytest.raises(IndexError) as info:
            a.ravel()[i]  # eager-oob
        assert any(f.filename == HERE and f.lineno == line_of("eager-oob")
                   for f in traceback.extract_tb(info.tb))


def test_eager_mode_issues_numpys_warnings_at_the_line():
    with context(eager=True), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        z = tnp.zeros(3)
        r = 1.0 / z  # divide-line
    numpy.testing.assert_array_equal(numpy.asarray(r), numpy.full(3, numpy.inf))
    rw = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert rw and "divide by zero" in str(rw[0].message)
    assert rw[0].filename == HERE and rw[0].lineno == line_of("divide-line")


def test_errstate_raise_raises_at_the_line_and_only_inside_the_block():
    a = tnp.arange(3.0)
    with tnp.errstate(divide="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            1.0 / a
        ok = a + 1  # no error: runs at once and is a value
    numpy.testing.assert_array_equal(numpy.asarray(ok), numpy.arange(3.0) + 1)
    later = 1.0 / a  # lazy again, and NumPy's default state only warns
    assert later._var.node.op != "input"
    with numpy.errstate(divide="ignore"):
        numpy.testing.assert_array_equal(numpy.asarray(later), 1.0 / numpy.arange(3.0))


def test_check_nans_finds_the_first_op_that_made_one():
    a = tnp.arange(5.0) - 2
    b = tnp.sqrt(a) * 2  # sqrt-line
    c = b + 1
    with context(check_nans=True):
        with pytest.raises(FloatingPointError, match="nan.*sqrt") as info:
            float(c.sum())
    assert last_frame(info).lineno == line_of("sqrt-line")


def test_check_nans_ignores_nans_that_came_in_with_the_data():
    h = numpy.array([1.0, numpy.nan, 3.0])
    with context(check_nans=True):
        r = tnp.asarray(h) * 2 + 1
        numpy.testing.assert_array_equal(numpy.asarray(r), h * 2 + 1)


def test_coverage_report_names_the_function_and_the_line():
    a = tnp.arange(4.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tnp.gradient(a)  # fallback-line
    assert f"gradient  at {HERE}:{line_of('fallback-line')}" in tracer.coverage_report()


def test_zero_d_results_print_as_numpys_scalars():
    a = tnp.arange(6.0).reshape(2, 3)
    h = numpy.arange(6.0).reshape(2, 3)
    assert repr(a.sum()) == repr(h.sum())
    assert repr([a.max(), a[0, 1]]) == repr([h.max(), h[0, 1]])
    assert repr(tnp.array(5.0)) == repr(numpy.array(5.0))


def test_errors_while_tracing_keep_tracers_frames_out_of_the_tail():
    a = tnp.ones((2, 3))
    with pytest.raises(ValueError) as info:
        a.reshape(4, 2)  # reshape-line
    mine = [f for f in traceback.extract_tb(info.tb) if f.filename == HERE]
    assert mine[-1].lineno == line_of("reshape-line")
    assert sys.exc_info()[0] is None


class _Tty:
    def __init__(self, tty: bool):
        self.tty, self.text = tty, []

    def isatty(self) -> bool:
        return self.tty

    def write(self, s: str) -> None:
        self.text.append(s)

    def flush(self) -> None:
        pass


def test_progress_bar_draws_on_a_terminal_after_its_delay_and_clears():
    import time
    from tracer.cuda_kernels.progress import Bar
    tty = _Tty(True)
    with Bar(7, stream=tty, delay=0.0) as bar:
        bar.step()
        time.sleep(0.3)
    assert any("compiling 7 kernels" in t and "1/7" in t for t in tty.text)
    assert tty.text[-1].startswith("\r") and tty.text[-1].strip() == ""


def test_progress_bar_is_quiet_off_a_terminal_and_for_short_compiles():
    from tracer.cuda_kernels.progress import Bar
    pipe, fast = _Tty(False), _Tty(True)
    with Bar(3, stream=pipe, delay=0.0) as bar:
        bar.step()
    with Bar(3, stream=fast) as bar:  # done well within the second
        bar.step()
    assert pipe.text == [] and fast.text == []


def test_a_failure_numpy_does_not_reproduce_names_the_values_being_computed(monkeypatch):
    from tracer.cuda_kernels import executor

    def broken(*args, **kwargs):
        raise RuntimeError("kernel launch failed")
    monkeypatch.setattr(executor, "run", broken)
    a = tnp.arange(4.0)
    b = a * 3  # computed-line
    with pytest.raises(RuntimeError, match="kernel launch failed") as info:
        numpy.asarray(b)
    assert any(f"{HERE}:{line_of('computed-line')}" in n for n in info.value.__notes__)


def test_small_graphs_run_with_numpy_op_by_op_and_skip_the_compiler():
    h = numpy.linspace(0.0, 1.0, 50)
    with context(small_graph=4096):
        before = tracer.stats()
        small, launched = before.small_graphs, before.kernels_launched
        t = tnp.asarray(h)
        r = ((t * 3 - 1) ** 2).sum() / t.size
        assert float(r) == ((h * 3 - 1) ** 2).sum() / h.size  # NumPy's own bits
        assert tracer.stats().small_graphs == small + 1
        assert tracer.stats().kernels_launched == launched
        big = tnp.zeros(5000) + 1  # past the limit: kernels as usual
        assert float(big.sum()) == 5000.0
        assert tracer.stats().small_graphs == small + 1


def test_a_value_a_few_ops_past_the_evaluated_graph_is_kept():
    """`w -= lr * g` after evaluating g: w is computed on the way, so the next step does not
    recompute its history."""
    with context(small_graph=4096):
        w = tnp.zeros(2)
        h = numpy.zeros(2)
        for _ in range(3):
            g = w + 1.0
            w -= 0.5 * g
            float(g.sum())  # evaluates g; w is one multiply and one subtract past it
            assert w._var.node.op == "input"
            h -= 0.5 * (h + 1.0)
        numpy.testing.assert_array_equal(numpy.asarray(w), h)


def test_small_values_are_not_compiled_along_with_a_big_one():
    with context(small_graph=4096):
        big = tnp.ones(10_000) * 2.0
        small = tnp.arange(5.0) * 3
        before = tracer.stats().small_graphs
        tracer.evaluate(small, big)
        assert tracer.stats().small_graphs == before + 1
        numpy.testing.assert_array_equal(numpy.asarray(small), numpy.arange(5.0) * 3)
        assert float(big.sum()) == 20_000.0


def test_debug_output_goes_through_the_tracer_logger():
    """TRACER_DEBUG's lines are records of logging's `tracer` logger (issue 22 item 6): a user
    routes or silences them as any library's."""
    import logging
    from tracer.ir.config import context
    records: list = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("tracer")
    logger.addHandler(handler)
    try:
        with context(debug=1, small_graph=0):
            float((tnp.arange(5.0) * 2.5 + 1).sum())
    finally:
        logger.removeHandler(handler)
    assert any(r.getMessage().startswith("evaluated 1 outputs") for r in records)


def test_stats_is_a_snapshot_two_calls_subtract():
    before = tracer.stats()
    float((tnp.asarray(numpy.ones(20000)) * 2).sum())  # (past the eager size)
    after = tracer.stats()
    assert after is not before
    assert after.evaluations - before.evaluations == 1
