"""`tracer.jit(f)`: trace f once per input signature, then replay its optimized plan.

The first call with a signature (for each array argument: type, shape, dtype, layout; other
arguments by value) runs f on lazy arguments and plans the graph it returns, as an evaluation
would. Later calls with that signature skip f, tracing, the optimizer and lowering: the new
arguments' buffers are bound to the plan's slots and its kernels run (a small graph, which
an evaluation would run by NumPy op by op, replays that way). On a GPU a warm replay's launches
are captured once as a CUDA graph and launched as one while its arguments' device pointers
stay the same (cuda_kernels/cuda/graphs.py). Replays run through the engine,
so an error is raised at the user's line and TRACER_CHECK_NANS applies, as in an evaluation.

As with jax.jit, what f reads besides its arguments (globals, closures, NumPy arrays it makes)
is frozen at the first call. f runs un-jitted on every call where replay cannot stand for
it: when tracing needed a value (printing, `float()`, a mask's nonzero), when f wrote into an
argument (the first call then runs f twice: once traced, once on the real arguments), or when
it returned something other than lazy arrays.
"""
from __future__ import annotations

import functools

import numpy as np

from tracer.ir.node import Buffer, Slot, make, toposort
from tracer.ir.config import CONFIG
from tracer.ir.stats import STATS
from tracer.cuda_kernels import backends
from . import budget, debug, eager, engine
from .array import evaluate, ndarray
from .store import Var, evaluate_vars

_RETRACE = object()  # this signature is not replayable: call f as it is
# a small graph of at most this many nodes replays by NumPy op by op (about 6 us a node, with
# the rebinding); a larger one replays its compiled plan (about 0.1 ms for 1000 fused ops),
# whose compile a function called again and again pays back, unlike a one-off evaluation's
INTERPRET_NODES = 16


def _sig_of(a) -> tuple:
    if isinstance(a, ndarray):
        return ("lazy", a.shape, a.dtype.str)
    if isinstance(a, np.ndarray):
        return ("numpy", a.shape, a.dtype.str, a.flags.c_contiguous)
    try:
        hash(a)
    except TypeError:
        return ("id", id(a))
    return ("value", type(a), a)


def _buffer(a):
    """The realized buffer behind an array argument."""
    if isinstance(a, ndarray):
        if a._var.node.op != "input" or a._view.steps:
            evaluate_vars([a._var])
            if a._view.steps:  # a view: its values as a buffer of their own
                return Buffer(np.ascontiguousarray(np.asarray(a)))
        return a._var.node.attr("buf")
    return Buffer(a)


class _Replay:
    """A replayable trace: the plan (None: run by NumPy op by op, a small graph), where each slot's buffer comes from, the outputs' types,
    and the traced graph over the plan's slot leaves (its call sites kept), on which an error
    of a replay is located as evaluate locates it."""
    __slots__ = ("program", "feeds", "outs", "single", "graph", "slots", "device")

    def __init__(self, program, feeds, outs, single, graph, slots):
        self.program, self.feeds, self.outs, self.single = program, feeds, outs, single
        self.graph, self.slots = graph, slots
        self.device = None  # a device backend's replay state (cuda: its CUDA graph)


class jit:
    """Trace `f` once per input signature and replay the optimized plan."""

    def __init__(self, f):
        self.f = f
        self._plans: dict[tuple, object] = {}
        functools.update_wrapper(self, f)

    def __call__(self, *args):
        if budget.active() is not None:  # the evaluation splits as it needs: no fixed plan
            out = self.f(*args)
            evaluate(*(out if isinstance(out, (tuple, list)) else (out,)))
            return out
        key = (tuple(_sig_of(a) for a in args), engine.backend(), CONFIG.disable_passes,
               CONFIG.small_graph)
        entry = self._plans.get(key)
        if entry is None:
            entry, result = self._trace(args)
            self._plans[key] = entry
            return result
        if entry is _RETRACE:
            return self.f(*args)
        return self._replay(entry, args)

    def _trace(self, args):
        bufs = [_buffer(a) if isinstance(a, (ndarray, np.ndarray)) else None for a in args]
        leaves = [make("input", (), b.value.shape, b.value.dtype, (("buf", b),))
                  if b is not None else None for b in bufs]
        lazy = [ndarray(Var(leaf)) if leaf is not None else a for leaf, a in zip(leaves, args)]
        before = STATS.evaluations
        with eager.recording_all():  # a trace records every op, small or not
            out = self.f(*lazy)
        single = isinstance(out, ndarray)
        outs = [out] if single else list(out) if isinstance(out, (tuple, list)) else None
        if any(x._var.node is not leaf for x, leaf in zip(lazy, leaves) if leaf is not None):
            return _RETRACE, self.f(*args)  # f wrote into an argument: write the real one
        if STATS.evaluations != before or outs is None or \
                not all(isinstance(o, ndarray) for o in outs):
            return _RETRACE, out  # a value was needed, or f returned something else
        roots = [o._node for o in outs]
        nodes = toposort(roots)
        if len(nodes) <= INTERPRET_NODES and all(engine.small_roots(roots)):
            program, graph_leaves = None, [n for n in nodes if n.op == "input"]
            slots = [make("input", (), g.shape, g.dtype, (("buf", Slot(True)),))
                     for g in graph_leaves]
            lifted = []
        else:
            found = engine.lookup(roots, engine.backend())
            if found is None:  # an attribute that cannot key a plan
                return _RETRACE, out
            plan, _, graph_leaves, params = found
            program, slots, lifted = plan.program, plan.slots, list(zip(plan.params, params))
        arg_of = {id(leaf): k for k, leaf in enumerate(leaves) if leaf is not None}
        # a slot reads an argument, or a buffer f captured (frozen, as jax.jit freezes it); a
        # value the plan lifted is this trace's, frozen too
        feeds = [(s, arg_of.get(id(g)), g.attr("buf")) for s, g in zip(slots, graph_leaves)]
        feeds += [(p, None, b) for p, b in lifted]
        for _, k, b in feeds:
            if k is None:  # frozen: its variable's next write goes into a copy
                b.owner = None
        graph = debug.rebind(roots, graph_leaves, slots)
        entry = _Replay(program, feeds, [(o.shape, o.dtype) for o in outs], single, graph, slots)
        return entry, self._run(entry, bufs)

    def _replay(self, entry: _Replay, args):
        STATS.plan_cache_hits += 1
        return self._run(entry, [_buffer(a) if isinstance(a, (ndarray, np.ndarray)) else None
                                 for a in args])

    @staticmethod
    def _run(entry: _Replay, bufs):
        STATS.evaluations += 1
        bind = {id(s): (bufs[k] if k is not None else own) for s, k, own in entry.feeds}
        def graph():  # the traced graph over this call's buffers
            return debug.rebind(entry.graph, entry.slots, [
                make("input", (), s.shape, s.dtype, (("buf", bind[id(s)]),)) for s in entry.slots])
        if entry.program is None:
            res = engine.interpret(graph())
        else:  # (a backend may launch the replay as one unit: cuda's CUDA graphs)
            be = backends.get(entry.program.backend)
            run = lambda: engine.run(entry.program, bind, graph)  # noqa: E731
            res = be.replay(entry, list(bind.values()), run) if hasattr(be, "replay") else run()
        outs = [ndarray(Var(make("input", (), shape, dtype, (("buf", b),))))
                for (shape, dtype), b in zip(entry.outs, res)]
        return outs[0] if entry.single else tuple(outs)
