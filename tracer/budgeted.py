"""Budgeted evaluation: a planned program run within the active memory budget (tracer/budget.py),
whole where what it allocates fits, else split along the rows of a value its outputs follow
(opt/splitter.py) in chunks that fit beside what the split holds, or MemoryBudgetError before
anything is allocated. The pages a program reads from read-only mapped files count with what it
allocates, and are dropped once read (tracer/mapped.py): a chunk reads only its rows of such a
file. The engine calls `run`.

On a device backend (cuda) the chunks' results stay on the device: each chunk's rows are copied
into device outputs and its partials are added to the running ones by its own kernels, so
nothing comes back to the host before the user reads a result. Host inputs go up a chunk's rows
at a time through pinned staging buffers, on a second stream while the chunks run
(CudaBackend.overlapped_uploads): the next chunk's upload overlaps this one's kernels, the
kernels wait on its event, and an upload into a pool block waits on the fence of the block's
last use. The simulator runs every launch and copy at once: tests record the waits issued, and
no GPU has run it yet. The device pool's idle blocks count against the budget: they are kept
only within the room a plan leaves (DevicePool.within).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

import numpy as np

from tracer.ir.node import Buffer, make, toposort
from tracer.ir.registry import OPS, VIEW_OPS
from tracer.ir.stats import STATS
from tracer.cuda_kernels import backends, executor, tiled
from tracer.cuda_kernels.executor import PeakMeter
from tracer.cuda_kernels.layout import over_one_element
from tracer.opt import splitter
from tracer.opt.splitter import row_block
from . import dask_cluster as cluster, dask_tasks, mapped
from .budget import Budget, MemoryBudgetError, beside, fmt_bytes


def _result_bytes(program) -> int:
    """The memory a program's results take that is new: all of the buffer a result lives in
    (a view of a larger one holds all of it); a result that is an input, or a view of one,
    is the user's."""
    bases = {}
    for r in program.roots:
        r = executor.storage_chain(r, program.inplace)[-1]
        if r.op not in ("input", "const"):
            bases[id(r)] = r.nbytes
    return sum(bases.values())


def need_bytes(program, roots) -> int:
    """What a program allocates at most: its planned peak of intermediates plus its results,
    and the pages it reads of mapped files (`roots`: the graph it computes, its real leaves)."""
    return program.peak_bytes + _result_bytes(program) + mapped.span(mapped.reads(roots))


def run(roots, program, bind, budget: Budget, split, be: str, execute, plan) -> list:
    """Evaluate a planned program within the budget: whole where what it allocates fits, split
    (run_split) where not. `split`: the optimizer's, found under the budget (a cached plan's is
    of a graph of the same structure). The tiered path (cuda_kernels/tiled.py) may use what
    the plan leaves of the budget. The engine's `execute(roots)` evaluates a graph and
    `plan(roots, be)` plans one (nothing compiled or run)."""
    read = mapped.reads(roots)
    need = program.peak_bytes + _result_bytes(program) + mapped.span(read)
    if need > budget.limit:
        return run_split(roots, program, split, budget, be, execute, plan, need)
    meter = PeakMeter()
    try:
        with tiled.room(budget.limit - need), _idle_within(be, budget.limit - need):
            bufs = executor.run(program, bind, meter)
    finally:
        mapped.release(read)
    STATS.planned_peak_bytes = need
    STATS.measured_peak_bytes = meter.peak + _result_bytes(program)
    return bufs


@contextlib.contextmanager
def _idle_within(be: str, room: int):
    """The backends keep blocks no array uses for later evaluations (HostPool, DevicePool);
    under a budget those count as used. The device pool keeps at most the `room` the plan
    leaves of the budget, and lets the rest go now (DevicePool.within); the host pool keeps
    none: one of another size must not stay beside a new block (the last, shorter chunk of a
    split)."""
    pool = backends.get(be).pool
    if pool is None:
        yield
        return
    if hasattr(pool, "within"):
        with pool.within(room):
            yield
        return
    old, pool.IDLE_CAP = pool.IDLE_CAP, 0
    try:
        yield
    finally:
        pool.IDLE_CAP = old


def _largest(program, k: int = 3) -> str:
    """The biggest values a program makes and the ops that make them."""
    made = [n for n in _made(program) if n.nbytes]
    made.sort(key=lambda n: -n.nbytes)
    parts = []
    for n in made[:k]:
        what = n.op
        if n.op == "fusion":
            ops = [m.op for m in toposort([n.attr("body")]) if m.op not in ("param", "const", "tuple")]
            what = f"a fused kernel of {', '.join(dict.fromkeys(ops))}"
        parts.append(f"{n.dtype}{list(n.shape)} ({fmt_bytes(n.nbytes)}) made by {what}")
    return "; ".join(parts) or "none"


def over_budget(program, need: int, budget: Budget, why: str,
                smallest: int) -> MemoryBudgetError:
    return MemoryBudgetError(
        f"tracer.memory_budget: this evaluation plans {fmt_bytes(need)} of "
        f"intermediate buffers and results, over the budget of {fmt_bytes(budget.limit)}; "
        f"{why}. Largest buffers: {_largest(program)}. The smallest budget that would work: "
        f"{fmt_bytes(smallest)} ({smallest} bytes).")


def _stand_in(n):
    """A leaf of n's type and C layout over one element of memory: enough to plan a chunk
    (planning reads no values)."""
    return make("input", (), n.shape, n.dtype,
                (("buf", Buffer(over_one_element(n.shape, n.dtype))),))


def _made(program) -> list:
    """The values a program allocates (views and leaves hold no memory of their own)."""
    return [n for n in program.order if n.op not in ("input", "const", "output") + VIEW_OPS]


def _need(g, be, plan) -> int:
    """What evaluating graph g allocates at most (nothing is allocated to find out)."""
    return need_bytes(plan(g, be), g)


def _user_rows(source):
    """The split source's value where it is the user's memory, an input or a reshape of one
    that is a view of it (its rows are read from there chunk by chunk), else None (it is
    computed before the chunks)."""
    if source.op == "input":
        return source.attr("buf").value
    if splitter.reshaped_input(source):
        v = source.inputs[0].attr("buf").value
        if isinstance(v, np.ndarray) and v.flags.c_contiguous:
            return v.reshape(source.shape)
    return None


def _leaf_of(n, value):
    return make("input", (), n.shape, n.dtype, (("buf", Buffer(value)),))


@dataclass
class _Stages:
    """A split evaluation's plan: what each stage allocates beside what it holds."""
    split: splitter.Split
    deps: list      # (root, its row axis): written chunk by chunk into arrays made first
    cuts: list      # reductions over the split rows, combined from the chunks' partials
    pre: list       # values read whole by the chunks, and the results independent of them
    post: list      # results computed from the combined reductions
    held: int       # bytes held through the chunks: pre, the partials and the deps' arrays
    pre_need: int
    post_need: int
    on_device: bool = False  # the chunks' results stay on the device (see _run_chunk)

    def chunk_graph(self, rows: int, lo: int, src_rows, realized, running=None) -> list:
        """The graph of one chunk. `running`: leaves of the cuts' running partials, which the
        chunk's own kernels add its partials to (in the reductions' epilogues)."""
        targets = self.deps + [(c, None) for c in self.cuts]
        g = splitter.chunk_graph(targets, self.split, lo, min(lo + rows, self.split.rows),
                                 src_rows(lo, min(lo + rows, self.split.rows)), realized)
        nd = len(self.deps)
        for j, (c, acc) in enumerate(zip(self.cuts, running or ())):
            g[nd + j] = make(OPS[c.op].ufunc.__name__, (acc, g[nd + j]), c.shape, c.dtype)
        return g

    def smallest(self, chunk_need: int) -> int:
        """The budget the three stages need, with chunks of this need."""
        return max(self.pre_need, self.held + chunk_need, self.held + self.post_need)


def _stages(roots, split, be, plan) -> _Stages:
    deps = [(r, a) for r, a in zip(roots, split.root_axes) if isinstance(a, int)]
    cuts = [c for c, _ in split.cuts.values()]
    post = [r for r, a in zip(roots, split.root_axes) if a == splitter.CUT and id(r) not in
            split.cuts]
    pre = ([split.source] if _user_rows(split.source) is None else []) + split.frontier + \
        [r for r, a in zip(roots, split.root_axes) if a is None]
    pre = list({id(n): n for n in pre}.values())
    held = sum(n.nbytes for n in pre) + sum(c.nbytes for c in cuts) + \
        sum(r.nbytes for r, _ in deps)
    pre_need = _need(pre, be, plan) if pre else 0
    post_need = 0
    if post:
        stand = {id(n): _stand_in(n) for n in pre + cuts}
        post_need = _need(splitter.chunk_graph([(r, None) for r in post], split, 0, 0, None,
                                               stand), be, plan)
    return _Stages(split, deps, cuts, pre, post, held, pre_need, post_need)


def _chunk_rows(st: _Stages, program, whole: int, budget: Budget, src_rows, be, plan,
                per_row: int = 0) -> tuple[int, int]:
    """(rows, need): the most rows a chunk may have whose need (and `per_row` bytes a row
    besides) fits beside what is held, or raise MemoryBudgetError naming the smallest budget
    that works."""
    stand = {id(n): _stand_in(n) for n in st.pre}
    split, n_rows = st.split, st.split.rows
    # on a device a chunk past the first adds its partials to the running ones: the most a
    # chunk needs
    running = [_stand_in(c) for c in st.cuts] if st.on_device else None
    need_of = lambda rows: _need(st.chunk_graph(rows, 0, src_rows, stand, running), be,
                                 plan) + rows * per_row  # noqa: E731
    # start from chunks whose biggest value (or read of a mapped source) is about split_size
    # (the big values grow with the rows), then shrink until the chunk's plan fits beside what
    # is held
    biggest = max([n.nbytes for n in _made(program)] + [1] +
                  [split.source.nbytes] * mapped.frozen(_user_rows(split.source)))
    rows = max(1, min(n_rows, int(n_rows * budget.split_size / biggest)))
    need = need_of(rows)
    while st.held + need > budget.limit and rows > 1:
        room = max(budget.limit - st.held, 1)
        rows = max(1, min(rows - 1, int(rows * room / need * 0.95)))
        need = need_of(rows)
    if st.smallest(need) <= budget.limit:
        return rows, need
    smallest = min(whole, st.smallest(need_of(1)))
    if st.held + need > budget.limit:
        why = (f"split into single rows along axis {split.axis} of {split.source.dtype}"
               f"{list(split.source.shape)} it still needs {fmt_bytes(st.held + need)}, "
               f"{fmt_bytes(st.held)} of it held through the chunks (the row-wise results, "
               f"the values the chunks read whole)")
    elif st.pre_need > budget.limit:
        why = f"the values the chunks read whole need {fmt_bytes(st.pre_need)}"
    else:
        why = f"what follows the split reductions needs {fmt_bytes(st.held + st.post_need)}"
    raise over_budget(program, whole, budget, why, smallest)


def run_split(roots, program, split, budget: Budget, be: str, execute, plan,
              whole: int | None = None) -> list:
    """Evaluate roots within the budget by splitting them as the optimizer found (`split`, or
    None where nothing splits: opt/splitter.py), or raise MemoryBudgetError before anything is
    allocated. `execute(roots)` evaluates a graph.

    Stages: the values the chunks read whole (and outputs independent of the split rows);
    the chunks, each writing its rows of the row-wise outputs and adding its partial to each
    reduction over the rows (combined in chunk order); then the outputs computed from those
    combined reductions. The chunks and what follows them run within what the earlier stages
    hold of the budget. `whole`: what the program needs run whole (need_bytes), if known."""
    if whole is None:
        whole = need_bytes(program, roots)
    if split is None:
        raise over_budget(program, whole, budget, "no input or value has rows that every "
                          "output follows, so it cannot be split", whole)
    split = split.on(roots)
    on = cluster.active()
    st = _stages(roots, split, be, plan)
    st.on_device = on is None and backends.get(be).device_memory
    stand = {id(n): _stand_in(n) for n in st.pre}
    user = _user_rows(split.source)
    source = user if user is not None else stand[id(split.source)].attr("buf").value
    if on is None:
        rows, need = _chunk_rows(st, program, whole, budget, _rows_of(source, split.axis), be,
                                 plan)
    else:  # chunks sized to a worker, which holds what every chunk reads whole
        rows_out = sum(r.nbytes for r, _ in st.deps)
        keep = st.held > budget.limit  # (the row-wise results stay on the cluster)
        if st.held - keep * rows_out > budget.limit:
            raise over_budget(program, whole, budget, f"the client holds {fmt_bytes(st.held)} "
                              "through the chunks (the row-wise results, the values the chunks "
                              "read whole)", st.held)
        leaves = [n for n in toposort(roots) if n.op == "input"]
        # a worker holds the leaves its chunks read whole (in a chunk's graph as they are)
        # and its chunk's rows of the others (those of a one-row chunk), made or fetched,
        # then cut: twice
        ids, pre = {id(n) for n in leaves}, {id(n) for n in stand.values()}
        probe = [n for n in toposort(st.chunk_graph(1, 0, _rows_of(source, split.axis), stand))
                 if n.op == "input" and id(n) not in pre]
        on_worker = replace(st, held=sum(n.nbytes for n in st.pre) +
                            sum(n.nbytes for n in probe if id(n) in ids))
        rows, need = _chunk_rows(on_worker, program, whole, on.worker_budget,
                                 _rows_of(source, split.axis), be, plan,
                                 2 * sum(cluster.read_bytes(n.attr("buf").value)
                                         for n in probe if id(n) not in ids))
        room = on.worker_budget.limit - on_worker.held - need  # (for a task's further rows)
    # run: the values read whole first, then the chunks into the outputs
    realized, measured = {}, 0
    if st.pre:
        for n, buf in zip(st.pre, execute(st.pre)):
            realized[id(n)] = make("input", (), n.shape, n.dtype, (("buf", buf),))
        measured = STATS.measured_peak_bytes
    if user is None:
        source = realized[id(split.source)].attr("buf").value
    src_rows = _rows_of(source, split.axis)
    empty = backends.get(be).empty if st.on_device else np.empty
    outs = None if on is not None and keep else [empty(r.shape, r.dtype) for r, _ in st.deps]
    partial: list = [None] * len(st.cuts)
    if on is not None:
        shared = {id(n.attr("buf")) for n in leaves}
        shared.update(id(r.attr("buf")) for r in realized.values())
        g = st.chunk_graph(rows, 0, src_rows, realized)
        names = "-".join(k.name for k in plan(g, be).kernels[:2]) or "chunk"
        kept = dask_tasks.run_chunks(st, rows, room, src_rows, realized, outs, partial, shared,
                                     names)
        measured = max(measured, st.held - keep * rows_out)
    else:
        room = budget.limit - st.smallest(need)
        with beside(budget, st.held), \
                _idle_within(be, room) if st.on_device else contextlib.nullcontext(), \
                backends.get(be).overlapped_uploads() if st.on_device else \
                contextlib.nullcontext():
            for lo in range(0, split.rows, rows):
                peak = _run_chunk(st, rows, lo, src_rows, realized, execute, outs, partial, be)
                measured = max(measured, st.held + peak)
    got = kept if outs is None else [Buffer(o) for o in outs]
    result = {id(r): b for (r, _), b in zip(st.deps, got)}
    for c, v in zip(st.cuts, partial):
        realized[id(c)] = _leaf_of(c, v if st.on_device else np.asarray(v, c.dtype))
        result[id(c)] = realized[id(c)].attr("buf")
    if st.post:
        g = splitter.chunk_graph([(r, None) for r in st.post], split, 0, 0, None, realized)
        with beside(budget, st.held):
            for r, buf in zip(st.post, execute(g)):
                result[id(r)] = buf
        measured = max(measured, st.held + STATS.measured_peak_bytes)
    STATS.measured_peak_bytes = measured
    STATS.planned_peak_bytes = st.smallest(need)
    STATS.split_chunks += -(-split.rows // rows)
    for r in roots:
        if id(r) not in result:
            result[id(r)] = realized[id(r)].attr("buf")
    return [result[id(r)] for r in roots]


def _rows_of(value, axis: int):
    return lambda lo, hi: row_block(value, axis, lo, hi)


def _run_chunk(st: _Stages, rows: int, lo: int, src_rows, realized, execute, outs, partial,
               be: str) -> int:
    """One chunk: its rows of the row-wise outputs, its partials added to the cuts'; returns
    its measured peak. On a device the results stay there (nothing is copied back before the
    user reads a result): the rows are copied into device outputs, and past the first chunk
    the chunk's own kernels add its partials to the running ones, in chunk order as on the
    host."""
    running = [_leaf_of(c, p) for c, p in zip(st.cuts, partial)] \
        if st.on_device and st.cuts and partial[0] is not None else None
    bufs = execute(st.chunk_graph(rows, lo, src_rows, realized, running))
    peak = STATS.measured_peak_bytes
    hi = min(lo + rows, st.split.rows)
    for out, (_, ax), buf in zip(outs, st.deps, bufs):
        if st.on_device:
            backends.get(be).put(out, buf.value, ax, lo)
        else:
            row_block(out, ax, lo, hi)[...] = buf.value
    for j, (c, buf) in enumerate(zip(st.cuts, bufs[len(st.deps):])):
        if st.on_device:
            partial[j] = buf.value  # (the running partial, this chunk's added)
            continue
        part = np.asarray(buf.value)
        partial[j] = part if partial[j] is None else \
            OPS[c.op].ufunc(partial[j], part).astype(c.dtype)
    return peak
