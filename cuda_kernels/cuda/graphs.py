"""CUDA-graph replay of `tracer.jit` (issue 21 item 8): a warm replay's launches captured once
as a CUDA graph (stream capture through cuda.bindings' driver API, on the backend's stream)
and launched as one unit while the arguments' device pointers stay the same.

When (GraphReplay.run, per jit entry):
- A replay whose bound buffers are all device arrays (or small host values: plan parameters,
  keyed by value) runs plainly, and counts as warm for those pointers when it was clean: kernels launched, and no upload, copy back, host wait or
  error record (what a capture cannot hold or the graph would replay wrongly: a staging
  buffer's contents, a flag slot's numbering).
- The next replay with the same pointers captures: its launches are recorded, not run, with
  every pool block it is handed kept out of the pool (DevicePool.hold) while the graph lives;
  the graph is instantiated and launched. Later replays with those pointers launch the graph.
- A graph's results lie in its own blocks, which its next launch writes again: each launch
  copies them into new pool blocks (device to device, on the stream), which the caller gets.
- New pointers run plainly (warm for them: the next call with them captures again). An entry
  keeps the graphs of its MAX_GRAPHS most recently launched pointers: a loop `x = f(x)` passes
  a few pool blocks in turn.
- Any failure of the driver, or a capture that was not clean, ends capture and runs plainly
  from then on for that entry (its graphs let go), counted in `stats().graph_fallbacks`.
- Not under the simulator, with CONFIG.check_nans (it reads results on the host) or when the
  driver lacks stream capture. Graphs past GRAPH_MAX_BYTES of results are not kept: a replay
  that large is bound by its kernels, not by launching them.

No GPU has run this yet: tests drive the decisions with a fake driver module.
"""
from __future__ import annotations

import weakref

import numpy as np

from tracer.ir.config import CONFIG
from tracer.ir.node import Buffer
from tracer.ir.stats import STATS
from .memory import interface

GRAPH_MAX_BYTES = 64 << 20
MAX_GRAPHS = 4  # per jit entry: a loop `x = f(x)` passes a few blocks in turn
NEEDED = ("cuStreamBeginCapture", "cuStreamEndCapture", "cuGraphInstantiate", "cuGraphLaunch",
          "cuGraphExecDestroy", "cuGraphDestroy", "CUstream", "CUstreamCaptureMode")


def driver_api():
    """cuda.bindings' driver module where it offers stream capture and graphs, else None."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return None
    return driver if all(hasattr(driver, n) for n in NEEDED) else None


def usable():
    """The driver module where replays may be captured as graphs (module doc), else None."""
    return None if CONFIG.cuda_sim or CONFIG.check_nans else driver_api()


def pointers(bufs) -> tuple | None:
    """What a graph's launches depend on of the bound buffers: each device array's address,
    shape and dtype, a small host value's bytes (a plan parameter: a kernel argument the
    graph holds, or an upload, which keeps the run from being captured); None where a host
    array is uploaded at each run."""
    out = []
    for b in bufs:
        v = b.value
        if hasattr(v, "copy_to_host"):
            out.append((interface(v, None)["data"][0], tuple(v.shape), v.dtype.str))
        elif isinstance(v, (np.ndarray, np.generic)) and v.size <= 16:
            out.append(("value", v.shape, v.dtype.str, v.tobytes()))
        else:
            return None
    return tuple(out)


def _ok(res) -> bool:
    err = res[0] if isinstance(res, tuple) else res
    return int(err) == 0  # CUDA_SUCCESS


class _Snapshot:
    """The counters a clean run leaves unchanged, and its launches."""
    FIELDS = ("h2d_copies", "d2h_copies", "host_waits", "interpreted_nodes", "fallbacks")

    def __init__(self, be):
        self.be, self.vals = be, [getattr(STATS, f) for f in self.FIELDS]
        self.launched, self.checks = STATS.kernels_launched, len(be._checks)

    def clean(self) -> bool:
        return [getattr(STATS, f) for f in self.FIELDS] == self.vals and \
            STATS.kernels_launched > self.launched and len(self.be._checks) == self.checks


class _Graph:
    """An instantiated graph, the results it writes and the blocks it owns."""

    def __init__(self, drv, graph, gexec, outs, held, pool, kernels: int):
        self.exec, self.outs, self.kernels = gexec, outs, kernels
        self._done = weakref.finalize(self, _destroy, drv, graph, gexec, pool, held)

    def close(self) -> None:
        self.outs = None  # (their blocks come back when these arrays die)
        self._done()


def _destroy(drv, graph, gexec, pool, held) -> None:
    drv.cuGraphExecDestroy(gexec)
    drv.cuGraphDestroy(graph)
    pool.give(held)


class GraphReplay:
    """The graph state of one jit entry (see the module doc). `be`: the cuda backend (its
    stream, pool and empty), `drv`: the driver module."""

    def __init__(self, be, drv):
        self.be, self.drv = be, drv
        self.warm: dict[tuple, None] = {}      # pointers of recent clean plain runs (LRU)
        self.graphs: dict[tuple, _Graph] = {}  # pointers -> the graph captured for them (LRU)
        self.off = False   # a failure: plain runs from now on

    def run(self, bufs, plain) -> list:
        """The results of one replay over bound buffers `bufs`; `plain()` enqueues its
        launches and returns its result buffers."""
        ptrs = None if self.off else pointers(bufs)
        if ptrs is None:
            return plain()
        g = self.graphs.pop(ptrs, None)
        if g is not None:
            self.graphs[ptrs] = g  # (most recent last)
            return self._launch(ptrs, plain)
        if ptrs in self.warm:  # seen clean before: capture
            del self.warm[ptrs]
            return self._capture(ptrs, plain)
        snap = _Snapshot(self.be)
        res = plain()
        if snap.clean() and _keepable(res):
            self.warm[ptrs] = None
            if len(self.warm) > 2 * MAX_GRAPHS:
                del self.warm[next(iter(self.warm))]
        return res

    def _stream(self):
        return self.drv.CUstream(int(self.be.stream()))

    def _capture(self, ptrs, plain) -> list:
        drv, h = self.drv, self._stream()
        if len(self.graphs) >= MAX_GRAPHS:  # the least recently launched goes
            self.graphs.pop(next(iter(self.graphs))).close()
        relaxed = drv.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        if not _ok(drv.cuStreamBeginCapture(h, relaxed)):
            return self._fallback(plain)
        snap = _Snapshot(self.be)
        pool = self.be.pool
        try:
            with pool.hold() as held:
                res = plain()
        except Exception:  # (nothing ran: the capture only recorded; a real error recurs)
            drv.cuStreamEndCapture(h)
            pool.give(held)
            return self._fallback(plain)
        end = drv.cuStreamEndCapture(h)
        graph = end[1] if _ok(end) else None
        made = drv.cuGraphInstantiate(graph, 0) if graph is not None and snap.clean() and \
            _keepable(res) else None
        if made is None or not _ok(made):
            if graph is not None:
                drv.cuGraphDestroy(graph)
            pool.give(held)
            return self._fallback(plain)
        self.graphs[ptrs] = _Graph(drv, graph, made[1], [b.value for b in res], held, pool,
                                   STATS.kernels_launched - snap.launched)
        STATS.kernels_launched = snap.launched  # (counted again when the graph runs)
        return self._launch(ptrs, plain)

    def _launch(self, ptrs, plain) -> list:
        g = self.graphs[ptrs]
        if not _ok(self.drv.cuGraphLaunch(g.exec, self._stream())):
            return self._fallback(plain)
        STATS.graph_launches += 1
        STATS.kernels_launched += g.kernels
        out = []
        for v in g.outs:  # the graph's next launch writes its own blocks again
            fresh = self.be.empty(v.shape, v.dtype)
            if v.size:
                fresh.copy_to_device(v, stream=self.be.stream())
            out.append(Buffer(fresh))
        return out

    def _fallback(self, plain) -> list:
        STATS.graph_fallbacks += 1
        self.off = True
        for g in self.graphs.values():
            g.close()
        self.graphs.clear()
        return plain()


def _keepable(res) -> bool:
    """Results a graph can own and copy out: contiguous device arrays, not too large."""
    vals = [b.value for b in res]
    return all(hasattr(v, "copy_to_host") and v.is_c_contiguous() for v in vals) and \
        sum(v.size * v.dtype.itemsize for v in vals) <= GRAPH_MAX_BYTES
