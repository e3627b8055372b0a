"""The engine: the one place that turns a graph into a program and runs it.

`plan` optimizes and lowers a set of roots for a backend through the plan cache (the only
caller of `opt.optimize` and of lowering); lowering only plans (it writes and imports
nothing), `run` compiles a program's kernels before running it, and `execute` runs a graph:
the small-graph decision (NumPy op by op), the memory budget, the error located at the user's
line and the NaN check. `evaluate`, `explain`, `memory_budget` and `jit` all come through here.
"""
from __future__ import annotations

import time

import numpy as np

from tracer.cuda_kernels import backends, executor
from tracer.cuda_kernels.executor import compile as compile_program, lower
from tracer.ir import log
from tracer.ir.node import Buffer, Node, make, toposort
from tracer.ir.printer import format_graph
from tracer.ir.config import CONFIG
from tracer.ir.interp import _may_raise, run_graph
from tracer.ir.stats import STATS
from tracer.opt.buffer_assignment import memory_plan
from tracer.opt.pipeline import optimize
from tracer.opt.rewrite import rebuild, with_inputs
from . import budget, budgeted, dask_cluster, dask_tasks, debug, plans


def backend() -> str:
    """The backend evaluations run on: a cluster's chunk task's, in its thread on a worker
    (tracer/dask_tasks.py), else the config's (TRACER_BACKEND; cuda where a GPU is found)."""
    return backends.default_backend(getattr(dask_cluster._ON_WORKER, "backend", "") or
                                    CONFIG.backend)


def small_roots(roots: list[Node]) -> list[bool]:
    """Per root, whether it runs by NumPy op by op (see execute): on cpu outside a budget,
    when every value it needs has at most CONFIG.small_graph elements; every root, when
    their graph is a few ops whose plans keep missing (see _missing)."""
    limit = CONFIG.small_graph
    if not limit or budget.active() is not None or backend() != "cpu":
        return [False] * len(roots)
    big: set[int] = set()
    order = toposort(roots)
    most = 0
    for n in order:
        size = n.size
        if size > most:
            most = size
        if size > limit or big and any(id(i) in big for i in n.inputs):
            big.add(id(n))
    small = [id(r) not in big for r in roots]
    if big and len(order) <= MISS_NODES and most <= CONFIG.miss_graph and \
            _missing(order, [r for r, s in zip(roots, small) if not s]):
        return [True] * len(roots)
    return small


# Plans that keep missing: a loop whose shapes change every step (an LU elimination's
# trailing block) plans anew each evaluation, a millisecond or more; the interpreter runs a
# few ops at NumPy's speed. Per skeleton (the graph's ops in order, no shapes nor attributes:
# cheap, and two graphs that share one only share the policy's guess):
# [plan misses in a row, compiled and not yet known to miss, evaluations interpreted since].
MISS_NODES = 64  # "a few ops"
MISS_RETRY = 64  # every this many interpreted evaluations, one is compiled: does it hit now?
_SKELETONS: dict[tuple, list] = {}
_ASKED: list = [None]  # (skeleton's state, ids of the roots compiled) of the last compiled


def _missing(order: list[Node], big: list[Node]) -> bool:
    """Whether the graph runs by the interpreter for its plans keep missing: its skeleton
    missed CONFIG.miss_streak times in a row. Else the compiled evaluation that follows is
    watched (execute's plan miss, _note_miss)."""
    skel = tuple([n.op for n in order])
    st = _SKELETONS.get(skel)
    if st is None:
        if len(_SKELETONS) > 4096:
            _SKELETONS.clear()
        st = _SKELETONS[skel] = [0, False, 0]
    if st[1]:  # the last compiled evaluation found its plan
        st[0] = st[1] = 0
    if st[0] >= CONFIG.miss_streak:
        st[2] += 1
        if st[2] % MISS_RETRY:
            return True
    st[1] = True
    _ASKED[0] = (st, tuple(map(id, big)))
    return False


def _note_miss(roots: list[Node]) -> None:
    """A compiled evaluation planned anew: one more miss of its skeleton, if small_roots
    watches it."""
    asked = _ASKED[0]
    if asked is not None and asked[1] == tuple(map(id, roots)):
        st = asked[0]
        st[0] += 1
        st[1] = False
        _ASKED[0] = None


# ------------------------------------------------------------------ planning

def _optimize_lower(roots: list[Node], be: str, record: bool | None = None,
                    order: list[Node] | None = None):
    """(program, optimizer result): lowering takes the optimizer's order and plans memory
    from buffer assignment's liveness. `order`: toposort(roots), where the caller has it."""
    res = optimize(roots, record=record, order=order, budget=budget.active())
    return lower(res.roots, be, memory_plan(res.roots, res.order), res.order), res


def lookup(roots: list[Node], be: str, may_write=None):
    """(entry, hit, leaves, params): the cached plan for this graph (made on a miss), the
    graph's leaves in the order of entry.slots and the buffers of entry.params (the values
    it lifted); None when the graph cannot be cached. `may_write`: see donated()."""
    key, values, holders, leaves, order, bufs = plans.signature(roots, be)
    donate = donated(leaves, bufs, order, may_write)
    if donate:  # a plan that updates these leaves in place serves only where they are donated
        key = (key, donate)
    try:
        found = plans.find(key, values)
    except TypeError:  # an unhashable attribute
        return None
    if found is not None:
        return found[0], True, leaves, found[1]
    lift = plans.to_lift(key, values)
    slot_roots, slots, params, slot_order = plans.with_slots(
        roots, leaves, order, [holders[k] for k in lift])
    if donate:
        slot_roots, slot_order, new = _donate(slot_roots, slot_order, [slots[k] for k in donate])
        slots = [new.get(id(s), s) for s in slots]
    program, res = _optimize_lower(slot_roots, be, order=slot_order)
    entry = plans.Entry(program, slots, res, params, lift, len(values))
    plans.put(key, values, entry)
    return entry, False, leaves, entry.param_buffers(values)


def plan(roots: list[Node], be: str, may_write=None):
    """(program, res, bind, split): the program that computes the roots (no compile started),
    the optimizer's result (None on a cache hit), the leaf buffers to bind to its slots, and
    the optimizer's split (under a memory budget; of the cached plan's graph on a hit).
    `may_write`: see donated()."""
    found = lookup(roots, be, may_write) if not CONFIG.dump_dir else None
    if found is None:
        program, res = _optimize_lower(_donated_graph(roots, may_write), be)
        return program, res, None, res.split
    entry, hit, leaves, params = found
    bind = dict(zip(entry.slot_ids, [leaf.attrs[0][1] for leaf in leaves]))
    bind.update(zip(entry.param_ids, params))
    return entry.program, (None if hit else entry.res), bind, entry.res.split


def explain(roots: list[Node], may_write=None):
    """(res, program, small): what evaluating the roots would do, nothing compiled or run:
    the roots that run by NumPy op by op (small), and the optimizer's result and the lowered
    program of the others (None, None when there are none). `may_write`: see donated()."""
    small = small_roots(roots)
    big = [r for r, s in zip(roots, small) if not s]
    if not big:
        return None, None, small
    program, res = _optimize_lower(_donated_graph(big, may_write), backend(), record=True)
    return res, program, small


# ------------------------------------------------------------------ donated leaves

def donated(leaves: list[Node], bufs: list, order: list[Node], may_write) -> tuple[int, ...]:
    """The positions among `leaves` (their buffers `bufs`; `order`: the graph's toposort) of
    the leaves this evaluation may write into, as XLA's donated buffers: `may_write` allows
    it (the evaluated variables alone hold the buffer and nothing outside the graph reads
    it: store.writable_leaves), and no op of the graph may raise (the evaluation of what did
    not fail runs again from the leaves, as the interpreter's). Not under a memory budget
    nor with NaN checks (they run again too). Buffer assignment decides which writes go
    there (opt/liveness.py: slice writes, scatters, elementwise kernels over a dying
    operand), so `x[k] = v` and `x += y` on a realized x write into x's buffer."""
    if may_write is None:
        return ()
    for b in bufs:
        if b.owner is not None:
            break
    else:  # (the usual case: no leaf is any variable's own)
        return ()
    if CONFIG.check_nans or budget.active() is not None:
        return ()
    out = tuple(k for k, (leaf, b) in enumerate(zip(leaves, bufs))
                if b.owner is not None and may_write(leaf))
    return () if out and any(map(_may_raise, order)) else out


def _donated_graph(roots: list[Node], may_write) -> list[Node]:
    """The roots with their donated leaves marked (where the plan is not cached)."""
    if may_write is None:
        return roots
    order = toposort(roots)
    leaves = [n for n in order if n.op == "input"]
    donate = donated(leaves, [n.attrs[0][1] for n in leaves], order, may_write)
    return _donate(roots, order, [leaves[k] for k in donate])[0] if donate else roots


def _donate(roots: list[Node], order: list[Node], leaves: list[Node]):
    """(roots, order, {id(leaf): its donated leaf}): the graph with these leaves marked
    `donated` (the same buffer: buffer assignment may update it in place)."""
    new: dict[int, Node] = {id(n): make("input", (), n.shape, n.dtype,
                                        n.attrs + (("donated", True),)) for n in leaves}
    marked = dict(new)
    out = []
    for n in order:
        m = new.get(id(n))
        if m is None:
            ins = tuple([new.get(id(i), i) for i in n.inputs])
            m = n if all(a is b for a, b in zip(ins, n.inputs)) else \
                make(n.op, ins, n.shape, n.dtype, n.attrs)
            new[id(n)] = m
        out.append(m)
    return [new[id(r)] for r in roots], out, marked


# a host result under this many bytes is not taken: registering it (store.own) costs about
# what a later write's copy of it would (on a device, a copy is a launch: every one is taken)
OWN_BYTES = 1 << 15


def _hand_over(program, bind, bufs: list, take) -> None:
    """After a run: `take(i, buf)` for each root i whose buffer is its own (a new array, or a
    donated leaf's written in place: Program.root_storage); a leaf's buffer that a root views
    is no longer its variable's alone. (Under a memory budget the results are assembled
    from chunks: none is taken.)"""
    if take is not None and budget.active() is not None:
        take = None
    for i, s in enumerate(program.root_storage):
        if s is True:
            if take is not None:
                buf = bufs[i]
                if buf.host is None or buf.host.nbytes >= OWN_BYTES:
                    take(i, buf)
        elif s is not None:
            buf = bind.get(s) if bind else None
            if buf is None:
                buf = next(n for n in program.order if id(n) == s).attrs[0][1]
            buf.owner = None


# ------------------------------------------------------------------ running

_PHASES = ("trace_s", "optimize_s", "codegen_s", "load_s", "compile_s", "run_s")
_TRACE_AT = [0.0]  # stats().trace_s at the end of the last evaluation
_RUNNING = [0]  # nesting of run(): a budget runs chunks through execute


def execute(roots: list[Node], small: bool = False, may_write=None, take=None) -> list:
    """The roots' values. `small`: every value is small (small_roots): run them by NumPy op
    by op, unoptimized, where optimizing and compiling would cost more. `may_write`: whether
    the run may write into an input leaf's buffer (store.writable_leaves; see interpret and
    donated); then `take(i, buf)` is called for each root i whose buffer is one no other
    holds."""
    STATS.evaluations += 1
    if dask_cluster._REMOTE and dask_cluster.remote_leaves(roots):  # (none: one len())
        return _on_cluster(roots)
    if small:
        return interpret(roots, may_write, take)
    if not CONFIG.debug and not CONFIG.dump_dir:  # a plan-cache hit: plan()'s steps, inline
        t0 = time.perf_counter()
        key, values, _, leaves, order, bufs = plans.signature(roots, backend())
        if may_write is not None:
            donate = donated(leaves, bufs, order, may_write)
            if donate:
                key = (key, donate)
        try:
            found = plans.find(key, values)
        except TypeError:  # an unhashable attribute: no plan to find (plan() plans anew)
            found = None
        if found is not None:
            entry, params = found
            bind = dict(zip(entry.slot_ids, bufs))
            if params:
                bind.update(zip(entry.param_ids, params))
            STATS.optimize_s += time.perf_counter() - t0
            STATS.plan_cache_hits += 1
            out = run(entry.program, bind, roots, entry.res.split)
            _hand_over(entry.program, bind, out, take)
            return out
    phases0 = [getattr(STATS, p) for p in _PHASES] if CONFIG.debug >= 1 else None
    if phases0:
        phases0[0] = min(_TRACE_AT[0], STATS.trace_s)  # tracing happened before this call
    t0 = time.perf_counter()
    program, res, bind, split = plan(roots, backend(), may_write)
    if res is not None and _ASKED[0] is not None:
        _note_miss(roots)
    # the optimizer's own time (lowering's codegen is counted apart), or the
    # plan cache lookup
    STATS.optimize_s += res.seconds if res is not None else time.perf_counter() - t0
    STATS.plan_cache_hits += res is None
    bufs = run(program, bind, roots, split)
    _hand_over(program, bind, bufs, take)
    if CONFIG.debug >= 1:
        how = "cached plan" if res is None else "new plan"
        spent = ", ".join(f"{p[:-2]} {(getattr(STATS, p) - v) * 1e3:.2f} ms"
                          for p, v in zip(_PHASES, phases0))
        log.debug(f"evaluated {len(roots)} outputs: {len(program.kernels)} kernels, {how}; "
                  f"{spent}")
        _TRACE_AT[0] = STATS.trace_s
    if res is None:
        return bufs
    if CONFIG.debug >= 2:
        log.debug(format_graph(res.roots))
    if CONFIG.debug >= 3:
        for name, sec, changed in res.passes:
            log.debug(f"  pass {name:<20} {sec * 1e3:8.3f} ms {'changed' if changed else ''}")
    if CONFIG.debug >= 4:
        for k in program.kernels:
            log.debug(f"kernel {k.name}\n{k.source}")
    return bufs


def _on_cluster(roots: list[Node]) -> list:
    """A graph that reads values held on a Dask cluster: split along the rows of one of them,
    each chunk a task beside its rows (tracer/dask_cluster.py)."""
    roots = dask_cluster.views_as_leaves(roots)
    if not dask_cluster.remote_leaves(roots):  # (views of them brought here)
        return execute(roots)
    split, first = dask_cluster.split_of(roots)
    if split is None:  # reductions whose results meet the rows again (x - x.mean()): first
        done = {id(n): make("input", (), n.shape, n.dtype, (("buf", b),))
                for n, b in zip(first, execute(first))}
        return execute(rebuild(roots, lambda n, ins: done.get(id(n)) or with_inputs(n, ins)))
    be = dask_cluster.active().worker_backend  # (chunks planned as the workers will)
    plan_of = lambda g, b: plan(g, b)[0]  # noqa: E731
    return budgeted.run_split(roots, plan_of(roots, be), split, budget.active(), be, execute,
                              plan_of)


def chunk_task(*args) -> dict:
    """One chunk of a tracer.cluster evaluation, on a worker (sent by this name)."""
    return dask_tasks.run_task(execute, *args)


dask_tasks.TASK[0] = chunk_task


def run(program, bind, graph, split=None) -> list:
    """Run a planned program (its kernels compiled first): within the active memory budget,
    an error raised again at the user's line, outputs checked for NaN (CONFIG.check_nans).
    `graph`: the user's graph the program computes, with its real leaves: its roots, or a
    function that builds them (called only for an error, a NaN or a budget); `split`: the
    optimizer's, planned under the budget."""
    if not program.compiled:
        compile_program(program)
    _RUNNING[0] += 1
    try:
        limit = budget.active()
        if limit is not None:
            bufs = budgeted.run(_graph(graph), program, bind, limit, split, program.backend,
                                execute, lambda g, be: plan(g, be)[0])
        else:
            bufs = executor.run(program, bind, graph=graph)
    except Exception as e:
        if _RUNNING[0] == 1:  # the user's graph, not a chunk of it
            debug.locate_error(_graph(graph), e)
        raise
    finally:
        _RUNNING[0] -= 1
    if CONFIG.check_nans and not _RUNNING[0]:
        hosts = [backends.to_host(b) for b in bufs]
        if debug.nonfinite(hosts):
            debug.check_outputs(_graph(graph), hosts)
    return bufs


def _graph(graph) -> list[Node]:
    """run's `graph` as its roots."""
    return graph if isinstance(graph, list) else graph()


def interpret(roots: list[Node], may_write=None, take=None) -> list:
    """Run a small graph op by op with NumPy, unoptimized: a few microseconds an op, where
    optimizing it and compiling its kernels would take milliseconds to seconds. `may_write`:
    whether a slice write may go into an input leaf's buffer (store.writable_leaves); then
    `take(i, buf)` is called for each root i whose buffer is a new array no other holds."""
    t0 = time.perf_counter()
    STATS.small_graphs += 1
    if CONFIG.check_nans:  # a NaN raises after the run: the old values must stay
        may_write = None
    leaves: dict[int, Node] = {}  # id(a leaf's array) -> the leaf

    def leaf(n: Node):
        h = debug.host_value(n)
        leaves[id(h)] = n
        return h
    try:
        vals = run_graph(roots, leaf=debug.host_value if may_write is None else leaf,
                         writable=may_write)
    except Exception as e:
        debug.locate_error(roots, e)
        raise
    STATS.run_s += time.perf_counter() - t0
    if CONFIG.check_nans:
        debug.check_outputs(roots, vals)
    bufs = [Buffer(np.asarray(v)) for v in vals]
    if may_write is not None:
        for i, mine in enumerate(_new_arrays(vals, leaves, may_write)):
            if mine:
                take(i, bufs[i])
    return bufs


def _new_arrays(vals: list, leaves: dict, may_write) -> list[bool]:
    """Per value, whether it is an array the run made (or a writable leaf's, written in
    place) that nothing else holds: no leaf's, no view of another value, not another's."""
    held: dict[int, int] = {}
    for v in vals:
        h = v
        while isinstance(h, np.ndarray):
            held[id(h)] = held.get(id(h), 0) + 1
            h = h.base
    return [isinstance(v, np.ndarray) and v.base is None and v.flags.writeable
            and held[id(v)] == 1 and (id(v) not in leaves or may_write(leaves[id(v)]))
            for v in vals]
