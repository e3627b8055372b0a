"""Each pass's effect is visible: explain records node counts and op histograms per pass,
switching a pass off removes its effect, and the ablation bench runs and reports every pass."""
from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy
import pytest

from tracer import opt
import tracer
import tracer.numpy as tnp
from tracer.ir import toposort
from tracer.ir.config import Config, context

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # bench/ is not installed; plain `pytest` does not add the root
    sys.path.insert(0, str(ROOT))
from bench import ablation  # noqa: E402
RUN_NAMES = [name for name, _fn, _why in opt.PIPELINE]


def program():
    """-(-(x*1)) + y: simplify has something to remove, fusion something to fuse."""
    x = tnp.asarray(numpy.arange(6.0).reshape(2, 3))
    y = tnp.asarray(numpy.ones((2, 3)))
    return -(-(x * 1.0)) + y, numpy.arange(6.0).reshape(2, 3) + 1


def histogram(roots) -> Counter:
    return Counter(n.op for n in toposort(roots))


def test_explain_shows_a_line_per_pass_with_node_counts():
    expr, want = program()
    plan = tracer.explain(expr)
    assert [e.name for e in plan.pass_effects] == [p[0] for p in plan.passes] == RUN_NAMES
    assert [(e.seconds, e.changed) for e in plan.pass_effects] == [p[1:] for p in plan.passes]
    text = str(plan)
    section = text.split("== passes\n")[1].split("\n== graph after")[0].splitlines()
    assert len(section) == len(RUN_NAMES)
    for line, e in zip(section, plan.pass_effects):
        assert line.split()[0] == e.name
        assert f"{e.nodes_before} -> {e.nodes_after} nodes" in line
        assert " ms " in line
    for head in ("== graph before", "== graph after", "== kernel", "peak_bytes"):
        assert head in text
    numpy.testing.assert_array_equal(numpy.asarray(expr), want)


def test_effects_chain_from_graph_before_to_graph_after():
    expr, _ = program()
    plan = tracer.explain(expr)
    effects = plan.pass_effects
    assert effects[0].ops_before == histogram(plan.graph_before.roots)
    assert effects[-1].ops_after == histogram(plan.graph_after.roots)
    for a, b in zip(effects, effects[1:]):
        assert a.ops_after == b.ops_before
    for e in effects:
        assert e.nodes_before == sum(e.ops_before.values())
        assert e.changed or e.ops_before == e.ops_after


def test_simplify_and_fusion_lines_name_the_ops_they_change():
    expr, _ = program()
    plan = tracer.explain(expr)
    simplify = next(e for e in plan.pass_effects if e.name == "simplify")
    assert simplify.nodes_after < simplify.nodes_before
    assert dict(simplify.op_delta())["negative"] == -2
    assert "-negative x2" in str(simplify)
    fusion = next(e for e in plan.pass_effects if e.name == "fusion")
    assert dict(fusion.op_delta())["fusion"] >= 1
    assert "+fusion x" in str(fusion)


def test_plain_optimize_records_nothing_unless_asked():
    expr, _ = program()
    roots = [expr._node]
    with context(debug=0):
        assert opt.optimize(roots).effects == []
    with context(debug=3):
        assert [e.name for e in opt.optimize(roots).effects] == RUN_NAMES
    assert len(opt.optimize(roots, record=True).effects) == len(RUN_NAMES)


def test_disable_passes_from_the_environment_removes_the_effect(monkeypatch):
    monkeypatch.setenv("TRACER_DISABLE_PASSES", "simplify, cse")
    off = Config().disable_passes
    assert off == {"simplify", "cse"}
    expr, want = program()
    with context(disable_passes=off):
        plan = tracer.explain(expr)
        got = numpy.asarray(expr)
    numpy.testing.assert_array_equal(got, want)
    by_name = {e.name: e for e in plan.pass_effects}
    assert by_name["simplify"].disabled and by_name["cse"].disabled
    assert by_name["simplify"].ops_before == by_name["simplify"].ops_after
    assert ("simplify", 0.0, False) in plan.passes
    # the negations simplify would have removed reach fusion
    assert by_name["fusion"].ops_before["negative"] == 2
    assert "simplify             disabled" in str(plan)


@pytest.mark.parametrize("name", list(dict.fromkeys(RUN_NAMES)))
def test_each_pass_can_be_switched_off_and_the_answer_holds(name):
    expr, want = program()
    with context(disable_passes={name}):
        plan = tracer.explain(expr)
        got = numpy.asarray(expr)
    numpy.testing.assert_array_equal(got, want)
    assert all(e.disabled == (e.name == name) for e in plan.pass_effects)
    assert all(p[1:] == (0.0, False) for p in plan.passes if p[0] == name)


def test_ablation_reports_a_failing_configuration_as_an_error():
    def broken(m, x):
        raise ValueError("no kernel for this")
    prog = ablation.Program(broken, lambda s: [(3,)])
    x = tnp.asarray(numpy.ones(3, numpy.float32))
    three = numpy.full(3, 3.0)
    bad = ablation.measure(prog, [x], three, repeat=1)
    assert not bad.ok and "ValueError: no kernel for this" in bad.failure
    wrong = ablation.measure(ablation.Program(lambda m, x: x * 2, prog.shapes), [x], three, 1)
    assert wrong.failure.startswith("wrong") and wrong.error == pytest.approx(1 / 3)
    good = ablation.measure(ablation.Program(lambda m, x: x * 3, prog.shapes), [x], three, 1)
    assert good.ok and good.seconds > 0 and good.kernels == 1 and good.error == 0.0
    results = {"p": {"effects": {}, "runs": {None: good, "fusion": bad}}}
    text = "\n".join(ablation.table(results, ["fusion"]))
    assert "| fusion | p | - | ERROR |" in text and "ValueError" in text
    assert "| fusion | - | - | 1 |" in text


@pytest.mark.slow
def test_ablation_quick_runs_and_prints_a_row_per_pass(tmp_path):
    out = tmp_path / "ablation.md"
    env = dict(os.environ, TRACER_BACKEND="cpu")
    proc = subprocess.run([sys.executable, "-m", "bench.ablation", "--quick", "--programs",
                           "abcd,softmax_rows", "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = proc.stdout.split("## Summary per pass")[1]
    for name in dict.fromkeys(RUN_NAMES):
        assert f"| {name} | " in summary
        assert f"| **{name}** | **geomean** |" in proc.stdout
    assert "| abcd | " in proc.stdout and "| softmax_rows | " in proc.stdout
    assert out.read_text() == proc.stdout.rstrip("\n") + "\n"


@pytest.mark.slow
def test_optimizer_bench_quick(tmp_path):
    out = tmp_path / "optimizer.md"
    env = dict(os.environ, TRACER_BACKEND="cpu")
    proc = subprocess.run([sys.executable, "bench/bench_optimizer.py", "--quick", "--out",
                           str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = out.read_text()
    assert text in proc.stdout and "ERROR" not in text
    for row in ("| `(A@B)@v` n=64 |", "| naive min-distance N=M=64 D=16 |",
                "| softmax rows 64x64 |"):
        assert row in text
