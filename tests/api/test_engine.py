"""The engine (tracer/engine.py) is the one driver of optimize -> lower -> compile -> run:
only it calls the optimizer and lowering; lowering (and so `explain`) writes and imports
nothing; jit replays get evaluate's error location; one evaluation builds liveness once."""
from __future__ import annotations

import ast
import pathlib
import sys
from collections import OrderedDict

import numpy
import pytest

import tracer
import tracer.numpy as tnp
from tracer import plans
from tracer.cuda_kernels import compiler
from tracer.opt import liveness
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # plans, liveness and explain output of recorded graphs

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("tracer", "ir", "opt", "cuda_kernels")


def _calls(name: str) -> list[str]:
    """Where project code calls `name(...)` with arguments (a str.lower() has none)."""
    found = []
    for top in PACKAGES:
        for path in (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call) or not (node.args or node.keywords):
                    continue
                f = node.func
                called = f.id if isinstance(f, ast.Name) else f.attr if \
                    isinstance(f, ast.Attribute) else None
                if called == name:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


@pytest.mark.parametrize("name", ["optimize", "lower"])
def test_only_the_engine_optimizes_and_lowers(name):
    callers = {c.rsplit(":", 1)[0] for c in _calls(name)}
    assert callers == {"tracer/engine.py"}, callers


def _power(x, e):
    return tnp.power(x, e * 1)  # an exponent computed lazily: NumPy raises on the data


def _error_note(call) -> tuple[type, str, list[str]]:
    with pytest.raises(Exception) as got:
        call()
    return type(got.value), str(got.value), [n for n in got.value.__notes__
                                              if n.startswith("tracer: raised by")]


@pytest.mark.parametrize("small_graph", [0, 4096])
def test_a_jit_replay_raises_at_the_users_line_as_evaluate_does(small_graph):
    good, bad = numpy.array([1, -1, 2]), numpy.array([1, 2, 3])
    h = numpy.array([1, 2, 3])
    with context(small_graph=small_graph, compile_mode="sync"):
        want = _error_note(lambda: numpy.asarray(_power(tnp.asarray(h), tnp.asarray(good))))
        f = tracer.jit(_power)
        numpy.testing.assert_array_equal(numpy.asarray(f(h, bad)), h ** bad)  # traced
        numpy.testing.assert_array_equal(numpy.asarray(f(h, bad)), h ** bad)  # replayed
        got = _error_note(lambda: f(h, good))  # replayed: the error is in the data
    assert want[2], want  # evaluate names the op and the user's line
    assert got == want


def test_one_evaluation_builds_liveness_once(monkeypatch):
    built = []
    init = liveness.Storage.__post_init__

    def counted(self):
        built.append(1)
        init(self)
    monkeypatch.setattr(liveness.Storage, "__post_init__", counted)
    monkeypatch.setattr(plans, "_PLANS", OrderedDict())  # a new plan, not a cached one
    a, b, c = (tnp.asarray(numpy.arange(5000.0) + k) for k in range(3))
    with context(small_graph=0, compile_mode="sync"):
        tracer.evaluate(a, b, c)
        built.clear()
        s = (a * b + c).sum()
        assert float(s) == float(((numpy.arange(5000.0)) * (numpy.arange(5000.0) + 1)
                                  + numpy.arange(5000.0) + 2).sum())
    assert len(built) == 1


def test_explain_shows_the_small_graph_decision():
    a = tnp.asarray(numpy.arange(10.0))
    with context(small_graph=4096):
        text = str(tracer.explain((a * 2).sum()))
        assert "run by NumPy op by op" in text and "== kernel" not in text
    with context(small_graph=0):
        text = str(tracer.explain((a * 2).sum()))
        assert "run by NumPy op by op" not in text and "== kernel" in text


def _generated_modules() -> set[str]:
    return {m for m in sys.modules if m.startswith("tracer_gen.")}


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch) -> pathlib.Path:
    """An empty kernel cache folder, no kernel known in memory, no cached plan."""
    monkeypatch.setenv("TRACER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "_MEM", {})
    monkeypatch.setattr(plans, "_PLANS", OrderedDict())
    return tmp_path


def test_explain_writes_and_imports_nothing(fresh_cache):
    h = numpy.linspace(-3, 3, 50)
    x = tnp.asarray(h)
    out = tnp.arctan2(x * 3 - 1, tnp.abs(x) + 0.5)
    modules = _generated_modules()
    with context(small_graph=0):
        plan = tracer.explain(out)
        assert plan.kernels and all(k.fn is None for k in plan.kernels)
        text = str(plan)
        assert all(k.source in text and f"def {k.name}(" in k.source for k in plan.kernels)
        assert list(fresh_cache.rglob("*")) == []
        assert _generated_modules() == modules
        numpy.testing.assert_allclose(numpy.asarray(out), numpy.arctan2(h * 3 - 1,
                                                                        numpy.abs(h) + 0.5),
                                      rtol=1e-12)
    # evaluating compiled the very kernels explain planned, from their printed source
    k = plan.kernels[0]
    assert k.fn is not None and f"tracer_gen.{k.module}" in _generated_modules() - modules
    written = (fresh_cache / "gen" / f"{k.module}.py").read_text()
    assert f"def {k.name}(" in written and k.source.split(f"def {k.name}(")[1] in written


def test_a_kernel_two_plans_share_is_written_once(fresh_cache):
    h = numpy.arange(40.0)
    x = tnp.asarray(h)
    shared = lambda: tnp.sinh(x) * 2 - 1  # noqa: E731
    with context(small_graph=0, compile_mode="sync"):
        first = tracer.explain(shared())
        both = tracer.explain(shared(), tnp.cosh(x).max())
        (k,) = first.kernels
        assert k in both.kernels and k.fn is None  # one planned kernel for both, not loaded
        numpy.testing.assert_allclose(numpy.asarray(shared()), numpy.sinh(h) * 2 - 1)
        got = [numpy.asarray(v) for v in tracer.evaluate(shared(), tnp.cosh(x).max())]
    numpy.testing.assert_allclose(got[0], numpy.sinh(h) * 2 - 1)
    assert got[1] == numpy.cosh(h).max()
    sources = [p.read_text() for p in (fresh_cache / "gen").glob("b_*.py")]
    assert len(sources) == 2  # the second graph's module holds only its new kernel
    assert sum(src.count(f"def {k.name}(") for src in sources) == 1
