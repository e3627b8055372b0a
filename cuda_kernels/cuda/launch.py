"""Launching fused kernels on the cuda backend (a mixin of CudaBackend): launch geometry from
occupancy, the 32/64-bit index variants of loop kernels, the tiled transposes, and the three
forms of a reduction (cuda/reduce.py), with the compile and launch counts `stats()` reports.
See cuda/backend.py's docstring for the kernel shapes."""
from __future__ import annotations

import math as _math
import sys
import time

import numpy as np

from tracer.ir.config import CONFIG
from tracer.ir.node import Node
from tracer.ir.stats import STATS
from ..base import record_launch
from ..emit import gathers_of
from ..planning import find_reduce, is_arg, row_plan
from . import graphs
from .codegen import WIDE, _tpb, index_bits
from .reduce import partial_dtype, strategy
from .sim import sim_math
from .transpose import tile_launch
from .vector import VEC, lanes, vector_ok

SIM_MAX_BLOCKS = 2  # the simulator costs ~0.3 ms per simulated thread


class Launcher:
    """CudaBackend's launch methods (it provides stream, empty, release, lib_launch, _api,
    _mode, geometry, _seen and _tickets_of)."""

    def _blocks(self, work: int, per_block: int, fn=None, args=(), tpb: int | None = None
                ) -> int:
        """Blocks for `work` items handled `per_block` at a time in grid-stride loops: at most
        one wave of the blocks of kernel `fn` (launched with `args`, `tpb` threads) the device
        holds at once (occupancy.py; with no kernel, what its thread limits allow)."""
        if CONFIG.cuda_sim:  # the simulator costs ~0.3 ms per simulated thread
            return max(1, min(-(-work // per_block), SIM_MAX_BLOCKS))
        return self.geometry.grid(work, per_block, fn, args, tpb or _tpb())

    def resident_blocks(self, fn, tpb: int, shared: int = 0, args=()) -> int:
        """Blocks of kernel `fn` one SM holds at once with `tpb` threads and `shared` bytes
        of dynamic shared memory, from its registers and static shared memory as compiled
        (compiled for `args` first where it has no overload yet); at least 1. Under the
        simulator, the thread and block limits only."""
        return self.geometry.resident_blocks(None if CONFIG.cuda_sim else fn, tpb, shared, args)

    def loop_tpb(self, fn, args) -> int:
        """The block size of a grid-stride kernel whose source does not depend on it (loop
        and horizontal kernels): of 256, 128 and 512, the one that keeps the most warps
        resident with its registers."""
        return _tpb() if CONFIG.cuda_sim else self.geometry.tpb(fn, args)

    def _loop_geometry(self, sizes: tuple, tpb: int, fn=None, args=()) -> tuple:
        """(grid, block) of a loop kernel over `sizes` (codegen.grid_loops): 1-D for rank 1;
        from rank 2 a 2-D block whose x spans the innermost axis (the next power of two up to
        tpb, so a short row still fills most of a warp) and y the rows, with as many blocks in
        all as the 1-D launch would get."""
        total = _math.prod(sizes)
        if len(sizes) < 2:
            return self._blocks(total, tpb, fn, args, tpb), tpb
        inner = sizes[-1]
        bx = min(tpb, 1 << (inner - 1).bit_length())
        by = tpb // bx
        wx, wy = -(-inner // bx), -(-(total // inner) // by)
        nb = self._blocks(wx * wy * tpb, tpb, fn, args, tpb)
        gx = min(wx, nb)
        return (gx, max(1, min(wy, nb // gx, 65535))), (bx, by)

    def reduce_split(self, nout: int, nred: int) -> int:
        """G, the blocks per output of a reduction. Full reductions always get several blocks
        (two under the simulator); otherwise enough blocks to fill the device, each with at
        least 8 elements per thread; never past one wave of the blocks the device holds at
        once (the thread limits' count: resident_blocks(kernel, ...) gives a kernel's own)."""
        if CONFIG.cuda_sim:
            return 2 if nout == 1 else 1
        wave = self._blocks(1 << 40, 1)
        if nout == 1:
            return max(2, min(nred // (_tpb() * 8), wave))
        want = -(-wave // nout)  # blocks per output to fill the device
        return max(1, min(want, nred // (_tpb() * 8), 256))

    def _compiled(self, fns, key) -> tuple[int, callable]:
        """(signatures before, check) to tell whether a launch compiled."""
        if CONFIG.cuda_sim:  # simulator kernels keep no overloads: count first launches
            first = key not in self._seen
            before = sum(1 for k in self._seen if k[0] == key[0])
            self._seen.add(key)
            return before, lambda: first
        before = sum(len(getattr(f, "overloads", {}) or {}) for f in fns)
        hits = STATS.cache_hits_disk  # overloads the disk cache (cuda/cache.py) gave: no compile
        return before, lambda: sum(len(getattr(f, "overloads", {}) or {}) for f in fns) - \
            before > STATS.cache_hits_disk - hits

    def launch(self, kernel, body: Node, outs: list, params: list, consts: list) -> None:
        """Launch a fusion kernel; an error record (a flag slot) per gather fused in the body
        follows the params (emit.Emitter's order)."""
        gs = gathers_of(body) if body is not None else ()  # (tests launch without a body)
        params = [p.reshape(1) if p.ndim == 0 else p for p in params] + \
            [self.flag_slot(g, [g.inputs[0].shape[a] for a in g.attr("axes")]) for g in gs]
        targets = [o.reshape(1) if o.ndim == 0 else o for o in outs]
        out = outs[0]
        fn = kernel.fn
        forms = [_thread_of(kernel, f) for f in ("thread", "warp")] if kernel.kind == "reduce" \
            else []  # (a reduction's other forms: cuda/reduce.py)
        # (layouts: a strided view is its own specialization, 'A', on a device too)
        sig = (kernel.name,) + tuple((t.dtype.str, t.ndim, _layout(t)) for t in targets + params)
        tiled = (kernel.meta or {}).get("tiled", False)
        w = 1  # elements a thread moves at once (a vector variant: cuda/vector.py)
        if kernel.kind in ("loop", "horizontal") and not tiled:
            bits = index_bits(max(_math.prod(o.shape) for o in outs))
            fn = _index_variant(kernel, bits)
            sig += (bits,)  # the simulator's compile count tells the variants apart
            if kernel.kind == "loop":
                vec, w = _vector_variant(kernel, bits, targets, params)
                if vec is not None:
                    fn, sig = vec, sig + ("vector",)
                    STATS.vector_launches += 1
        before, compiled = self._compiled([fn, *forms], sig)
        if CONFIG.cuda_sim:
            sim_math(fn, *forms)
        t0 = time.perf_counter()
        tpb = _tpb()
        stream = self.stream()
        launches = 1  # (0 where there is no work)
        if kernel.kind in ("loop", "horizontal"):
            total = max(_math.prod(o.shape) for o in outs)
            if not total:
                launches = 0
            elif tiled:  # X's sizes: the output's with the last two swapped
                sh = tuple(out.shape)  # (the simulator's shapes take no negative index)
                sizes = sh[:-2] + (sh[-1], sh[-2])
                grid, block = tile_launch(self, CONFIG.cuda_sim, _math.prod(sizes[:-2]),
                                          sizes[-2], sizes[-1])
                fn[grid, block, stream](*targets, *params, *consts, *sizes)
            elif kernel.kind == "horizontal":
                args = (*targets, *params, *consts)
                t = self.loop_tpb(fn, args)
                fn[self._blocks(total, t, fn, args, t), t, stream](*args)
            else:
                sizes = tuple(out.shape) or (1,)  # a flat kernel's target is already 1-D
                args = (*targets, *params, *consts, *sizes)
                t = self.loop_tpb(fn, args)
                grid, block = self._loop_geometry((-(-sizes[0] // w),) if w > 1 else sizes, t,
                                                  fn, args)
                fn[grid, block, stream](*args)
        elif kernel.kind == "row":
            plan = row_plan(body)
            nrow = _math.prod(plan.shape[:plan.nkept])
            if nrow:  # (its tpb is in its source: shared arrays)
                args = (*targets, *params, *consts, *plan.shape)
                fn[self._blocks(nrow, 1, fn, args), tpb, stream](*args)
            else:
                launches = 0
        else:
            launches = self._launch_reduce(kernel, body, targets[0], params, consts, stream)
        new = compiled()
        record_launch(time.perf_counter() - t0, new, recompile=new and before > 0,
                      launches=launches)

    def replay(self, entry, bufs: list, run) -> list:
        """A tracer.jit replay (`entry`, over bound buffers `bufs`): `run()` enqueues its
        launches; on a device they are captured once as a CUDA graph and the graph launched
        where the pointers allow (cuda/graphs.py)."""
        drv = graphs.usable()
        if drv is None:
            return run()
        if entry.device is None:
            entry.device = graphs.GraphReplay(self, drv)
        return entry.device.run(bufs, run)

    def _launch_reduce(self, kernel, body: Node, target, params, consts, stream) -> int:
        """One launch of the form `reduce.strategy` picks (cuda/reduce.py); returns the
        launches made."""
        red = find_reduce(body)
        m = red.inputs[0].shape
        axes = red.attr("axes")
        nout = _math.prod(d for k, d in enumerate(m) if k not in axes)
        nred = _math.prod(d for k, d in enumerate(m) if k in axes)
        if not nout:
            return 0
        form = strategy(red, m, CONFIG.cuda_sim)
        if form == "thread":
            fn = _thread_of(kernel)
            args = (target, *params, *consts, *m)
            t = self.loop_tpb(fn, args)  # (no shared memory: any block size)
            fn[self._blocks(nout, t, fn, args, t), t, stream](*args)
            return 1
        if form == "warp":  # (its warps per block are in its source)
            fn = _thread_of(kernel, "warp")
            args = (target, *params, *consts, *m)
            tpb = _tpb()
            fn[self._blocks(nout, tpb // min(32, tpb), fn, args), tpb, stream](*args)
            return 1
        G = self.reduce_split(nout, nred)
        pv = self.empty((nout * G,), partial_dtype(red))
        pi = self.empty((nout * G,) if is_arg(red) else (1,), np.int64)
        args = (target, *params, *consts, pv, pi, self._tickets(nout), *m, G)
        kernel.fn[self._blocks(nout * G, 1, kernel.fn, args), _tpb(), stream](*args)
        self.release(pv)  # stream order: a later kernel reusing them runs after this one
        self.release(pi)
        return 1

    def _tickets(self, n: int):
        """The block reductions' counters (an int32 per output, 0 between launches: the last
        block of each output sets its counter back), grown as needed."""
        t = self._tickets_of.get(self._mode())
        if t is None or t.size < n:
            t = self._api().device_array(max(n, 1024), np.int32)
            t.copy_to_device(np.zeros(t.size, np.int32), stream=self.stream())
            self._tickets_of[self._mode()] = t
        return t


def _layout(a) -> str:
    """The layout numba types an argument with ('A' for a strided view: its own overload)."""
    t = getattr(a, "_numba_type_", None)
    return t.layout if t is not None else "C" if a.flags.c_contiguous else "A"


def _index_variant(kernel, bits: int):
    """A loop kernel's function for the index width (codegen.INDEX_TYPES)."""
    if bits == 32:
        return kernel.fn
    return getattr(sys.modules[f"tracer_gen.{kernel.module}"], kernel.name + WIDE)


def _vector_variant(kernel, bits: int, targets, params) -> tuple:
    """(a flat loop kernel's vector variant, its lanes) where it has one (cuda/vector.py) and
    every array allows it, else (None, 1)."""
    if len(targets[0].shape) != 1:
        return None, 1
    fn = getattr(sys.modules.get(f"tracer_gen.{kernel.module}"),
                 kernel.name + VEC + ("" if bits == 32 else WIDE), None)
    w = lanes([a.dtype for a in (*targets, *params)])
    if fn is None or not vector_ok([*targets, *params], w):
        return None, 1
    return fn, w


def _thread_of(kernel, form: str = "thread"):
    """A reduction's thread- or warp-per-output kernel (cuda/reduce.py), from its module."""
    mod = sys.modules[f"tracer_gen.{kernel.module}"]
    suffix = {"thread": "_t", "warp": "_warp"}[form]
    return getattr(mod, (kernel.meta or {}).get(form, kernel.name + suffix))
