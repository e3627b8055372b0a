"""`with tracer.cluster(client):` evaluations too big for this process run on a Dask cluster.

Inside the block, evaluations run within a budget of the client's (`budget`, by default half
the memory free when the block is entered). One that does not fit is split as
`memory_budget` splits it (tracer/budgeted.py: the same splitter, the same stages), with chunks
sized to the workers' memory (tracer/dask_workers.py: and a cuda worker's device's); the
chunks' graph goes to the workers in Dask tasks of several chunks each (tracer/dask_tasks.py),
and a worker plans, compiles (through its kernel caches, once per worker and graph structure)
and runs each chunk under its own budget. The tasks' rows
of the row-wise results come back to the client; their partials of the reductions over the
split rows are combined on the cluster as a tree of tasks, in chunk order. Dask schedules,
moves data and reruns the tasks of a worker that dies.

Graphs travel as graphs (ir/wire.py: nodes in topological order, leaf values as Dask data),
not as pickled functions: the worker builds the same kernels from the same graph.
"""
from __future__ import annotations

import inspect
import math
import threading
import weakref

import numpy as np

from tracer.cuda_kernels.layout import over_one_element
from tracer.ir.catalogue import unit_reshape
from tracer.ir.node import Buffer, Node, make, toposort
from tracer.opt import splitter
from tracer.opt.rewrite import rebuild, with_inputs
from . import budget as _budget, dask_workers
from .budget import MemoryBudgetError, fmt_bytes, memory_budget
from .view import apply_step_numpy, apply_view_numpy

_ACTIVE: list["cluster"] = []
_ON_WORKER = threading.local()  # set while a chunk runs in a worker (an in-process cluster)


class cluster:
    """`with tracer.cluster(client):` evaluations that do not fit `budget` (bytes or a size
    string, default "50%" of the memory free now) run their chunks on the cluster of
    `client`, a `dask.distributed.Client`, with `backend` ("cpu" or "cuda"; default: each
    worker's own, TRACER_BACKEND where set, else cuda where the worker sees a GPU, as with
    dask_cuda.LocalCUDACluster). Random draws, `np.load`, `np.arange` and `np.linspace` of at
    least `remote_bytes` (default: a quarter of the budget) are made on the workers in row
    blocks of about `block_bytes` (see `Remote`): a seeded draw gives the same values for the
    same block size (arange and linspace: NumPy's values)."""

    def __init__(self, client, budget=None, remote_bytes=None, block_bytes=64 << 20,
                 backend: str | None = None):
        self.client = client
        self._local = memory_budget("50%" if budget is None else budget)
        self.worker_backend, self.worker_budget = dask_workers.budget(client, backend)
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


# ---------------------------------------------------------------- values on the cluster

_REMOTE: "weakref.WeakValueDictionary[int, Remote]" = weakref.WeakValueDictionary()
SLAB = 1 << 20  # elements of a view whose places in the blocks are worked out at once


class Recipe:
    """How a block of rows is made (`fn(*args)`): made by the task that reads it, each time,
    so nothing is held between evaluations (a draw from a seeded generator)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __call__(self):
        return self.fn(*self.args)


class Remote(Buffer):
    """A value of the cluster's in blocks of rows, a leaf's buffer: each block a Dask future
    (held by the workers) or a Recipe (made where it is read). The blocks cut `axis` of the
    value; each holds its part with that axis moved first, C-ordered, so `stand` (a stand-in
    of that layout over one element of memory) has them as its rows, and `value` is `stand`
    with the axis moved back (planning reads no values; a view of `stand` tells which rows
    it covers). `fetch` gathers the value, or a view of it, if the client's budget says it
    fits."""

    __slots__ = ("blocks", "client", "stand", "axis")

    def __init__(self, shape, dtype, blocks: list, client, axis: int = 0):
        shape = tuple(shape)
        self.stand = over_one_element((shape[axis],) + shape[:axis] + shape[axis + 1:], dtype)
        self.value = np.moveaxis(self.stand, 0, axis) if axis else self.stand
        self.axis = axis
        self.owner = None
        self.blocks = blocks  # [(first row, end row, future or Recipe)], in order
        self.client = client
        _REMOTE[id(self.stand)] = self

    @property
    def host(self) -> None:
        """None: the value is not here (as a device buffer's); `fetch` brings it."""
        return None

    @host.setter
    def host(self, value) -> None:
        pass  # never kept here

    def fetch(self, steps: tuple = ()) -> np.ndarray:
        """The value, or its view by a lazy view's `steps` (tracer/view.py): each block sends
        only the view's elements it holds (x[:10] reads the first block, x[:, 0] a column of
        each). After a reshape that NumPy copies for (x.T.reshape(-1)), the steps go on over
        a C-ordered stand-in of the values before it; from a bitcast on, they are NumPy's,
        here, on the values the steps before it give."""
        v, under, layers, done = self.value, self.stand, [], 0
        for kind, arg in steps:
            if kind == "bitcast":
                break
            w = _stand_in_view(v, kind, arg)
            if w is None:  # a copy's values: C-ordered over a stand-in of their own
                layers.append((v, under))
                under = over_one_element(v.shape, v.dtype)
                w = under.reshape(arg)
            v, done = w, done + 1
        got = self.gather(v, layers, under)
        return apply_view_numpy(got, steps[done:]) if done < len(steps) else got

    def gather(self, v: np.ndarray, layers: list = (), under=None) -> np.ndarray:
        """The values of `v`, `value` or a view of it (or of the last of `layers`' stand-ins,
        `under`: see fetch), brought here (MemoryBudgetError first where they would pass the
        client's budget)."""
        over = _over(v)
        if over:
            raise MemoryBudgetError(over)
        if v is not self.value:
            return self._elements(v, layers, self.stand if under is None else under)
        parts = self.client.gather([self.client.submit(f, pure=False) if type(f) is Recipe
                                    else f for _, _, f in self.blocks])
        whole = np.concatenate(parts) if parts else np.empty(self.stand.shape, v.dtype)
        return whole if v is self.stand else np.moveaxis(whole, 0, self.axis)

    def _elements(self, v: np.ndarray, layers: list, under: np.ndarray) -> np.ndarray:
        """The values of v, a view of `under`: a task per block of rows it reads takes its
        elements there. `layers`: [(a view, the stand-in it views)] whose values, C-ordered,
        the next stand-in (the last: `under`) stands for. The elements' offsets are worked
        out for SLAB of them at a time (they take twice the values' bytes)."""
        out = np.empty(v.shape, v.dtype)
        if not v.size:
            return out
        w = v.reshape(1) if not v.ndim else v
        inner = v.size // w.shape[0]
        step = max(1, SLAB // max(inner, 1))
        for i in range(0, w.shape[0], step):
            self._slab(w[i:i + step], layers, under, out.reshape(-1)[i * inner:(i + step) * inner])
        return out

    def _slab(self, v: np.ndarray, layers: list, under: np.ndarray, out: np.ndarray) -> None:
        offs = _offsets(v, under)
        for view, base in reversed(layers):  # the offsets in the stand-in each layer views
            at = np.unravel_index(offs // v.itemsize, view.shape)
            offs = sum((i * st for i, st in zip(at, view.strides)),
                       np.full(offs.shape, view.ctypes.data - base.ctypes.data, np.int64))
        row = self.stand.strides[0]
        rows = offs // row
        order = None if (rows[1:] >= rows[:-1]).all() else np.argsort(rows, kind="stable")
        if order is not None:
            rows = rows[order]
        futures, at = [], []
        for a, z, f in self.blocks:
            s, e = np.searchsorted(rows, (a, z))
            if s == e:
                continue
            pos = slice(s, e) if order is None else order[s:e]
            idx = (offs[pos] - a * row) // v.itemsize
            if idx[-1] - idx[0] == e - s - 1 and (e - s < 2 or (np.diff(idx) == 1).all()):
                idx = slice(int(idx[0]), int(idx[-1]) + 1)  # (a run: no indices to send)
            futures.append(self.client.submit(_take, f, idx, pure=False))
            at.append(pos)
        for pos, part in zip(at, self.client.gather(futures)):
            out[pos] = part

    def __reduce__(self):
        raise TypeError("a value held on a Dask cluster is not pickled: evaluate or gather it")


def _offsets(v: np.ndarray, base: np.ndarray) -> np.ndarray:
    """The byte offset in `base` of each element of its view v, in v's C order."""
    offs = np.asarray(v.ctypes.data - base.ctypes.data, np.int64)
    for n, st in zip(v.shape, v.strides):
        offs = offs[..., None] + np.arange(n, dtype=np.int64) * st
    return offs.reshape(-1)


def _over(v: np.ndarray) -> str | None:
    """Why bringing v here would pass the client's budget, or None where it fits."""
    b = _budget.active()
    room = b.limit if b is not None else _budget.free_bytes("cpu") // 2
    if v.nbytes <= room:
        return None
    return (f"tracer.cluster: bringing this {v.dtype}{list(v.shape)} array "
            f"({fmt_bytes(v.nbytes)}) from the cluster to this process needs more than "
            f"{'the budget of' if b is not None else 'half the memory free,'} "
            f"{fmt_bytes(room)}: reduce it on the cluster first")


def _stand_in_view(a: np.ndarray, kind: str, arg) -> np.ndarray | None:
    """A lazy view's step (not a bitcast) applied to a stand-in, or None for a reshape that
    NumPy copies for (a copy would read the stand-in's one element of memory past its end)."""
    if kind != "reshape":
        return apply_step_numpy(a, kind, arg)
    try:
        return a.reshape(arg, copy=False)
    except ValueError:
        return None


def _take(block, idx) -> np.ndarray:
    """Elements of a block of rows (in C order), on the worker that holds it."""
    if type(block) is Recipe:
        block = block()
    return np.ravel(block)[idx]


def remote_leaves(roots: list[Node]) -> list[Node]:
    """The leaves that read values of the cluster's: a Remote, or a view of one's stand-in."""
    if not _REMOTE:
        return []
    return [n for n in toposort(roots) if n.op == "input" and _remote(n.attr("buf"))]


def _remote(buf: Buffer) -> bool:
    return type(buf) is Remote or isinstance(buf.value, np.ndarray) and \
        _remote_rows(buf.value) is not None


def views_as_leaves(roots: list[Node]) -> list[Node]:
    """The graph with each view (slice, transpose, reshape, broadcast_to) of a value of the
    cluster's, or of such a view, (`x[a:b]`, `x.T[::2]`) read as a leaf of its own, a view of
    the value's stand-in (its rows come from the blocks that cover them): such a leaf can be a
    split's source, where a slice's rows do not follow its input's row by row. A root that is
    such a view (`x[5, 3]` recorded) is a leaf of its values, brought here where they fit."""
    keep = {id(r) for r in roots}

    def leaf(n: Node, ins: tuple) -> Node:
        if n.op in _VIEWS and ins[0].op == "input" and _remote(ins[0].attr("buf")) and \
                (id(n) in keep or not _index_remap(n)):
            step, attr = _VIEWS[n.op]
            v = _stand_in_view(ins[0].attr("buf").value, step, n.attr(attr))
            if v is not None and id(n) not in keep:
                return make("input", (), n.shape, n.dtype, (("buf", Buffer(v)),))
            if v is not None and _over(v) is None:
                values = _remote_rows(v)[0].gather(v)
                return make("input", (), n.shape, n.dtype, (("buf", Buffer(values)),))
        return with_inputs(n, ins)

    return rebuild(roots, leaf)


def _index_remap(n: Node) -> bool:
    """A broadcast or a reshape that only inserts or drops unit axes: the splitter follows
    the rows through it, and the optimizer's rewrites must see it (the min-distance's
    x[:, None, :] - y[None] is its GEMM form only while both reshapes are in the graph)."""
    return n.op == "broadcast_to" or \
        (n.op == "reshape" and unit_reshape(n.inputs[0].shape, n.shape))


# the view ops of one input: their lazy view steps and attributes
_VIEWS = {"slice": ("slice", "slices"), "transpose": ("transpose", "perm"),
          "reshape": ("reshape", "shape"), "broadcast_to": ("broadcast", "shape")}


def _remote_rows(value) -> tuple[Remote, int, int, int] | None:
    """(the Remote, first row, end row, byte offset in the first row's block of rows) of a
    view of a Remote's stand-in; None for any other array."""
    r = _REMOTE.get(id(value))  # the stand-in itself, or a view of it
    if r is None or r.stand is not value:
        r = _REMOTE.get(id(value.base))
        if r is None or r.stand is not value.base:
            return None
    base = r.stand
    off = value.ctypes.data - base.ctypes.data
    lo_b = off + sum((n - 1) * st for n, st in zip(value.shape, value.strides) if st < 0)
    hi_b = off + sum((n - 1) * st for n, st in zip(value.shape, value.strides) if st > 0)
    row = base.strides[0] if base.ndim and base.strides[0] else max(base.nbytes, 1)
    if value.size == 0:
        return r, 0, 0, 0
    lo, hi = lo_b // row, hi_b // row + 1
    return r, lo, hi, off - lo * row


def split_of(roots: list[Node]) -> tuple[splitter.Split | None, list[Node]]:
    """(split, []) for a graph that reads values held on the cluster: along the rows of one
    of them (the engine runs it with budgeted.run_split, each chunk a task beside its rows);
    or (None, reductions to compute first) where their results meet those rows again."""
    if active() is None:
        raise RuntimeError("tracer: this value is held on a Dask cluster: evaluate it inside "
                           "`with tracer.cluster(client):`")
    sources = {id(n): _row_axes(n.attr("buf").value) for n in remote_leaves(roots)}
    split = splitter.find(roots, sources)
    if split is not None:
        return split, []
    first = splitter.first_cuts(roots, sources)
    if not first:
        raise MemoryBudgetError(
            "tracer.cluster: no value held on the cluster has rows that every output follows "
            "(row by row), so this evaluation cannot run as chunks beside them")
    return None, first


def _row_axes(view: np.ndarray) -> list[int]:
    """The axes of a view of a stand-in along which it walks the stand-in's rows (one index
    along the axis spans at most half of what the view spans: x's first axis, x.T's last),
    those of the least span first; else its first axis."""
    def span(skip: int | None) -> int:  # the bytes the view spans with index `skip` fixed
        return view.itemsize + sum((n - 1) * abs(st) for d, (n, st) in
                                   enumerate(zip(view.shape, view.strides)) if d != skip)
    whole = span(None)
    walk = [a for a in range(view.ndim) if view.shape[a] > 1 and 2 * span(a) <= whole]
    return sorted(walk, key=span) or list(range(min(view.ndim, 1)))


def read_bytes(value) -> int:
    """What a leaf's value reads: the rows of the blocks it covers for a view of a value of
    the cluster's (x[:, 0] reads x's rows whole), else its bytes."""
    at = _remote_rows(value) if _REMOTE and isinstance(value, np.ndarray) else None
    return value.nbytes if at is None else (at[2] - at[1]) * at[0].stand.strides[0]


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
    """np.arange of Python numbers of at least the cluster's remote_bytes as a value of the
    cluster's (block i: NumPy's values over its part of the range), or None where it is made
    here."""
    on = active()
    if on is None or not 1 <= len(args) <= 3:
        return None
    if all(type(a) is int and abs(a) < 2**62 for a in args):
        r = range(*args)
        dt = np.dtype(np.int64 if dtype is None else dtype)  # (NumPy's for such ints)
        if dt.kind not in "iuf" or dt.kind == "f" and any(abs(a) >= 2**52 for a in args):
            return None
        recipe = lambda lo, hi: Recipe(  # noqa: E731
            np.arange, r[lo], r[lo] + (hi - lo) * r.step, r.step, dt)
        n = len(r)
    elif all(type(a) in (int, float) and math.isfinite(a) for a in args):
        start, stop, step = {1: (0, *args, 1), 2: (*args, 1), 3: args}[len(args)]
        dt = np.dtype(np.float64 if dtype is None else dtype)
        if dt not in (np.float32, np.float64) or not step:
            return None
        n = max(0, math.ceil((stop - start) / step))  # (NumPy's length, in doubles)
        recipe = lambda lo, hi: Recipe(_float_range, start, step, lo, hi, dt)  # noqa: E731
    else:
        return None
    if n * dt.itemsize < on.remote_bytes:
        return None
    return Remote((n,), dt, _blocks(on, n, dt.itemsize, recipe), on.client)


def _float_range(start, step, lo: int, hi: int, dt: np.dtype) -> np.ndarray:
    """np.arange(start, stop, step, dt)[lo:hi]: NumPy writes start and start + step, then
    fills value i as first + i * (second - first) in dt."""
    first, second = dt.type(start), dt.type(start + step)
    out = np.arange(lo, hi, dtype=np.int64).astype(dt)
    out *= second - first
    out += first
    if lo <= 0 < hi:
        out[-lo] = first
    if lo <= 1 < hi:
        out[1 - lo] = second
    return out


def linspace(start, stop, num, endpoint: bool, dtype, axis) -> "tuple[Remote, float] | None":
    """np.linspace of Python numbers with at least the cluster's remote_bytes as a value of
    the cluster's and its step, or None where it is made here."""
    on = active()
    if on is None or type(num) is not int or num < 2 or axis not in (0, -1) or not all(
            type(v) in (int, float) and math.isfinite(v) and abs(v) < 2**52
            for v in (start, stop)):
        return None
    dt = np.dtype(np.float64 if dtype is None else dtype)
    if dt.kind not in "iuf" or dt.itemsize * num < on.remote_bytes:
        return None
    if dt.kind in "iu":  # (no value outside the type: NumPy's cast would warn)
        info = np.iinfo(dt)
        if not (info.min < min(start, stop) - 1 and max(start, stop) + 1 < info.max):
            return None
    div = num - 1 if endpoint else num
    step = np.subtract(np.asarray(stop), np.asarray(start), dtype=np.float64) / div
    return Remote((num,), dt, _blocks(on, num, dt.itemsize, lambda lo, hi: Recipe(
        _linspace_rows, start, stop, num, endpoint, dt, lo, hi)), on.client), step


def _linspace_rows(start, stop, num: int, endpoint: bool, dt: np.dtype, lo: int,
                   hi: int) -> np.ndarray:
    """np.linspace(start, stop, num, endpoint, dtype=dt)[lo:hi], as NumPy computes it:
    arange(num) * step + start in float64 (over the whole range where the step is 0: a
    denormal one), the endpoint set to stop, floored for an integer dtype."""
    div = num - 1 if endpoint else num
    start, stop = np.asarray(start), np.asarray(stop)
    delta = np.subtract(stop, start, dtype=np.float64)
    step = delta / div
    y = np.arange(lo, hi, dtype=np.int64).astype(np.float64)
    if step == 0:
        y /= div
        y *= delta
    else:
        y *= step
    y += start
    if endpoint and lo <= num - 1 < hi:
        y[num - 1 - lo] = stop
    if dt.kind in "iu":
        np.floor(y, out=y)
    return y.astype(dt, copy=False)


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
