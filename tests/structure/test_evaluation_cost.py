"""What one evaluation costs in graph walks: `float((a*b+c).sum())` on a new plan sorts the
evaluated graph at most three times (the frontend's pending set, the plan key, the optimizer
after fusion changes it; the key's order serves the slot graph and the optimizer, and the
optimizer's final order serves lowering and the memory plan; in all 32 sorts before issue 18),
sorts its one fusion body once (toposort keeps a single root's order: every analysis and
codegen step that walks the body gets it again), and builds liveness once."""
from __future__ import annotations

import sys

import numpy

import tracer.numpy as np
from tracer.ir import node as N
from tracer.ir.config import context
from tracer.opt import liveness


def _sorts(fn):
    """(sorts of a graph with input leaves, sorts of fusion bodies) while fn runs: walks
    made, not orders toposort handed out again."""
    whole, bodies = [0], [0]

    def prof(frame, event, arg):
        if event == "return" and frame.f_code is N._sort.__code__ and arg is not None:
            (whole if any(n.op == "input" for n in arg) else bodies)[0] += 1
    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return whole[0], bodies[0]


def test_one_evaluation_sorts_the_graph_at_most_three_times_and_builds_liveness_once(
        monkeypatch):
    built = [0]
    init = liveness.Storage.__post_init__

    def counted(self):
        built[0] += 1
        init(self)
    monkeypatch.setattr(liveness.Storage, "__post_init__", counted)
    with context(small_graph=0, compile_mode="sync", verify=False):
        for n in (1003, 1004):  # a new size: a new plan
            a, b, c = (np.asarray(numpy.random.rand(n)) for _ in range(3))
            s = (a * b + c).sum()
            built[0] = 0
            whole, bodies = _sorts(lambda: float(s))
            assert whole <= 3, whole
            assert bodies <= 2, bodies  # the fusion pass's group, then the kernel's body
            assert built[0] == 1
