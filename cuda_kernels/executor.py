"""Lower an optimized graph to a program of steps (kernels, views, library calls), compile its
kernels, and run it. Lowering plans (kernel objects with their source, memory) and writes or
imports nothing; `compile` loads the new kernels (one batched module) and starts their
compiles; `run` executes.

Views without copies: on a backend whose views are not free (cuda), a slice, dynamic slice,
transpose keeping the innermost axis, or broadcast that only kernels read with full subscripts
is handed to them as a strided view of its operand (`Program.strided`, in_place.py); a slice
write whose value a fusion computes straight into the slice (the memory plan's `into`) has that
fusion write into a view of the base, and does nothing itself (`Program.into`)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from tracer.ir import log
from tracer.ir.config import CONFIG
from tracer.ir.node import Buffer, Node, Slot
from tracer.ir.registry import (LIBRARY_OPS, VIEW_OPS, consts_only, fusion_outputs,
                                 leaf_const)
from tracer.ir.stats import STATS
from . import backends
from .base import const_value, fill
from .in_place import into_stand_in, strided_views, writer
from .compiler import Kernel, load_kernels, plan_kernels
from .progress import Bar
from .planning import is_flat
from .emit import Emitter
from .tiled import fits as tiled_fits, run_tiled

PARALLEL_MIN = 1 << 16  # below this many elements threads cost more than they save


@dataclass
class Program:
    roots: list[Node]
    order: list[Node]
    kernels: list[Kernel]
    kernel_of: dict[int, Kernel]
    backend: str
    peak_bytes: int
    bytes_copied: int
    interpreted: list[str]
    consts_of: dict[int, list] = field(default_factory=dict)  # a fusion's constant arguments
    inplace: set[int] = field(default_factory=set)  # updates that write into their operand
    fills: dict[int, object] = field(default_factory=dict)  # fusions that only fill a constant
    dead_after: list = field(default_factory=list)  # per position: values no later node reads
    freed_after: list = field(default_factory=list)  # per position: storages that die there
    compiled: bool = False  # compile() loaded its kernels and started their compiles
    steps: list | None = None  # what `run` does at each position (_steps), made at its first run
    fast: list | None = None  # the steps of a warm run (_fast_steps), made at its first
    warm: bool = False  # every kernel has been compiled once (none compiles at its launch)
    last_run: dict | None = None  # device counters of its last run (DEVICE_COUNTERS; cuda)
    # per root: True where its buffer is its own (a new one, or a donated leaf's written in
    # place), else the id of the leaf whose buffer it views, else None (MemoryPlan's)
    root_storage: tuple = ()
    strided: set[int] = field(default_factory=set)  # views run as strided views (no copy)
    # fusion -> the slice write it computes its value into (the memory plan's `into`)
    into: dict[int, Node] = field(default_factory=dict)
    passed: set[int] = field(default_factory=set)  # those slice writes (and unit reshapes
    # of their values): their value is their first input's, already written

    @property
    def storage_roots(self) -> set[int]:
        return {s for at in self.freed_after for s in at}


def buffer_contiguous(buf) -> bool:
    v = buf.value
    if type(v) is np.ndarray:
        return v.flags.c_contiguous
    if isinstance(buf, Slot):
        return buf.contiguous
    if isinstance(v, (np.ndarray, np.generic)):
        return np.asarray(v).flags.c_contiguous
    # a device array (numba-cuda's `flags` is a plain dict, the simulator's NumPy's own)
    return bool(getattr(v, "is_c_contiguous", lambda: False)())


def _contiguous_producer(n: Node) -> bool:
    if n.op == "input":
        return buffer_contiguous(n.attr("buf"))
    return n.op not in VIEW_OPS or (n.op == "reshape" and _contiguous_producer(n.inputs[0]))


def _flat(n: Node) -> bool:
    body = n.attr("body")
    return n.attr("kind") == "loop" and is_flat(body) and fusion_outputs(body)[0].ndim != 1 and \
        all(_contiguous_producer(i) for i in n.inputs)


def lower(roots: list[Node], backend: str, memory, order: list[Node]) -> Program:
    """Plan the program: its steps, kernel objects (generated source; nothing written,
    imported or compiled) and memory. `memory`: the memory plan of these roots
    (opt/buffer_assignment.py's MemoryPlan: peak, copied, inplace, freed_after, into), so
    liveness is not built again here; `order`: the roots' toposort (the optimizer's)."""
    interpreted, consts_of = [], {}
    fills: dict[int, object] = {}
    fusions, requests = [], []
    be = backends.get(backend)
    into = {id(writer(n)): n for n in order if id(n) in memory.into}
    passed = {id(i) for n in order if id(n) in memory.into for i in (n, n.inputs[1])
              if i.op != "fusion"}
    flat: set[int] = set()
    for n in order:
        if n.op == "fusion" and backend == "cpu" and consts_only(n.attr("body")):
            fills[id(n)] = const_value(leaf_const(n.attr("body")))  # np.full: no kernel
        elif n.op == "fusion":
            work = max([o.size for o in fusion_outputs(n.attr("body"))] +
                       [i.size for i in n.inputs])
            fusions.append(n)
            is_flat = _flat(n) and id(n) not in into  # (one writing into a slice subscripts)
            if is_flat:
                flat.add(id(n))
            requests.append((n.attr("body"), n.attr("kind"), is_flat, work >= PARALLEL_MIN))
            consts_of[id(n)] = [const_value(c) for c in Emitter(n.attr("body")).consts]
        elif n.op not in ("input", "const", "output") and n.op not in VIEW_OPS + LIBRARY_OPS:
            interpreted.append(n.op)
    kernels = plan_kernels(requests, be) if requests else []
    kernel_of = {id(n): k for n, k in zip(fusions, kernels)}
    strided = strided_views(order, roots, flat) if hasattr(be, "strided_view") else set()
    return Program(list(roots), order, kernels, kernel_of, backend, memory.peak, memory.copied,
                   interpreted, consts_of, set(memory.inplace), fills, _dead_after(order, roots),
                   memory.freed_after, root_storage=memory.root_storage, strided=strided,
                   into=into, passed=passed)


def compile(program: Program) -> None:
    """Load the program's kernels not loaded yet (their batched module written and imported),
    then start compiling them (in the background where the backend can). Once a program."""
    if program.compiled:
        return
    be = backends.get(program.backend)
    load_kernels(program.kernels, be)
    program.compiled = True
    be.prepare(
        [(n, k, program.consts_of[id(n)], into_stand_in(program.into.get(id(n))))
         for n in program.order if (k := program.kernel_of.get(id(n))) is not None])


def _dead_after(order: list[Node], roots: list[Node]) -> list[list[int]]:
    """The values to let go after each position, so a dead buffer returns to the allocator
    (the cpu pool hands it out again within the same run)."""
    last: dict[int, int] = {}
    for pos, n in enumerate(order):
        for i in n.inputs:
            last[id(i)] = pos
    keep = {id(r) for r in roots}
    dead: list[list[int]] = [[] for _ in order]
    for i, pos in last.items():
        if i not in keep:
            dead[pos].append(i)
    return dead


def _storages(v) -> list:
    """The objects that own v's memory (a view's base, a multi-output fusion's parts)."""
    if isinstance(v, (list, tuple)):
        return [s for x in v for s in _storages(x)]
    while getattr(v, "base", None) is not None and not isinstance(v, np.generic):
        v = v.base
    return [] if isinstance(v, np.generic) or not hasattr(v, "nbytes") else [v]


class PeakMeter:
    """The most bytes of intermediate storage the executor's values held at once: storage
    shared by views counts once; inputs and results are the user's and do not count."""

    def __init__(self):
        self.user: set[int] = set()
        self.peak = 0

    def exclude(self, v) -> None:
        self.user.update(id(s) for s in _storages(v))

    def step(self, vals: dict) -> None:
        live = {id(s): s.nbytes for v in vals.values() for s in _storages(v)
                if id(s) not in self.user}
        self.peak = max(self.peak, sum(live.values()))


# the stats a device run is judged by, per run in Program.last_run
DEVICE_COUNTERS = ("kernels_launched", "host_waits", "h2d_copies", "h2d_bytes", "d2h_copies",
                   "d2h_bytes")


def format_counters(c: dict) -> str:
    return (f"{c['kernels_launched']} launches, {c['host_waits']} host waits, "
            f"h2d {c['h2d_copies']} copies {c['h2d_bytes']} B, "
            f"d2h {c['d2h_copies']} copies {c['d2h_bytes']} B")


# what run does at a position of the program's order
_INPUT, _CONST, _FILL, _FUSION, _OUTPUT, _NODE, _VIEW, _SAME = range(8)


def _steps(program: Program) -> list[tuple]:
    """Per position of program.order: (what, id(node), node, input ids, a, b, dead), where
    `dead` lists the values no later position reads; a and b: the constant's value, a fill's
    value, a fusion's (kernel, (constants, reuse, output types, body, slices)), an output's
    index, a node's whether it updates in place; an input's `b`: whether it is read on the
    host only. A fusion writing into a slice (`into`) has the slices in its `b` and its base
    as its last input id; its slice write is _SAME (its base's value, already written); a
    strided view is _VIEW."""
    starts_only = _starts_only(program.order)
    steps = []
    for n, dead in zip(program.order, program.dead_after):
        nid = id(n)
        ins = tuple([id(i) for i in n.inputs])
        if n.op == "input":
            step = (_INPUT, nid, n, ins, n.attr("buf"), nid in starts_only, dead)
        elif n.op == "const":
            step = (_CONST, nid, n, ins, const_value(n), None, dead)
        elif nid in program.fills:
            write = program.into.get(nid)  # (a fill into a slice: its base is its input)
            step = (_FILL, nid, n, ins if write is None else (id(write.inputs[0]),),
                    program.fills[nid], None if write is None else write.attr("slices"), dead)
        elif n.op == "fusion":
            body = n.attr("body")
            outs = tuple((o.shape, o.dtype) for o in fusion_outputs(body))
            write = program.into.get(nid)
            if write is not None:
                ins += (id(write.inputs[0]),)
            step = (_FUSION, nid, n, ins, program.kernel_of[nid],
                    (program.consts_of[nid], n.attr("reuse"), outs, body,
                     None if write is None else write.attr("slices")), dead)
        elif n.op == "output":
            step = (_OUTPUT, nid, n, ins, n.attr("index"), None, dead)
        elif nid in program.passed:
            step = (_SAME, nid, n, ins, None, None, dead)
        elif nid in program.strided:
            step = (_VIEW, nid, n, ins, None, None, dead)
        else:
            step = (_NODE, nid, n, ins, nid in program.inplace, n.op not in VIEW_OPS + LIBRARY_OPS,
                    dead)
        steps.append(step)
    return steps


def _starts_only(order: list[Node]) -> set[int]:
    """The leaves read only as a dynamic slice's starts (a cached plan's lifted slice
    parameters): a device backend reads them on the host, so they are neither uploaded nor
    waited for."""
    use: dict[int, bool] = {}
    for n in order:
        for k, i in enumerate(n.inputs):
            if i.op == "input":
                use[id(i)] = use.get(id(i), True) and n.op == "dynamic_slice" and k == 1
    return {i for i, only in use.items() if only}


_NO_BIND: dict = {}


def run(program: Program, bind: dict[int, Buffer] | None = None,
        meter: PeakMeter | None = None, graph=None) -> list[Buffer]:
    """Run the program; `bind` maps input nodes (by id) to the buffers to read instead of
    theirs (a cached plan's slots); `meter` measures what its intermediates held; `graph`:
    the user's graph it computes (roots, or a function building them), where a device error
    found at a later wait is located (backends with `run_graph`)."""
    be = backends.get(program.backend)
    steps = program.steps
    if steps is None:
        steps = program.steps = _steps(program)
    if bind is None:
        bind = _NO_BIND
    if meter is not None or be.releases_storage or not program.warm:
        if graph is None or not hasattr(be, "run_graph"):
            return _run(program, be, steps, bind, meter)
        be.run_graph = graph
        try:
            return _run(program, be, steps, bind, meter)
        finally:
            be.run_graph = None
    # a warm program (every kernel compiled) with nothing to measure or hand back: _run's
    # steps, less what does not apply, fusions by their launchers
    fast = program.fast
    if fast is None:
        fast = program.fast = _fast_steps(program, be, steps)
    inputs, fast = fast
    vals: dict[int, object] = {}
    if be.reads_host_arrays:
        for nid, a in inputs:
            buf = bind.get(nid) or a
            v = buf.value
            vals[nid] = v if type(v) is np.ndarray else be.from_buffer(buf)
    else:
        for nid, a in inputs:
            vals[nid] = be.from_buffer(bind.get(nid) or a)
    get = vals.__getitem__
    for what, nid, n, ins, a, b, dead in fast:
        if what == _FUSION:
            if be.ready(b) or not tiled_fits(n):
                vals[nid] = a(list(map(get, ins)))
            else:  # its kernel is compiling in the background (for other layouts): NumPy
                vals[nid] = _run_tiled(be, n, list(map(get, ins)), a.slices)
        elif what == _SAME:
            vals[nid] = vals[ins[0]]
        elif what == _VIEW:
            vals[nid] = _view(be, n, list(map(get, ins)))
        elif what == _CONST:
            vals[nid] = a
        elif what == _FILL:
            vals[nid] = fill(n.shape, n.dtype, a) if b is None else \
                _fill_into(be, n, vals, ins, a, b)
        elif what == _OUTPUT:
            vals[nid] = vals[ins[0]][a]
        else:
            if b:
                STATS.interpreted_nodes += 1
            t0 = time.perf_counter()
            vals[nid] = be.run_node(n, list(map(get, ins)), a)
            STATS.run_s += time.perf_counter() - t0
        for d in dead:
            vals.pop(d, None)
    be.start_deferred()
    out = []
    for r in program.roots:
        v = vals[id(r)]
        if isinstance(v, np.generic):
            v = np.asarray(v)
        buf = _new(Buffer)  # Buffer(v), inline
        buf.value = v
        buf.host = v if isinstance(v, np.ndarray) else None
        buf.owner = None
        out.append(buf)
    return out


_new = object.__new__


def _fast_steps(program: Program, be, steps: list) -> tuple[list, list]:
    """A warm program's run: (its leaves as (id, buffer), read first; the other steps, where a
    fusion's `a` is the function params -> its value (the backend's launcher where it has one
    for it, else _launch) and its `b` its kernel). A leaf's value goes at its last reader's
    position as in `steps` (leaves are no one's readers)."""
    inputs, out = [], []
    for step in steps:
        what, nid, n, ins, kernel, b, dead = step
        if what == _INPUT:
            inputs.append((nid, kernel))  # (its `dead` is empty: a leaf reads nothing)
            continue
        if what == _FUSION:
            consts, reuse, outs_types, body, slices = b
            fn = None
            if reuse is None and slices is None and not kernel.flat and \
                    len(outs_types) == 1 and body.op != "tuple":
                fn = be.launcher(kernel, body, consts, outs_types[0])
            if fn is None:
                def fn(params, kernel=kernel, n=n, b=b):
                    return _launch(be, kernel, n, params, *b)
            fn.slices = slices  # (the tiered path writes into the slice too)
            step = (what, nid, n, ins, fn, kernel, dead)
        out.append(step)
    return inputs, out


def _run(program: Program, be, steps: list, bind: dict, meter: PeakMeter | None
         ) -> list[Buffer]:
    """run(), every case."""
    before = [getattr(STATS, c) for c in DEVICE_COUNTERS] if be.name == "cuda" else None
    vals: dict[int, object] = {}
    # the results' storage, as soon as it is made: a multi-output fusion's parts are results
    # before the `output` nodes that pick them out run
    results: dict[int, list] = {}
    for r in program.roots if meter is not None else ():
        for m in storage_chain(r, program.inplace):  # (all hold the result's memory)
            results.setdefault(id(m), []).append(None)
        if m.op == "output":
            results.setdefault(id(m.inputs[0]), []).append(m.attr("index"))
    release = be.release if be.releases_storage else None
    roots_of_storage = program.storage_roots if release is not None else set()
    stores: dict[int, object] = {}  # storage roots' values, until their storage dies
    # kernels that compile at their first launch here, for the progress bar (a kernel once
    # compiled stays so: a program whose kernels all are looks no more)
    cold = set() if program.warm else \
        {id(k) for k in program.kernels
         if k.pending is None and not getattr(k.fn, "overloads", True)}
    bar = Bar(len(cold)).__enter__() if cold else None
    try:
        for pos, (what, nid, n, ins, a, b, dead) in enumerate(steps):
            if what == _FUSION:
                if not be.ready(a) and tiled_fits(n):  # its kernel is still compiling: NumPy
                    vals[nid] = _run_tiled(be, n, [vals[i] for i in ins], b[4])
                else:
                    vals[nid] = _launch(be, a, n, [vals[i] for i in ins], *b)
                    if cold and id(a) in cold:  # its first launch compiled it
                        cold.discard(id(a))
                        bar.step()
            elif what == _INPUT:
                buf = bind.get(nid) or a
                v = buf.value
                vals[nid] = v if b and isinstance(v, np.ndarray) else be.from_buffer(buf)
            elif what == _CONST:
                vals[nid] = a
            elif what == _FILL:
                vals[nid] = fill(n.shape, n.dtype, a) if b is None else \
                    _fill_into(be, n, vals, ins, a, b)
            elif what == _OUTPUT:
                vals[nid] = vals[ins[0]][a]
            elif what == _SAME:
                vals[nid] = vals[ins[0]]
            elif what == _VIEW:
                vals[nid] = _view(be, n, [vals[i] for i in ins])
            else:
                if b:
                    STATS.interpreted_nodes += 1
                t0 = time.perf_counter()
                args = [vals[i] for i in ins]
                vals[nid] = be.run_node(n, args, a)
                del args
                STATS.run_s += time.perf_counter() - t0
            if meter is not None:
                if what == _INPUT:
                    meter.exclude(vals[nid])
                for k in results.get(nid, ()):
                    meter.exclude(vals[nid] if k is None else vals[nid][k])
                meter.step(vals)
            if release is not None:
                if nid in roots_of_storage:
                    stores[nid] = vals[nid]
                for s in program.freed_after[pos]:
                    release(stores.pop(s, None))
            for d in dead:
                vals.pop(d, None)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if not program.warm:
        program.warm = all(k.pending is None and getattr(k.fn, "overloads", True)
                           for k in program.kernels)
    be.start_deferred()
    if before is not None:
        be.guard([vals[id(r)] for r in program.roots])
        program.last_run = {c: getattr(STATS, c) - b for c, b in zip(DEVICE_COUNTERS, before)}
        if CONFIG.debug >= 1:
            log.debug(f"device run: {format_counters(program.last_run)}")
    out = []
    for r in program.roots:
        v = vals[id(r)]
        if isinstance(v, np.generic):
            v = np.asarray(v)
        out.append(Buffer(v))
    return out


def storage_chain(n: Node, inplace) -> list[Node]:
    """n and the values whose memory n's value is: a view's base, an update's operand where it
    runs in place (`inplace`: Program.inplace), the param a fusion writes over (`reuse`); the
    last one allocated it."""
    chain = [n]
    while True:
        if n.op in VIEW_OPS or id(n) in inplace:
            n = n.inputs[0]
        elif n.op == "fusion" and n.attr("reuse") is not None:
            n = n.inputs[n.attr("reuse")]
        else:
            return chain
        chain.append(n)


def _fresh_outputs(got, params: list):
    """The tiled tier's results as a kernel's are: fresh, writeable buffers. NumPy returns a
    view where the group's output is a movement of a param (or of another output), and buffer
    assignment may update a fusion's output in place: the view would write into its source."""
    taken = {id(s) for s in _storages(params)}
    outs = []
    many = isinstance(got, (list, tuple))
    for v in got if many else [got]:
        mine = _storages(v)
        if isinstance(v, np.ndarray) and (not v.flags.writeable or
                                          any(id(s) in taken for s in mine)):
            v = np.array(v)
            mine = [v]
        taken.update(id(s) for s in mine)
        outs.append(v)
    return outs if many else outs[0]


def _view(be, n: Node, args: list):
    """A view kernels read in place (Program.strided): the backend's strided view of its
    operand, or its own run where the backend declines (a layout it cannot view)."""
    t0 = time.perf_counter()
    v = be.strided_view(n, args)
    if v is None:
        v = be.run_node(n, args)
    STATS.run_s += time.perf_counter() - t0
    return v


def _fill_into(be, n: Node, vals: dict, ins: tuple, value, slices):
    """A constant fill written into the slice of its base (ins[0]) it is assigned to."""
    out = be.slice_view(vals[ins[0]], slices, n.shape)
    out[...] = value
    return out


def _run_tiled(be, n: Node, params: list, slices):
    """A fusion whose kernel is still compiling, through NumPy (tiled.py); with `slices`, its
    value written into that slice of its base (params' last)."""
    t0 = time.perf_counter()
    if slices is None:
        out = _fresh_outputs(run_tiled(n, params), params)
    else:
        out = be.slice_view(params[-1], slices, n.shape)
        out[...] = run_tiled(n, params[:-1])
    STATS.tiered_runs += 1
    STATS.run_s += time.perf_counter() - t0
    return out


def _launch(be, kernel: Kernel, n: Node, params: list, consts: list, reuse: int | None = None,
            outs_types: tuple | None = None, body: Node | None = None, slices=None):
    """Run a fusion kernel; a multi-output fusion returns the list of its outputs. `reuse`:
    the param whose buffer the (elementwise) result is written over, when its layout allows;
    `outs_types`: the outputs' (shape, dtype) (from the body where not given); `body`: n's;
    `slices`: the one output is written into this slice of params' last (its base: `into`)."""
    if body is None:
        body = n.attr("body")
    p = params[reuse] if reuse is not None else None
    if slices is not None:
        outs = [be.slice_view(params[-1], slices, n.shape)]
        params = params[:-1]
    elif p is not None and be.is_contiguous(p) and getattr(getattr(p, "flags", None),
                                                           "writeable", True):
        outs = [p.reshape(n.shape)]  # (differs from p's shape at most by length-1 axes)
    elif outs_types is not None and len(outs_types) == 1:
        outs = [be.empty(*outs_types[0])]
    else:
        if outs_types is None:
            outs_types = [(o.shape, o.dtype) for o in fusion_outputs(body)]
        outs = [be.empty(shape, dtype) for shape, dtype in outs_types]
    if kernel.flat:
        params = [be.flatten(p if be.is_contiguous(p) else be.contiguous(p)) for p in params]
        targets = [be.flatten(o) for o in outs]
    else:
        targets = outs
    be.launch(kernel, body, targets, params, consts)
    return outs if body.op == "tuple" else outs[0]
