"""`with tracer.cluster(client):` evaluations too big for this process run on a Dask cluster.

Inside the block, evaluations run within a budget of the client's (`budget`, by default half
the memory free when the block is entered). One that does not fit is split as
`memory_budget` splits it (tracer/budgeted.py: the same splitter, the same stages), with chunks
sized to the workers' memory; each chunk's graph goes to a worker as a Dask task, which plans,
compiles (through the worker's kernel caches, once per worker and graph structure) and runs it
under the worker's own budget. A chunk's rows of the row-wise results come back to the client;
its partials of the reductions over the split rows are combined on the cluster as a tree of
tasks, in chunk order. Dask schedules, moves data and reruns the tasks of a worker that dies.

Graphs travel as graphs (`pack`/`unpack`: nodes in topological order, leaf values as Dask
data), not as pickled functions: the worker builds the same kernels from the same graph.
"""
from __future__ import annotations

import io
import itertools
import pickle
import threading
import uuid

import numpy as np

from tracer.ir.node import Buffer, Node, make, toposort
from tracer.ir.stats import STATS, Stats
from .budget import Budget, MemoryBudgetError, memory_budget

_ACTIVE: list["cluster"] = []
_ON_WORKER = threading.local()  # set while a chunk runs in a worker (an in-process cluster)
# the part of a worker's memory limit its chunks may plan for: Dask starts spilling at 60% and
# pauses the worker at 80% of its limit, counting what the process already holds
WORKER_FRACTION = 0.6
COMPILE_BYTES = 128 << 20  # what compiling a chunk's kernels may take beside it
IN_FLIGHT_PER_WORKER = 2  # chunks sent ahead of the ones done (their rows wait on the worker)


class cluster:
    """`with tracer.cluster(client):` evaluations that do not fit `budget` (bytes or a size
    string, default "50%" of the memory free now) run their chunks on the cluster of
    `client`, a `dask.distributed.Client`."""

    def __init__(self, client, budget=None):
        self.client = client
        self._local = memory_budget("50%" if budget is None else budget)
        self.worker_budget = _worker_budget(client)

    def __enter__(self):
        self._local.__enter__()
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        _ACTIVE.pop()
        return self._local.__exit__(*exc)


def active() -> "cluster | None":
    """The innermost cluster block in force (none inside a chunk running on a worker)."""
    if not _ACTIVE or getattr(_ON_WORKER, "on", False):
        return None
    return _ACTIVE[-1]


def _worker_budget(client) -> Budget:
    """What one chunk may allocate on the smallest worker: WORKER_FRACTION of its memory
    limit (of its host's memory where it has none), less what the process holds once tracer
    is loaded there (loaded now, so the first chunk does not find less room than planned)."""
    room = client.run(_room, WORKER_FRACTION)
    if not room:
        raise ValueError("tracer.cluster: the client's cluster has no workers")
    limit = max(1, min(room.values()))
    return Budget(limit, max(1, limit // 4))


def _room(fraction: float, dask_worker=None) -> int:
    import numba
    import psutil

    import tracer.numpy  # noqa: F401  (the runtime and the compiler every chunk needs)
    from tracer import engine  # noqa: F401
    numba.njit(lambda x: x + 1)(1)  # LLVM's own memory, held from the first compile on
    limit = dask_worker.memory_manager.memory_limit or psutil.virtual_memory().total
    held = psutil.Process().memory_info().rss + COMPILE_BYTES
    return max(int(limit * fraction) - held, int(limit * 0.05))


# ---------------------------------------------------------------- graphs as data

class _Pickler(pickle.Pickler):
    """Leaf buffers leave as indices into a list of values (sent as Dask data); nodes inside
    attributes as indices into the packed order."""

    def __init__(self, f, index: dict[int, int]):
        super().__init__(f, protocol=5)
        self.index = index
        self.buffers: list[Buffer] = []
        self._seen: dict[int, int] = {}

    def persistent_id(self, obj):
        if type(obj) is Buffer:
            k = self._seen.get(id(obj))
            if k is None:
                k = self._seen[id(obj)] = len(self.buffers)
                self.buffers.append(obj)
            return ("b", k)
        if isinstance(obj, Node):
            return ("n", self.index[id(obj)])
        return None


def pack(roots: list[Node]) -> tuple[bytes, list[Buffer]]:
    """A graph as bytes (its nodes in topological order, no recursion however deep) and its
    leaf buffers, whose values travel apart."""
    order = toposort(roots)
    index = {id(n): i for i, n in enumerate(order)}
    rows = [(n.op, tuple(index[id(i)] for i in n.inputs), n.shape, n.dtype, n.attrs)
            for n in order]
    f = io.BytesIO()
    p = _Pickler(f, index)
    p.dump((rows, [index[id(r)] for r in roots]))
    return f.getvalue(), p.buffers


def unpack(data: bytes, values) -> list[Node]:
    """pack's graph rebuilt (interned here), its leaves holding `values`."""
    nodes: list[Node] = []
    bufs: dict[int, Buffer] = {}

    class _Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            kind, k = pid
            if kind == "n":
                return nodes[k]
            if k not in bufs:
                bufs[k] = Buffer(values[k])
            return bufs[k]

    # rows are unpickled whole before nodes exist: attributes naming nodes come after them
    rows, roots = _Unpickler(io.BytesIO(data)).load()
    for op, ins, shape, dtype, attrs in rows:
        nodes.append(make(op, tuple(nodes[i] for i in ins), shape, dtype, attrs))
    return [nodes[i] for i in roots]


# ---------------------------------------------------------------- on a worker

_COUNTERS = [f for f in Stats.__dataclass_fields__]


def _chunk_task(data: bytes, budget: Budget, where: str, *values) -> dict:
    """Run one chunk's graph on a worker under its budget: its outputs as NumPy arrays, and
    what it added to the worker's counters."""
    from tracer import engine
    from tracer.cuda_kernels.backends import to_host
    from tracer.ir.config import CONFIG
    CONFIG.compile_mode = "sync"  # a Dask worker is a daemon: no compile processes of its own
    before = [getattr(STATS, f) for f in _COUNTERS]
    _ON_WORKER.on = True
    try:
        roots = unpack(data, values)
        with memory_budget(budget.limit, budget.split_size):
            bufs = engine.execute(roots)
        out = [np.array(to_host(b), copy=False) for b in bufs]
    except MemoryBudgetError as e:
        raise MemoryBudgetError(f"tracer.cluster: {where}: {e}") from None
    finally:
        _ON_WORKER.on = False
    return {"outs": out, "stats": [getattr(STATS, f) - v for f, v in zip(_COUNTERS, before)]}


def _deps(result: dict, n: int) -> list:
    return result["outs"][:n]


def _parts(result: dict, n: int) -> dict:
    return {"parts": result["outs"][n:], "stats": result["stats"]}


def _combine(ufuncs, dtypes, a: dict, b: dict) -> dict:
    parts = [uf(x, y).astype(dt) for uf, dt, x, y in zip(ufuncs, dtypes, a["parts"], b["parts"])]
    return {"parts": parts, "stats": [x + y for x, y in zip(a["stats"], b["stats"])]}


# ---------------------------------------------------------------- on the client

_IDS = itertools.count()


def run_chunks(st, rows: int, src_rows, realized, outs, partial, shared: set,
               names: str) -> None:
    """budgeted.run_split's chunk stage on the cluster: chunk tasks in flight a few per
    worker; each chunk's rows of the row-wise outputs written into `outs` as it comes back;
    the reductions' partials combined on the cluster in chunk order into `partial`. `shared`:
    ids of the buffers every chunk reads whole (sent once), `names`: the chunk's kernels."""
    from distributed import as_completed

    from tracer.ir.registry import OPS
    from tracer.opt.splitter import row_block
    cl = active()
    client = cl.client
    split = st.split
    n_deps = len(st.deps)
    sent: dict[int, object] = {}  # id(a shared buffer) -> its Dask future
    token = f"{next(_IDS)}-{uuid.uuid4().hex[:8]}"
    starts = iter(range(0, split.rows, rows))
    parts: list = []
    start_of: dict[str, int] = {}  # a rows future's key -> the chunk's first row
    pending = as_completed()
    window = IN_FLIGHT_PER_WORKER * max(1, len(client.scheduler_info()["workers"]))

    def submit(lo: int) -> None:
        data, bufs = pack(st.chunk_graph(rows, lo, src_rows, realized))
        args = []
        for b in bufs:  # a value every chunk reads whole goes to every worker once; a
            # chunk's rows go in its task, which the scheduler can send again if a worker dies
            if id(b) not in shared:
                args.append(b.value)
                continue
            if id(b) not in sent:
                sent[id(b)] = client.scatter(b.value, hash=False, broadcast=True)
            args.append(sent[id(b)])
        hi = min(lo + rows, split.rows)
        where = f"the chunk of rows {lo}:{hi} of {split.source.dtype}{list(split.source.shape)}"
        fut = client.submit(_chunk_task, data, cl.worker_budget, where, *args,
                            key=f"tracer-{names}-{token}-{lo}", pure=False)
        parts.append(client.submit(_parts, fut, n_deps, key=f"tracer-parts-{token}-{lo}"))
        done = client.submit(_deps, fut, n_deps, key=f"tracer-rows-{token}-{lo}") \
            if n_deps else parts[-1]
        start_of[done.key] = lo
        pending.add(done)

    for lo in itertools.islice(starts, window):
        submit(lo)
    for fut in pending:
        if n_deps:
            lo = start_of[fut.key]
            hi = min(lo + rows, split.rows)
            for out, (_, ax), v in zip(outs, st.deps, fut.result()):
                row_block(out, ax, lo, hi)[...] = v
            fut.release()
        nxt = next(starts, None)
        if nxt is not None:
            submit(nxt)
    ufuncs = [OPS[c.op].ufunc for c in st.cuts]
    dtypes = [c.dtype for c in st.cuts]
    while len(parts) > 1:  # a balanced tree, in chunk order
        parts = [client.submit(_combine, ufuncs, dtypes, parts[i], parts[i + 1],
                               key=f"tracer-combine-{token}-{len(parts)}-{i}")
                 if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    total = parts[0].result()
    for j, v in enumerate(total["parts"]):
        partial[j] = v
    for f, v in zip(_COUNTERS, total["stats"]):  # the workers' counters, added up
        if f not in ("planned_peak_bytes", "measured_peak_bytes"):
            setattr(STATS, f, getattr(STATS, f) + v)
