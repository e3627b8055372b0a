"""`with tracer.cluster(client):` evaluations too big for this process run on a Dask cluster.

Inside the block, evaluations run within a budget of the client's (`budget`, by default half
the memory free when the block is entered). One that does not fit is split as
`memory_budget` splits it (tracer/budgeted.py: the same splitter, the same stages), with chunks
sized to the workers' memory; each chunk's graph goes to a worker as a Dask task, which plans,
compiles (through the worker's kernel caches, once per worker and graph structure) and runs it
under the worker's own budget. A chunk's rows of the row-wise results come back to the client;
its partials of the reductions over the split rows are combined on the cluster as a tree of
tasks, in chunk order. Dask schedules, moves data and reruns the tasks of a worker that dies.

Graphs travel as graphs (ir/wire.py: nodes in topological order, leaf values as Dask data),
not as pickled functions: the worker builds the same kernels from the same graph.
"""
from __future__ import annotations

import inspect
import itertools
import math
import threading
import uuid
import weakref

import numpy as np

from tracer.cuda_kernels.backends import to_host
from tracer.cuda_kernels.layout import over_one_element
from tracer.ir.node import Buffer, Node, toposort
from tracer.ir.registry import OPS
from tracer.ir.stats import STATS, Stats
from tracer.ir.wire import pack, unpack
from tracer.opt import splitter
from . import budget as _budget, mapped
from .budget import Budget, MemoryBudgetError, fmt_bytes, memory_budget

_ACTIVE: list["cluster"] = []
_ON_WORKER = threading.local()  # set while a chunk runs in a worker (an in-process cluster)
# the part of a worker's memory limit its chunks may plan for: Dask pauses a worker at 80% of
# its limit, counting what the process already holds, and a chunk has held up to about twice
# its plan (its rows made and cut, results on their way out): 4 GiB reduced on two 1 GiB
# workers peaked at 830 MiB with 0.6, 550 MiB with 0.45 (bench/bench_dask.py --reduce-gib 4)
WORKER_FRACTION = 0.45
COMPILE_BYTES = 128 << 20  # what compiling a chunk's kernels may take beside it
IN_FLIGHT_PER_WORKER = 2  # chunks sent ahead of the ones done (their rows wait on the worker)


class cluster:
    """`with tracer.cluster(client):` evaluations that do not fit `budget` (bytes or a size
    string, default "50%" of the memory free now) run their chunks on the cluster of
    `client`, a `dask.distributed.Client`. Random draws, `np.load` and integer `np.arange`
    of at least `remote_bytes` (default: a quarter of the budget) are made on the workers in
    row blocks of about `block_bytes` (see `Remote`): a seeded draw gives the same values for
    the same block size."""

    def __init__(self, client, budget=None, remote_bytes=None, block_bytes=64 << 20):
        self.client = client
        self._local = memory_budget("50%" if budget is None else budget)
        self.worker_budget = _worker_budget(client)
        self.remote_bytes = self._local.limit // 4 if remote_bytes is None else remote_bytes
        self.block_bytes = block_bytes

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
    return Budget(limit, limit)  # chunks as big as fit: every chunk is a few Dask tasks


def _room(fraction: float, dask_worker=None) -> int:
    import numba
    import psutil

    numba.njit(lambda x: x + 1)(1)  # LLVM's own memory, held from the first compile on
    limit = dask_worker.memory_manager.memory_limit or psutil.virtual_memory().total
    held = psutil.Process().memory_info().rss + COMPILE_BYTES
    return max(int(limit * fraction) - held, int(limit * 0.05))


# ---------------------------------------------------------------- values on the cluster

_REMOTE: "weakref.WeakValueDictionary[int, Remote]" = weakref.WeakValueDictionary()


class Recipe:
    """How a block of rows is made (`fn(*args)`): made by the task that reads it, each time,
    so nothing is held between evaluations (a draw from a seeded generator)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __call__(self):
        return self.fn(*self.args)


class Remote(Buffer):
    """A value of the cluster's in blocks of rows (axis 0), a leaf's buffer: each block a
    Dask future (held by the workers) or a Recipe (made where it is read). Its `value` is a
    stand-in of its shape and C layout over one element of memory (planning reads no values;
    a view of it tells which rows it covers); `fetch` gathers it, if the client's budget says
    it fits."""

    __slots__ = ("blocks", "client")

    def __init__(self, shape, dtype, blocks: list, client):
        self.value = over_one_element(tuple(shape), dtype)
        self.owner = None
        self.blocks = blocks  # [(first row, end row, future or Recipe)], in order
        self.client = client
        _REMOTE[id(self.value)] = self

    @property
    def host(self) -> None:
        """None: the value is not here (as a device buffer's); `fetch` brings it."""
        return None

    @host.setter
    def host(self, value) -> None:
        pass  # never kept here

    def fetch(self) -> np.ndarray:
        need = self.value.nbytes
        b = _budget.active()
        room = b.limit if b is not None else _budget.free_bytes("cpu") // 2
        if need > room:
            raise MemoryBudgetError(
                f"tracer.cluster: bringing this {self.value.dtype}{list(self.value.shape)} "
                f"array ({fmt_bytes(need)}) from the cluster to this process needs more than "
                f"{'the budget of' if b is not None else 'half the memory free,'} "
                f"{fmt_bytes(room)}: reduce it on the cluster first, or index a part of it")
        parts = self.client.gather([self.client.submit(f, pure=False) if type(f) is Recipe
                                    else f for _, _, f in self.blocks])
        return np.concatenate(parts) if parts else np.empty(self.value.shape, self.value.dtype)

    def __reduce__(self):
        raise TypeError("a value held on a Dask cluster is not pickled: evaluate or gather it")


def remote_leaves(roots: list[Node]) -> list[Node]:
    if not _REMOTE:
        return []
    return [n for n in toposort(roots) if n.op == "input" and type(n.attr("buf")) is Remote]


def _remote_rows(value) -> tuple[Remote, int, int, int] | None:
    """(the Remote, first row, end row, byte offset in the first row's block of rows) of a
    view of a Remote's stand-in; None for any other array."""
    r = _REMOTE.get(id(value))  # the stand-in itself, or a view of it
    if r is None or r.value is not value:
        r = _REMOTE.get(id(value.base))
        if r is None or r.value is not value.base:
            return None
    base = r.value
    off = value.ctypes.data - base.ctypes.data
    lo_b = off + sum((n - 1) * st for n, st in zip(value.shape, value.strides) if st < 0)
    hi_b = off + sum((n - 1) * st for n, st in zip(value.shape, value.strides) if st > 0)
    row = base.strides[0] if base.ndim and base.strides[0] else max(base.nbytes, 1)
    if value.size == 0:
        return r, 0, 0, 0
    lo, hi = lo_b // row, hi_b // row + 1
    return r, lo, hi, off - lo * row


def _from_rows(spec, *blocks) -> np.ndarray:
    """On a worker: a view's values from the blocks of rows that cover it (each made or
    fetched, cut to the rows asked, and let go before the next)."""
    shape, strides, dtype, lo, hi, bounds, off = spec
    if not blocks or math.prod(shape) == 0:
        return np.empty(shape, dtype)
    pieces = []
    for (a, z), b in zip(bounds, blocks):
        b = b() if type(b) is Recipe else b
        cut = b[max(lo - a, 0):min(hi, z) - a]
        pieces.append(cut if len(blocks) == 1 else cut.copy())
        del b
    rows = np.ascontiguousarray(pieces[0] if len(pieces) == 1 else np.concatenate(pieces))
    return np.ndarray(shape, dtype, buffer=rows, offset=off, strides=strides)


def _leaf_args(client, b: Buffer, shared: set, sent: dict):
    """A chunk leaf's value as a task argument: a view of a Remote as the blocks that cover
    it (Dask moves them; tasks go where they are), a value every chunk reads as one future,
    a chunk's own rows in its task."""
    at = _remote_rows(b.value)
    if at is not None:
        r, lo, hi, off = at
        blocks = [(a, z, f) for a, z, f in r.blocks if a < hi and z > lo]
        made = []
        for k, (a, z, f) in enumerate(blocks):
            # a block every chunk reads, or one this chunk reads only part of (the next
            # chunks read the rest), is made once, as a task; one this chunk reads whole is
            # made in its task
            if type(f) is Recipe and (id(b) in shared or a < lo or z > hi):
                if id(f) not in sent:
                    sent[id(f)] = client.submit(f, pure=False)
                    made.append(sent[id(f)])
                blocks[k] = (a, z, sent[id(f)])
        if made:  # on every worker: else Dask runs every chunk that reads them where they
            client.replicate(made)  # were made
        v = b.value
        spec = (v.shape, v.strides, v.dtype, lo, hi, [(a, z) for a, z, _ in blocks], off)
        return ("rows", spec, [f for _, _, f in blocks])
    if id(b) not in shared:
        if mapped.frozen(b.value):  # a mapped file's rows: read into the task, pages dropped
            rows = np.array(b.value)
            mapped.release([b.value])
            return ("value", rows)
        return ("value", b.value)
    if id(b) not in sent:  # a task's result, not scattered data: made again if it is lost
        sent[id(b)] = client.submit(_same, b.value, pure=False)
    return ("value", sent[id(b)])


def _same(value):
    return value


def split_of(roots: list[Node]) -> tuple[splitter.Split | None, list[Node]]:
    """(split, []) for a graph that reads values held on the cluster: along the rows of one
    of them (the engine runs it with budgeted.run_split, each chunk a task beside its rows);
    or (None, reductions to compute first) where their results meet those rows again."""
    if active() is None:
        raise RuntimeError("tracer: this value is held on a Dask cluster: evaluate it inside "
                           "`with tracer.cluster(client):`")
    sources = {id(n) for n in remote_leaves(roots)}
    split = splitter.find(roots, sources)
    if split is not None:
        return split, []
    first = splitter.first_cuts(roots, sources)
    if not first:
        raise MemoryBudgetError(
            "tracer.cluster: no value held on the cluster has rows that every output follows "
            "(row by row), so this evaluation cannot run as chunks beside them")
    return None, first


def _blocks(on: "cluster", rows: int, row_bytes: int, recipe) -> list:
    """Row blocks of about the cluster's block_bytes, each made by recipe(lo, hi)."""
    per = max(1, on.block_bytes // max(row_bytes, 1))
    return [(lo, min(lo + per, rows), recipe(lo, min(lo + per, rows)))
            for lo in range(0, rows, per)]


def load(file, mmap_mode, kwargs: dict):
    """np.load of a .npy file of at least the cluster's remote_bytes, C-ordered, as a value
    of the cluster's (a Remote whose blocks each worker reads from the file: the file must be
    where the workers can read it by this path, as on one machine or a shared file system),
    or None where NumPy's load does it here."""
    on = active()
    if on is None or kwargs or mmap_mode not in (None, "r") or \
            not isinstance(file, (str, bytes)) and not hasattr(file, "__fspath__"):
        return None
    try:
        m = np.load(file, mmap_mode="r")
    except (ValueError, OSError):  # not a plain .npy (an .npz, pickled objects): NumPy's
        return None
    if not isinstance(m, np.memmap) or not m.ndim or not m.flags.c_contiguous or \
            m.dtype.hasobject or m.nbytes < on.remote_bytes:
        return None
    path, shape, dtype = str(m.filename), m.shape, m.dtype
    row = m.nbytes // max(shape[0], 1)
    del m
    return Remote(shape, dtype, _blocks(on, shape[0], row,
                                        lambda lo, hi: Recipe(_read_rows, path, lo, hi)),
                  on.client)


def _read_rows(path: str, lo: int, hi: int) -> np.ndarray:
    return np.array(np.load(path, mmap_mode="r")[lo:hi])


def arange(args: tuple, dtype) -> "Remote | None":
    """np.arange of Python ints of at least the cluster's remote_bytes as a value of the
    cluster's, block i NumPy's arange over its part of the range (the same integers), or
    None where it is made here (floats: NumPy's fill rounds by the whole range)."""
    on = active()
    if on is None or not 1 <= len(args) <= 3 or \
            not all(type(a) is int and abs(a) < 2**62 for a in args):
        return None
    r = range(*args)
    dt = np.dtype(np.int64 if dtype is None else dtype)  # (NumPy's for such ints)
    if dt.kind not in "iuf" or dt.kind == "f" and any(abs(a) >= 2**52 for a in args):
        return None
    if len(r) * dt.itemsize < on.remote_bytes:
        return None
    return Remote((len(r),), dt, _blocks(on, len(r), dt.itemsize, lambda lo, hi: Recipe(
        np.arange, r[lo], r[lo] + (hi - lo) * r.step, r.step, dt)), on.client)


# the draws a cluster makes on its workers: every parameter but `size` a scalar
_DRAWS = ("standard_normal", "random", "uniform", "normal", "integers", "exponential",
          "standard_exponential")


def draw(gen, name: str, args: tuple, kwargs: dict):
    """A Generator's draw of at least the cluster's remote_bytes, made on the workers in
    blocks of rows (a Remote), or None where it is made here. Block i is drawn by a generator
    of the same bit generator seeded by the i-th child of `gen`'s SeedSequence (spawned, so
    the next draw gets new children): reproducible for a seed and a block size, not NumPy's
    one stream's values."""
    on = active()
    if on is None or name not in _DRAWS:
        return None
    try:
        bound = inspect.signature(getattr(gen, name)).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    size = bound.arguments.get("size")
    if size is None or bound.arguments.get("out") is not None or any(
            np.ndim(v) for k, v in bound.arguments.items() if k not in ("size", "dtype")):
        return None
    shape = (int(size),) if np.ndim(size) == 0 else tuple(int(d) for d in size)
    probe = getattr(gen, name)(**{**bound.arguments, "size": (0,) + shape[1:]})
    row = math.prod(shape[1:]) * probe.dtype.itemsize
    if not shape or math.prod(shape) * probe.dtype.itemsize < on.remote_bytes:
        return None
    seeds = iter(gen.bit_generator.seed_seq.spawn(-(-shape[0] // max(1, on.block_bytes //
                                                                    max(row, 1)))))
    bitgen = type(gen.bit_generator)
    return Remote(shape, probe.dtype, _blocks(on, shape[0], row, lambda lo, hi: Recipe(
        _draw_block, bitgen, next(seeds), name,
        {**bound.arguments, "size": (hi - lo,) + shape[1:]})), on.client)


def _draw_block(bitgen, seed, name: str, kwargs: dict) -> np.ndarray:
    return getattr(np.random.Generator(bitgen(seed)), name)(**kwargs)


# ---------------------------------------------------------------- on a worker

_COUNTERS = [f for f in Stats.__dataclass_fields__]


# the engine's chunk task (tracer.engine.chunk_task: a worker unpickles it by that name, which
# loads the engine there), set when the engine loads
TASK: list = [None]


def run_task(execute, data: bytes, budget: Budget, where: str, n_deps: int, specs: list,
             *args) -> dict:
    """Run one chunk's graph on a worker (`execute`: the engine's) under its budget: its
    outputs as NumPy arrays (those after the first `n_deps` also as the partials to combine),
    and what it added to the worker's counters. `specs`, one per
    leaf, say how its value comes from `args`: as it is, or a view of the blocks of rows that
    follow (_leaf_args)."""
    import numba
    from distributed import get_worker  # (Dask is imported where a cluster is used)
    # the kernels' threads are the worker's (threads_per_worker), as Dask sets BLAS's to 1:
    # a worker does not take the cores of the others on its host (per thread in Numba)
    numba.set_num_threads(max(1, min(get_worker().state.nthreads, numba.config.NUMBA_NUM_THREADS)))
    before = [getattr(STATS, f) for f in _COUNTERS]
    _ON_WORKER.on = True
    try:
        values, at = [], 0
        for kind, spec, n in specs:
            values.append(args[at] if kind == "value" else _from_rows(spec, *args[at:at + n]))
            at += n
        roots = unpack(data, values)
        with memory_budget(budget.limit, budget.split_size):
            bufs = execute(roots)
        out = [np.array(to_host(b), copy=False) for b in bufs]
    except MemoryBudgetError as e:
        raise MemoryBudgetError(f"tracer.cluster: {where}: {e}") from None
    finally:
        _ON_WORKER.on = False
    return {"outs": out, "parts": out[n_deps:],
            "stats": [getattr(STATS, f) - v for f, v in zip(_COUNTERS, before)]}


def _parts(result: dict, n: int) -> dict:
    return {"parts": result["outs"][n:], "stats": result["stats"]}


def _combine(ufuncs, dtypes, a: dict, b: dict) -> dict:
    parts = [uf(x, y).astype(dt) for uf, dt, x, y in zip(ufuncs, dtypes, a["parts"], b["parts"])]
    return {"parts": parts, "stats": [x + y for x, y in zip(a["stats"], b["stats"])]}


# ---------------------------------------------------------------- on the client

_IDS = itertools.count()


def run_chunks(st, rows: int, src_rows, realized, outs, partial, shared: set,
               names: str) -> list | None:
    """budgeted.run_split's chunk stage on the cluster: chunk tasks in flight a few per
    worker; each chunk's rows of the row-wise outputs written into `outs` as it comes back
    (or, `outs` None, kept on the cluster: their Remotes are returned); the reductions'
    partials combined on the cluster in chunk order into `partial`. `shared`: ids of the
    buffers every chunk reads whole (sent once), `names`: the chunk's kernels."""
    from distributed import as_completed  # (Dask is imported where a cluster is used)
    cl = active()
    client = cl.client
    split = st.split
    n_deps = len(st.deps)
    sent: dict[int, object] = {}  # id(a shared buffer or a block's Recipe) -> its future
    # id(a Recipe of a split source's block) -> the block's end row
    source = split.source.attr("buf") if split.source.op == "input" else None
    passed = {id(f): z for _, z, f in source.blocks} if type(source) is Remote else {}
    token = f"{next(_IDS)}-{uuid.uuid4().hex[:8]}"
    starts = iter(range(0, split.rows, rows))
    parts: list = []
    start_of: dict[str, int] = {}  # a rows future's key -> the chunk's first row
    pending = as_completed()
    window = IN_FLIGHT_PER_WORKER * max(1, len(client.scheduler_info()["workers"]))
    keep = None if outs is not None else [[] for _ in st.deps]
    if keep:  # nothing comes back: every chunk is sent now, Dask places them
        window = split.rows

    def submit(lo: int) -> None:
        for k in [k for k, f in sent.items() if k in passed and passed[k] <= lo]:
            del sent[k]  # a block behind this chunk: its tasks hold it while they need it
        g = st.chunk_graph(rows, lo, src_rows, realized)
        data, bufs = pack(g)
        specs, args = [], []
        for b in bufs:  # (a chunk's rows go in its task: sent again if a worker dies)
            kind, spec, *futs = _leaf_args(client, b, shared, sent)
            if kind == "value":
                specs.append(("value", None, 1))
                args.append(spec)
            else:
                specs.append(("rows", spec, len(futs[0])))
                args.extend(futs[0])
        hi = min(lo + rows, split.rows)
        where = f"the chunk of rows {lo}:{hi} of {split.source.dtype}{list(split.source.shape)}"
        fut = client.submit(TASK[0], data, cl.worker_budget, where, n_deps, specs, *args,
                            key=f"tracer-{names}-{token}-{lo}", pure=False)
        if keep:  # the rows stay on the cluster: blocks of Remote results
            parts.append(client.submit(_parts, fut, n_deps, key=f"tracer-parts-{token}-{lo}"))
            for j, blocks in enumerate(keep):
                blocks.append((lo, hi, client.submit(_pick, fut, j,
                                                     key=f"tracer-out{j}-{token}-{lo}")))
            return
        # the partials' tree starts at the chunk's task itself where it holds no rows; where
        # it does, at a task that keeps the partials only (the rows come here and go); with
        # rows and no partials, nothing keeps the chunk's task once its rows are here
        if not n_deps:
            parts.append(fut)
        elif st.cuts:
            parts.append(client.submit(_parts, fut, n_deps, key=f"tracer-parts-{token}-{lo}"))
        start_of[fut.key] = lo
        pending.add(fut)

    for lo in itertools.islice(starts, window):
        submit(lo)
    stats = [0] * len(_COUNTERS)  # the workers' counters, added up
    for fut in pending:
        if n_deps:  # a chunk's rows, written where they go as it comes back
            lo = start_of[fut.key]
            hi = min(lo + rows, split.rows)
            got = fut.result()
            for out, (_, ax), v in zip(outs, st.deps, got["outs"]):
                splitter.row_block(out, ax, lo, hi)[...] = v
            if not st.cuts:  # (else they come with the partials)
                stats = [x + y for x, y in zip(stats, got["stats"])]
            del got
            fut.release()  # (a partials' task holds what it needs)
        nxt = next(starts, None)
        if nxt is not None:
            submit(nxt)
    if st.cuts or not n_deps:
        ufuncs = [OPS[c.op].ufunc for c in st.cuts]
        dtypes = [c.dtype for c in st.cuts]
        while len(parts) > 1:  # a balanced tree, in chunk order
            parts = [client.submit(_combine, ufuncs, dtypes, parts[i], parts[i + 1],
                                   key=f"tracer-combine-{token}-{len(parts)}-{i}")
                     if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
        total = parts[0].result()
        for j, v in enumerate(total["parts"]):
            partial[j] = v
        stats = total["stats"]
    for f, v in zip(_COUNTERS, stats):
        if f not in ("planned_peak_bytes", "measured_peak_bytes"):
            setattr(STATS, f, getattr(STATS, f) + v)
    if keep is None:
        return None
    return [Remote(r.shape, r.dtype, blocks, client) for (r, _), blocks in zip(st.deps, keep)]


def _pick(result: dict, j: int) -> np.ndarray:
    return result["outs"][j]
