"""The chunk stage of budgeted.run_split on a Dask cluster (`tracer.cluster`,
tracer/dask_cluster.py): the chunks as Dask tasks.

A task runs consecutive chunks of the split rows on one worker, one after another under the
worker's budget. The chunks of one size share one graph, built and packed once on the client
(ir/wire.py); only their leaves change (rows of the split, blocks of a value of the cluster's),
and the worker's plan cache finds the plan from the second chunk on. A task takes as many
chunks as the room its worker has beside one chunk's plan holds their rows (the rows read and
the rows written), and no more than the rows left over GUIDE x the workers (guided
self-scheduling: the first tasks are long, the last short, so the workers finish together).
The client and the scheduler (one process on a LocalCluster) spend milliseconds of CPU per Dask
task whatever it computes; on a host whose cores are the workers', that time is theirs.
"""
from __future__ import annotations

import itertools
import uuid

import numpy as np

from tracer.cuda_kernels.backends import to_host
from tracer.ir.registry import OPS
from tracer.ir.stats import STATS, Stats
from tracer.ir.wire import leaves, pack, unpack
from tracer.opt.splitter import row_block
from . import dask_cluster, mapped
from .budget import Budget, MemoryBudgetError, memory_budget
from .dask_cluster import Recipe, Remote, _remote_rows

IN_FLIGHT_PER_WORKER = 2  # tasks sent ahead of the ones done (their rows wait on the worker)
GUIDE = 4  # a task takes at most 1/(GUIDE x workers) of the chunks left

_COUNTERS = list(Stats.__dataclass_fields__)
_IDS = itertools.count()

# the engine's chunk task (tracer.engine.chunk_task: a worker unpickles it by that name, which
# loads the engine there), set when the engine loads
TASK: list = [None]


# ---------------------------------------------------------------- on a worker

def run_task(execute, graphs: list, budget: Budget, backend: str, what: str, axes: list,
             combine: list, chunks: list, *args) -> dict:
    """Run a task's chunks on a worker (`execute`: the engine's), each under the worker's
    budget, on `backend` (the workers' backend, tracer.cluster's): `chunks` [(first row, end
    row, its graph in `graphs`, its leaves)], each leaf (kind, spec, indices into `args`): a
    value as it is, or a view of the blocks of rows it covers. Returns the row-wise outputs
    over the task's rows (`axes`: their row axes), the reductions' partials combined in chunk
    order (`combine`: their ufuncs and dtypes) and what the worker's counters gained."""
    import numba
    from distributed import get_worker  # (Dask is imported where a cluster is used)
    # the kernels' threads are the worker's (threads_per_worker), as Dask sets BLAS's to 1:
    # a worker does not take the cores of the others on its host (per thread in Numba)
    numba.set_num_threads(max(1, min(get_worker().state.nthreads, numba.config.NUMBA_NUM_THREADS)))
    before = [getattr(STATS, f) for f in _COUNTERS]
    last = {i: c for c, (_, _, _, ls) in enumerate(chunks) for _, _, idx in ls for i in idx}
    made: dict[int, np.ndarray] = {}  # blocks made here, kept while a later chunk reads them
    t0, t1 = chunks[0][0], chunks[-1][1]
    outs = parts = None
    lo = hi = None
    dask_cluster._ON_WORKER.on = True
    dask_cluster._ON_WORKER.backend = backend  # (the engine's backend() in this thread)
    try:
        for c, (lo, hi, g, ls) in enumerate(chunks):
            values = [_value(leaf, args, made) for leaf in ls]
            for i in [i for i in made if last[i] == c]:
                del made[i]
            with memory_budget(budget.limit, budget.split_size):
                bufs = execute(unpack(graphs[g], values))
            del values
            got = [np.array(to_host(b), copy=False) for b in bufs]
            rows, new = got[:len(axes)], got[len(axes):]
            if len(chunks) == 1:
                outs = rows
            else:
                if outs is None:
                    outs = [np.empty(v.shape[:ax] + (t1 - t0,) + v.shape[ax + 1:], v.dtype)
                            for v, ax in zip(rows, axes)]
                for out, ax, v in zip(outs, axes, rows):
                    row_block(out, ax, lo - t0, hi - t0)[...] = v
            parts = new if parts is None else \
                [uf(p, q).astype(dt) for (uf, dt), p, q in zip(combine, parts, new)]
    except MemoryBudgetError as e:
        raise MemoryBudgetError(f"tracer.cluster: the chunk of rows {lo}:{hi} of {what}: "
                                f"{e}") from None
    finally:
        dask_cluster._ON_WORKER.on = False
        dask_cluster._ON_WORKER.backend = ""
    return {"outs": outs, "parts": parts,
            "stats": [getattr(STATS, f) - v for f, v in zip(_COUNTERS, before)]}


def _value(leaf, args, made: dict) -> np.ndarray:
    """A chunk leaf's value from the task's arguments (a block made here once per task)."""
    kind, spec, idx = leaf
    if kind == "value":
        return args[idx[0]]
    blocks = []
    for i in idx:
        if type(args[i]) is Recipe:
            if i not in made:
                made[i] = args[i]()
            blocks.append(made[i])
        else:
            blocks.append(args[i])
    return _from_rows(spec, blocks)


def _from_rows(spec, blocks: list) -> np.ndarray:
    """A view's values from the blocks of rows that cover it, cut to the rows asked."""
    shape, strides, dtype, lo, hi, bounds, off = spec
    if not blocks or 0 in shape:
        return np.empty(shape, dtype)
    pieces = [b[max(lo - a, 0):min(hi, z) - a] for (a, z), b in zip(bounds, blocks)]
    rows = np.ascontiguousarray(pieces[0] if len(pieces) == 1 else np.concatenate(pieces))
    return np.ndarray(shape, dtype, buffer=rows, offset=off, strides=strides)


def _parts(result: dict) -> dict:
    return {"parts": result["parts"], "stats": result["stats"]}


def _combine(combine: list, a: dict, b: dict) -> dict:
    parts = [uf(x, y).astype(dt) for (uf, dt), x, y in zip(combine, a["parts"], b["parts"])]
    return {"parts": parts, "stats": [x + y for x, y in zip(a["stats"], b["stats"])]}


def _pick(result: dict, j: int, axis: int) -> np.ndarray:
    """A task's rows of output j, cut on `axis`: that axis first, as a Remote's block."""
    v = result["outs"][j]
    return np.ascontiguousarray(np.moveaxis(v, axis, 0) if axis else v)


def _same(value):
    return value


# ---------------------------------------------------------------- on the client

class _Args(list):
    """A task's arguments, each object once: `add` gives its index."""

    def __init__(self):
        super().__init__()
        self._at: dict[int, int] = {}

    def add(self, v) -> int:
        if id(v) not in self._at:
            self._at[id(v)] = len(self)
            self.append(v)
        return self._at[id(v)]


def _task_leaves(client, chunks: list, shared: set, sent: dict, args: _Args,
                 made: list) -> list:
    """Each chunk's leaves (`chunks`: [(first row, end row, its leaf buffers)]) as (kind,
    spec, argument indices). A view of a value of the cluster's becomes the blocks that cover
    it (Dask moves them; tasks go where they are): a block the task reads whole is made in the
    task, once; one that every chunk reads, or that this task reads only part of (the next
    tasks read the rest), is made once, as a task (added to `made`, to be copied to every
    worker). A value every chunk reads is one task's result (made again if lost, unlike
    scattered data); a chunk's own rows travel in its task (sent again if a worker dies)."""
    specs: list[list] = [[] for _ in chunks]
    for j in range(len(chunks[0][2])):
        bufs = [ls[j] for _, _, ls in chunks]
        at = [_remote_rows(b.value) for b in bufs]
        whole = id(bufs[0]) in shared
        if at[0] is not None:
            lo, hi = min(a[1] for a in at), max(a[2] for a in at)
            idx = {}
            for a, z, f in at[0][0].blocks:
                if a < hi and z > lo:
                    if type(f) is Recipe and (whole or a < lo or z > hi):
                        if id(f) not in sent:
                            sent[id(f)] = client.submit(f, pure=False)
                            made.append(sent[id(f)])
                        f = sent[id(f)]
                    idx[a, z] = args.add(f)
            for spec, b, (_, a0, z0, off) in zip(specs, bufs, at):
                cover = [k for k in idx if k[0] < z0 and k[1] > a0]
                v = b.value
                spec.append(("rows", (v.shape, v.strides, v.dtype, a0, z0, cover, off),
                             [idx[k] for k in cover]))
        elif whole:
            if id(bufs[0]) not in sent:
                sent[id(bufs[0])] = client.submit(_same, bufs[0].value, pure=False)
            i = args.add(sent[id(bufs[0])])
            for spec in specs:
                spec.append(("value", None, [i]))
        else:
            for spec, b in zip(specs, bufs):
                v = b.value
                if mapped.frozen(v):  # a mapped file's rows: read into the task, pages dropped
                    v = np.array(b.value)
                    mapped.release([b.value])
                spec.append(("value", None, [args.add(v)]))
    return specs


def run_chunks(st, rows: int, room: int, src_rows, realized, outs, partial, shared: set,
               names: str) -> list | None:
    """budgeted.run_split's chunk stage on the cluster: tasks of chunks of `rows` rows in
    flight a few per worker (`room`: the bytes a worker has beside one chunk's plan, for a
    task's rows of more chunks); each task's rows of the row-wise outputs written into `outs`
    as it comes back (or, `outs` None, kept on the cluster: their Remotes are returned); the
    reductions' partials combined on the cluster in chunk order into `partial`. `shared`:
    ids of the buffers every chunk reads whole (sent once), `names`: the chunk's kernels."""
    from distributed import as_completed  # (Dask is imported where a cluster is used)
    cl = dask_cluster.active()
    client = cl.client
    split, n_deps, n = st.split, len(st.deps), st.split.rows
    what = f"{split.source.dtype}{list(split.source.shape)}"
    axes = [ax for _, ax in st.deps]
    combine = [(OPS[c.op].ufunc, c.dtype) for c in st.cuts]
    sent: dict[int, object] = {}  # id(a shared buffer or a block's Recipe) -> its future
    # the split source's rows from the value of the cluster's it reads, if it reads one:
    # id(the Recipe of one of its blocks) -> the block's end row
    on = _remote_rows(src_rows(0, n)) if n and split.source.op == "input" else None
    passed = {id(f): z for _, z, f in on[0].blocks} if on is not None else {}
    token = f"{next(_IDS)}-{uuid.uuid4().hex[:8]}"
    workers = max(1, len(client.scheduler_info()["workers"]))
    packed: dict[int, bytes] = {}  # a chunk's rows -> its graph, packed once
    parts: list = []
    spans: dict[str, tuple[int, int]] = {}  # a task's key -> its rows
    spawned: list = []  # every future made here (cancelled if the evaluation fails)
    pending = as_completed()
    keep = None if outs is not None else [[] for _ in st.deps]
    k_max = 1  # chunks a task may take: their rows read and written fit `room`

    def chunk(lo: int):
        hi = min(lo + rows, n)
        g = st.chunk_graph(rows, lo, src_rows, realized)
        if hi - lo not in packed:
            packed[hi - lo] = pack(g)[0]
        return lo, hi, leaves(g)

    def submit(lo: int) -> int:
        """The task from row lo on; its end row."""
        nonlocal k_max
        rest = _remote_rows(src_rows(lo, n))[1] if passed else 0  # (the first row read)
        for k in [k for k, f in sent.items() if k in passed and passed[k] <= rest]:
            del sent[k]  # a block behind this task: its tasks hold it while they need it
        first = chunk(lo)
        if not spans:
            held = sum(dask_cluster.read_bytes(b.value) for b in first[2]
                       if id(b) not in shared) + \
                sum(r.nbytes // max(n, 1) * rows for r, _ in st.deps)
            k_max = max(1, room // max(held, 1))
        k = max(1, min(k_max, -(-(n - lo) // (rows * GUIDE * workers))))
        chunks = [first] + [chunk(a) for a in range(lo + rows, min(lo + k * rows, n), rows)]
        sizes = list(dict.fromkeys(hi - a for a, hi, _ in chunks))
        args, made = _Args(), []
        specs = _task_leaves(client, chunks, shared, sent, args, made)
        tasks = [(a, hi, sizes.index(hi - a), s) for (a, hi, _), s in zip(chunks, specs)]
        hi = chunks[-1][1]
        fut = client.submit(TASK[0], [packed[s] for s in sizes], cl.worker_budget,
                            cl.worker_backend, what, axes, combine, tasks, *args,
                            key=f"tracer-{names}-{token}-{lo}", pure=False)
        spawned.append(fut)
        if made:  # on every worker (else Dask runs every task that reads them where they
            client.replicate(made)  # were made), once made: all at once, this task sent
        if keep:  # the rows stay on the cluster: blocks of Remote results
            parts.append(client.submit(_parts, fut, key=f"tracer-parts-{token}-{lo}"))
            for j, blocks in enumerate(keep):
                blocks.append((lo, hi, client.submit(_pick, fut, j, axes[j],
                                                     key=f"tracer-out{j}-{token}-{lo}")))
            spawned.extend([parts[-1]] + [b[-1][2] for b in keep])
            return hi
        # the partials' tree starts at the task itself where it holds no rows; where it
        # does, at a task that keeps the partials only (the rows come here and go); with
        # rows and no partials, nothing keeps the task once its rows are here
        if not n_deps:
            parts.append(fut)
        elif st.cuts:
            parts.append(client.submit(_parts, fut, key=f"tracer-parts-{token}-{lo}"))
            spawned.append(parts[-1])
        spans[fut.key] = (lo, hi)
        pending.add(fut)
        return hi

    try:
        at = 0
        window = IN_FLIGHT_PER_WORKER * workers
        while at < n and (keep or window):  # (kept rows: every task is sent now)
            at, window = submit(at), window - 1
        stats = [0] * len(_COUNTERS)  # the workers' counters, added up
        for fut in pending:
            if n_deps:  # a task's rows, written where they go as it comes back
                lo, hi = spans[fut.key]
                got = fut.result()
                for out, ax, v in zip(outs, axes, got["outs"]):
                    row_block(out, ax, lo, hi)[...] = v
                if not st.cuts:  # (else they come with the partials)
                    stats = [x + y for x, y in zip(stats, got["stats"])]
                del got
                fut.release()  # (a partials' task holds what it needs)
            if at < n:
                at = submit(at)
        if st.cuts or not n_deps or keep:  # (kept rows: their counters, and a chunk's
            while len(parts) > 1:  # error, come back here) a balanced tree, in chunk order
                parts = [client.submit(_combine, combine, parts[i], parts[i + 1],
                                       key=f"tracer-combine-{token}-{len(parts)}-{i}")
                         if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
                spawned.extend(parts)
            total = parts[0].result()
            for j, v in enumerate(total["parts"]):
                partial[j] = v
            stats = total["stats"]
    except BaseException:  # (a chunk's MemoryBudgetError, an interrupt): nothing runs on
        client.cancel(spawned + list(sent.values()))
        raise
    for f, v in zip(_COUNTERS, stats):
        if f not in ("planned_peak_bytes", "measured_peak_bytes"):
            setattr(STATS, f, getattr(STATS, f) + v)
    if keep is None:
        return None
    return [Remote(r.shape, r.dtype, blocks, client, ax)
            for (r, ax), blocks in zip(st.deps, keep)]

