"""What one evaluation costs in graph walks: `float((a*b+c).sum())` on a new plan sorts at most
three times in all (issue 18): the frontend's pending set; the optimizer's graph after fusion
changes it (the key's order serves the slot graph and the optimizer, the optimizer's final order
serves lowering and the memory plan); and the one fusion body, whose order toposort keeps for
every analysis and codegen step that walks it again (the fusion pass finds its groups in the
graph's order instead of sorting each). In all 32 sorts before issue 18. It builds liveness
once."""
from __future__ import annotations

import sys

import numpy
import pytest

import tracer.numpy as np
from tracer.ir import node as N
from tracer.ir.config import context
from tracer.opt import liveness

pytestmark = pytest.mark.lazy  # kernel and node counts of recorded graphs


def _sorts(fn) -> int:
    """Walks toposort makes while fn runs, not orders it hands out again."""
    walks = [0]

    def prof(frame, event, arg):
        if event == "return" and frame.f_code is N._sort.__code__ and arg is not None:
            walks[0] += 1
    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return walks[0]


def test_one_evaluation_sorts_at_most_three_times_and_builds_liveness_once(monkeypatch):
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
            sorts = _sorts(lambda: float(s))
            assert sorts <= 3, sorts
            assert built[0] == 1
