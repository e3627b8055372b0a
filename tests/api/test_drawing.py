"""explain(x).to_dot() and .save(): the optimized graph with each fused kernel as a cluster."""
from __future__ import annotations

import shutil

import pytest

import tracer
import tracer.numpy as tnp

pytestmark = pytest.mark.lazy  # drawings of recorded graphs and their kernels


def _plan():
    a = tnp.arange(12.0).reshape(3, 4)
    x = (a * 2 + 1).sum(axis=1) / tnp.exp(a).max()
    return tracer.explain(x)


def test_to_dot_outlines_each_kernel_and_marks_the_result():
    plan = _plan()
    dot = plan.to_dot()
    assert dot.startswith('digraph "tracer: after" {') and dot.rstrip().endswith("}")
    assert dot.count("subgraph cluster_") == len(plan.kernels) >= 1
    for k in plan.kernels:
        assert k.name in dot
    assert "reduce_sum" in dot and "exp" in dot and "penwidth=2.5" in dot
    before = plan.to_dot(before=True)
    assert "subgraph" not in before and "reduce_sum" in before


def test_save_writes_dot_text_without_graphviz(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    plan = _plan()
    with pytest.warns(UserWarning, match="Graphviz"):
        path = plan.save(str(tmp_path / "g.svg"))
    assert path.endswith("g.dot")
    assert open(path).read() == plan.to_dot()
    assert plan.save(str(tmp_path / "h.dot")).endswith("h.dot")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_save_renders_svg_with_graphviz(tmp_path):
    plan = _plan()
    path = plan.save(str(tmp_path / "g.svg"))
    text = open(path).read()
    assert path.endswith(".svg") and "<svg" in text and plan.kernels[0].name in text
