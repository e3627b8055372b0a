"""The cuda backend (numba.cuda): loading, memory, launch and library ops. The kernel source
comes from cuda/codegen.py, for the same fusion bodies as the CPU backend; gather and scatter
run in cuda/index.py.

Kernels
- Loop kernels (codegen.grid_loops): a grid-stride loop over the flat output index for flat and
  rank-1 kernels; from rank 2 a 2-D grid, rows (the outer axes, multi-index by divmod once a
  row) on y and the innermost axis on x, so no divmod per element. Sizes are kernel arguments
  (never constants). Each kernel has a 32-bit and a 64-bit index variant (unsigned index
  arithmetic, cast back at every step); the launch takes the 32-bit one where the output has
  fewer than 2**31 elements. Subscripts are unsigned (no negative-index wrap), as on the CPU.
  A kernel whose output is the transpose of its last two axes goes through a shared-memory
  tile (cuda/transpose.py): coalesced reads and writes.
- Reductions: one launch of the form cuda/reduce.py picks by shape: a thread per output in
  NumPy's order (float sums pairwise as NumPy adds them, so results are NumPy's to the bit), or
  G blocks per output whose last block to finish combines the partials in a fixed tree. No
  result depends on timing. argmax/argmin keep NumPy's first-occurrence and first-NaN rules.
- Launch geometry (cuda/occupancy.py): a grid-stride launch gets at most one wave of the
  blocks the device holds at once, from the kernel's registers and shared memory as compiled;
  loop and horizontal kernels take the block size (128, 256 or 512) that keeps the most warps
  resident. Reduction and row kernels keep the tpb their source is generated for.
- Helpers (codegen.HELPER_SOURCES) are `cuda.jit(device=True, inline="always")` (the only
  kind compile_ptx accepts without a GPU, NUMBA_NOTES.md section 3).
- Under `CONFIG.cuda_sim` the same generated source runs on Numba's simulator: the module is
  imported with `_jit`/`_devjit` bound to `simulator.jit`, and `cuda` bound to the real
  `numba.cuda` module, which `simulator.jit` swaps for its fake module while a kernel runs (binding
  `cuda` to `numba.cuda.simulator` itself would not work: that module has no `grid`, `threadIdx`,
  ...). Grids are tiny under the simulator (1-2 blocks of 32 threads). Simulated kernels see
  a `math` whose domain errors and overflows give NaN/inf as on the device (cuda/sim.py).

Streams and waits
- Every launch, copy and error record goes on one non-default stream per mode (`stream()`), in
  program order; nothing synchronizes after a launch. The host waits (`sync`, counted in
  `stats().host_waits`) only where it reads values: `to_host` (results, `float()`, printing,
  the interpreter fallbacks' arguments, a dynamic slice's starts), or where the error records
  or the pinned staging buffers run out. Pool memory is reused in stream order.
- Uploads go through pinned staging buffers (memory.Staging), asynchronously.
- Index kernels flag an out-of-bounds index in their slot of a device error buffer; `sync`
  reads the slots used since the last wait and raises the first flagged error at the user's
  line (tracer.debug.raise_device_error).

What runs where (`run_node`)
- On the device, no host copy:
  * reshape of a contiguous array, and a slice, transpose or broadcast whose elements already
    lie in C order (a row, rows along axis 0): a device view (no allocation, no launch);
  * a transpose that swaps two blocks of axes (`.T`, a batch's last two axes): the tiled
    transpose kernel (cuda/transpose.py); other slices, transposes, broadcast_to: one
    strided-copy kernel into a new array (2-D grid from rank 2, both index variants);
  * concatenate: one strided copy per input into its part of the output;
  * setslice (a write through a view): a copy of the base, then a strided copy of the value into
    the slice;
  * matmul, sort, argsort, cumsum, cumprod through CuPy (cuBLAS, Thrust/CUB) on a real device
    where it is installed (cuda/libs.py: dtypes, NumPy's NaN and tie order);
  * other matmuls for bool/int/uint/float32/float64 results: a tiled shared-memory kernel (16x16
    tiles, batch dims on grid z; batch broadcasting other than "all" or "none" first
    materializes the broadcast operand with a strided copy; libs.tiled_matmul). Floats
    accumulate in float64, integers in 64 bits.
- Round trip through the host (copy args to host, `ir.interp.eval_node`, copy the result back):
  every other op (the interpreter fallbacks: ops without kernel templates, complex and float16
  dtypes), and the view/library ops above when a dtype has no device kernel (complex, float16,
  ...). `contiguous()` of a non-contiguous device array also round-trips (values made here are
  always contiguous, so the executor does not hit it).
"""
from __future__ import annotations

import math as _math
import sys
import time
import weakref

import numpy as np

from tracer.ir.node import Buffer, Node
from tracer.ir.config import CONFIG
from tracer.ir.interp import eval_node
from tracer.ir.stats import STATS
from ..base import ERROR_HOOKS, Backend, Gen, record_launch
from ..compiler import import_module, write_module
from ..emit import key_hash, type_aliases
from ..planning import find_reduce, is_arg, row_plan
from . import libs, occupancy
from .codegen import (HEADER, NB_TYPES, WIDE, CudaEmitter, _tpb, gen_horizontal, gen_loop,
                      gen_matmul, gen_row, gen_strided_copy, index_bits)
from .reduce import gen_block, gen_thread, gen_warp, partial_dtype, strategy
from .index import device_gather, device_scatter, gen_index
from .libs import tiled_matmul
from .memory import Borrowed, DevicePool, Staging, cstrides, from_interface, interface
from .sim import shared_arrays_once, sim_math, warp_shuffles
from .transpose import (gen_tiled_loop, gen_transpose, tile_launch, tiled_transpose,
                        tiles_last_two)
from .toolchain import device_api

SIM_MAX_BLOCKS = 2  # the simulator costs ~0.3 ms per simulated thread
FLAG_SLOTS = 256  # device error records between two host waits (index kernels: one a launch)
_LIB: dict[str, object] = {}  # library kernels' modules by name (kind, argument and mode)


def _on_device_dtype(*dts) -> bool:
    return all(np.dtype(d).name in NB_TYPES for d in dts)


def _c_ordered(shape, strides) -> bool:
    """Elements at these strides (in elements) lie in C order: a view needs no copy."""
    return all(d <= 1 or st == c for d, st, c in zip(shape, strides, cstrides(shape)))


def _is_device(x) -> bool:
    return hasattr(x, "copy_to_host")


# ---------------------------------------------------------------------------- the backend

class CudaBackend(Backend):
    name = "cuda"
    releases_storage = True  # device memory comes back only when the executor says so
    device_memory = True

    def __init__(self):
        from numba import cuda
        from numba.cuda import simulator
        self._cuda = cuda
        self._sim = simulator
        self._seen: set = set()  # simulator launches already counted as compiles
        self.geometry = occupancy.Geometry(lambda: self._cuda.get_current_device())
        self.pool = DevicePool(self._api)
        self._staging = Staging(self._api, self._waited, self._event)
        self._per_mode: dict[str, tuple] = {}  # mode -> (stream, device flags, their host copy)
        # per flag slot handed out since the last wait: (node, its index axes' sizes, the
        # evaluation's graph, the raw site of the user's line that evaluated it)
        self._checks: list[tuple] = []
        self.run_graph = None  # the graph of the evaluation running (executor.run's `graph`)
        self._unguarded: list[int] = []  # flag slots of the run going on (see guard)
        self._guards: list[tuple] = []  # (flag slots, weak refs to the results they guard)
        self._poisoned: dict[int, tuple] = {}  # id(array) -> (weak ref, error): failed values
        self._consts: dict[tuple, object] = {}
        self._tickets_of: dict[str, object] = {}  # mode -> the block reductions' counters

    # ---- codegen and loading
    def _mode(self) -> str:
        return "sim" if CONFIG.cuda_sim else "dev"

    def variant(self) -> str:
        return f"|cuda-{self._mode()}-{_tpb()}"

    def module_globals(self) -> dict:
        """The decorators a generated module is imported with: the simulator's, or `cuda.jit`
        with the kernel disk cache (cuda/cache.py) and inline device helpers."""
        if CONFIG.cuda_sim:
            shared_arrays_once()
            warp_shuffles()
            jit, dev = self._sim.jit, self._sim.jit(device=True)
            ldcg = _sim_ldcg
        else:  # the intrinsic itself: cuda.ldcg's overload needs a driver to compile
            from numba.cuda.cache_hints import ldcg_intrinsic as ldcg
            from .cache import jit  # lazy: device mode only (numba-cuda caching)
            dev = self._cuda.jit(device=True, inline="always")
        return {"cuda": self._cuda, "_jit": jit, "_devjit": dev, "_ldcg": ldcg}

    def generate(self, body: Node, kind: str, name: str, flat: bool, parallel: bool) -> Gen:
        em = CudaEmitter(body)
        if kind == "reduce":
            src = "\n\n\n".join([gen_block(em, body, name, _tpb()), gen_thread(em, body, name),
                                 gen_warp(em, body, name, _tpb())])
            meta = {"thread": name + "_t", "warp": name + "_warp"}
        elif kind == "row":
            src, meta = gen_row(em, body, name, _tpb()), {}
        elif kind == "horizontal":
            src, meta = gen_horizontal(em, body, name), {}
        elif not flat and tiles_last_two(body):
            src, meta = gen_tiled_loop(em, body, name, CONFIG.cuda_sim), {"tiled": True}
        else:
            src = gen_loop(em, body, name, flat)
            meta = {}
        return Gen(HEADER, em.helper_source("@_devjit"), src, em.consts, meta)

    def library_kernel(self, kind: str, arg, variant: str = "") -> object:
        """A library kernel (strided copy of a rank, matmul of a result dtype, an index kernel:
        cuda/index.py, or a tiled transpose: cuda/transpose.py) for the current mode, generated
        once into the kernel cache's folder and imported like a fusion kernel, so the simulator
        and PTX tests see the same source. Its module is named by the hash of its text, as batch
        modules are: a file never changes under a process using it (the CUDA disk cache keys
        kernels by that text). `variant`: the suffix of another function of the module (the
        copy's and transpose's 64-bit index variant, codegen.WIDE)."""
        name = f"lib_{kind}_{arg}_{self._mode()}"
        mod = _LIB.get(name)
        if mod is None:
            src = {"copy": lambda: gen_strided_copy(arg, name), "index": lambda: gen_index(arg, name),
                   "matmul": lambda: gen_matmul(np.dtype(arg), name),
                   "transpose": lambda: gen_transpose(name, CONFIG.cuda_sim, arg)}[kind]()
            source = "\n".join(["# generated by tracer: do not edit", HEADER, type_aliases(), "",
                                src, ""])
            module = f"{name}_{key_hash(source)}"
            mod = _LIB[name] = import_module(module, write_module(module, source),
                                             self.module_globals())
        return getattr(mod, name + variant)

    # ---- memory
    def _api(self):
        # the device's first use checks its driver against the toolchain (cuda/toolchain.py)
        return self._sim if CONFIG.cuda_sim else device_api(self._cuda)

    def empty(self, shape, dtype):
        return self.pool.empty(shape, dtype)

    def release(self, arr) -> None:
        """The executor is done with this intermediate: its memory may be handed out again."""
        self.pool.release(arr)

    def _mode_state(self) -> tuple:
        st = self._per_mode.get(self._mode())
        if st is None:
            api = self._api()
            stream = api.stream()
            flags = api.device_array(3 * FLAG_SLOTS, np.int64)
            flags.copy_to_device(np.zeros(3 * FLAG_SLOTS, np.int64), stream=stream)
            st = self._per_mode[self._mode()] = (stream, flags,
                                                 api.pinned_array(3 * FLAG_SLOTS, np.int64))
        return st

    def constant(self, value: np.generic):
        """A 1-element device array holding `value`, uploaded once (a fill's source)."""
        key = (self._mode(), value.dtype.str, value.tobytes())
        c = self._consts.get(key)
        if c is None:
            c = self._consts[key] = self.from_host(np.full(1, value))
        return c

    def stream(self):
        """The backend's stream: every launch and copy is enqueued on it, in program order."""
        return self._mode_state()[0]

    def from_host(self, a: np.ndarray):
        a = np.asarray(a)  # (np.ascontiguousarray would turn a 0-d array into shape (1,))
        # NumPy calls an empty array, or one reversed along a length-1 axis, C-contiguous, but
        # numba-cuda cannot copy a negative stride back, and slices it to size 0
        if not a.flags.c_contiguous or any(s < 0 for s in a.strides):
            a = a.copy(order="C")
        if a.nbytes == 0:
            return self._api().device_array(a.shape, a.dtype)
        block = self.pool.empty((a.nbytes,), np.uint8)  # back to the pool when its leaf dies
        self._staging.upload(block, a.reshape(-1).view(np.uint8), self.stream())
        STATS.h2d_copies += 1
        STATS.h2d_bytes += a.nbytes
        return block.view(a.dtype).reshape(a.shape)

    def from_buffer(self, buf: Buffer):
        """The device value of a leaf: a host array is copied once; the device copy replaces
        buf.value and the host array stays in buf.host. A value whose evaluation a device
        error failed raises that error again."""
        if self._poisoned:
            self._check_poison(buf.value)
        if isinstance(buf.value, (np.ndarray, np.generic)):
            host = np.asarray(buf.value)
            if type(buf) is Borrowed:  # memory its producer may write: uploaded anew each run
                return self.from_host(host)
            buf.value = self.from_host(host)
            buf.host = host
        return buf.value

    # ---- device memory other libraries hand in and take (tracer/interchange.py)
    def stream_handle(self) -> int | None:
        """The stream's handle as the CUDA array interface and DLPack give it; None under
        the simulator, whose launches are done when they return."""
        return None if CONFIG.cuda_sim else int(self.stream())

    def device_id(self) -> int:
        return 0 if CONFIG.cuda_sim else int(self._api().get_current_device().id)

    def interface(self, arr) -> dict:
        """`__cuda_array_interface__` of a device array this backend made."""
        return interface(arr, self.stream_handle())

    def from_interface(self, desc: dict, owner):
        """A device array over another library's device memory (no copy)."""
        return from_interface(desc, owner, self._api(), CONFIG.cuda_sim)

    def order_before(self, stream) -> None:
        """Work the consumer enqueues on `stream` (a handle; 1, 2: the legacy and per-thread
        default streams) runs after the work queued here: an event, no host wait."""
        if CONFIG.cuda_sim:
            return
        ev = self._event()
        ev.record(self.stream())
        ev.wait(self._cuda.external_stream(stream))

    def to_host(self, x) -> np.ndarray:
        """x's values: the host waits for the work queued before (and raises a device error
        it flagged)."""
        if isinstance(x, (np.ndarray, np.generic)):
            return np.asarray(x)
        return self.to_hosts([x])[0]

    def to_hosts(self, xs: list) -> list:
        """The host values of several arguments (device arrays copied back, with one wait;
        others as they are)."""
        out, copied = [], False
        for x in xs:
            if not _is_device(x):
                out.append(x)
                continue
            if self._poisoned:
                self._check_poison(x)
            out.append(x.copy_to_host(stream=self.stream()))
            STATS.d2h_copies += 1
            STATS.d2h_bytes += x.size * x.dtype.itemsize
            copied = True
        if copied:
            self.sync()
        return out

    # ---- waiting, and the errors kernels flag on the device
    def _event(self):
        """An event that only orders work (no timing: cheaper to record)."""
        return self._sim.event() if CONFIG.cuda_sim else self._cuda.event(timing=False)

    def _waited(self) -> None:
        STATS.host_waits += 1

    def flag_slot(self, n: Node, sizes: list):
        """A zeroed 3-int64 error record for one index launch of node `n` (`sizes`: the
        lengths of its indexed axes): the kernel writes (1, bad index, index array) into it
        and the next wait raises NumPy's IndexError for the first launch that wrote one."""
        if len(self._checks) == FLAG_SLOTS:
            self.sync()
        k = len(self._checks)
        self._unguarded.append(k)
        self._checks.append((n, sizes, self.run_graph,
                             ERROR_HOOKS.user_site() if ERROR_HOOKS.user_site else None))
        return self._mode_state()[1][3 * k:3 * k + 3]

    def guard(self, results: list) -> None:
        """A run is over with these results: an error its kernels flagged (found at a later
        wait) fails them too, so reading them raises it again instead of giving garbage."""
        if self._unguarded:
            self._guards.append((self._unguarded, [weakref.ref(r) for r in results
                                                   if _is_device(r)]))
            self._unguarded = []

    def _check_poison(self, x) -> None:
        entry = self._poisoned.get(id(x))
        if entry is None:
            return
        if entry[0]() is not x:  # a new array at a dead one's address
            del self._poisoned[id(x)]
            return
        exc = entry[1]
        again = type(exc)(*exc.args)
        for note in getattr(exc, "__notes__", ()):
            again.add_note(note)
        raise again

    def sync(self) -> None:
        """Wait for every launch and copy queued on the stream; raise the first error a
        kernel flagged since the last wait, at the user's line of its op."""
        stream, flags, host = self._mode_state()
        checks, self._checks = self._checks, []
        guards, self._guards = self._guards, []
        self._unguarded = []  # (read now: the slots are numbered anew)
        used = 3 * len(checks)
        if used:
            flags[:used].copy_to_host(host[:used], stream=stream)
            STATS.d2h_copies += 1
            STATS.d2h_bytes += used * 8
        stream.synchronize()
        self._waited()
        self._staging.idle()
        for k, (n, sizes, graph, raw) in enumerate(checks):
            if host[3 * k]:
                flags[:used].copy_to_device(np.zeros(used, np.int64), stream=stream)
                j = int(host[3 * k + 2])
                exc = IndexError(f"index {int(host[3 * k + 1])} is out of bounds for axis "
                                 f"{n.attr('axes')[j]} with size {sizes[j]}")
                try:
                    if ERROR_HOOKS.raise_error is not None:
                        ERROR_HOOKS.raise_error(exc, n, graph, raw)
                    raise exc
                finally:  # the failed runs' results (of this slot or later) fail too
                    for slots, refs in guards:
                        if slots[-1] >= k:
                            for r in refs:
                                if r() is not None:
                                    self._poisoned[id(r())] = (r, exc)

    def lib_launch(self, fn, grid, block, *args) -> None:
        """Enqueue a library kernel (copy, matmul, index) on the stream."""
        fn[grid, block, self.stream()](*args)
        STATS.kernels_launched += 1

    def _dev(self, x):
        return x if _is_device(x) else self.from_host(np.asarray(x))

    def is_contiguous(self, x) -> bool:
        if isinstance(x, np.ndarray):
            return x.flags.c_contiguous
        return x.is_c_contiguous()

    def contiguous(self, x):
        if _is_device(x) and x.is_c_contiguous():
            return x
        return self.from_host(self.to_host(x))  # not produced by this backend: host round trip

    def flatten(self, x):
        return x.reshape(x.size)

    # ---- launch
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
        params = [p.reshape(1) if p.ndim == 0 else p for p in params]
        targets = [o.reshape(1) if o.ndim == 0 else o for o in outs]
        out = outs[0]
        fn = kernel.fn
        forms = [_thread_of(kernel, f) for f in ("thread", "warp")] if kernel.kind == "reduce" \
            else []  # (a reduction's other forms: cuda/reduce.py)
        sig = (kernel.name,) + tuple((t.dtype.str, t.ndim) for t in targets) + \
            tuple((p.dtype.str, p.ndim) for p in params)
        tiled = (kernel.meta or {}).get("tiled", False)
        if kernel.kind in ("loop", "horizontal") and not tiled:
            bits = index_bits(max(_math.prod(o.shape) for o in outs))
            fn = _index_variant(kernel, bits)
            sig += (bits,)  # the simulator's compile count tells the variants apart
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
                grid, block = self._loop_geometry(sizes, t, fn, args)
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

    # ---- non-fusion nodes
    def run_node(self, n: Node, args: list, inplace: bool = False):
        """Views and library ops on the device when their dtypes have kernels; everything else
        (interpreter ops) round-trips through the host. See the module docstring."""
        out = libs.run(self, n, args)  # cuBLAS, sorts and scans where the library can
        if out is None and n.op in ("reshape", "slice", "dynamic_slice", "transpose",
                                    "broadcast_to", "concatenate", "setslice", "matmul") and \
                _on_device_dtype(n.dtype, *(i.dtype for i in n.inputs)):
            # (a dynamic slice's starts stay where they are: read on the host)
            dev = [self._dev(a) if k == 0 or n.op != "dynamic_slice" else a
                   for k, a in enumerate(args)]
            out = self._setslice(n, dev, inplace) if n.op == "setslice" else \
                getattr(self, "_" + n.op)(n, dev)
        if n.op in ("gather", "scatter") and _on_device_dtype(n.dtype, *(i.dtype for i in n.inputs)):
            dev = [self._dev(a) for a in args]
            out = device_gather(self, n, dev) if n.op == "gather" else \
                device_scatter(self, n, dev, inplace)
        if out is None:
            out = self.from_host(eval_node(n, self.to_hosts(args)))
        return out

    def _copy(self, out, x, oo: int, xo: int, shape, ostr, xstr) -> None:
        """out.flat[oo + i.ostr] = x.flat[xo + i.xstr] for every index i of `shape`."""
        shape = tuple(shape)
        work = _math.prod(shape)
        if work == 0:
            return
        if not shape:
            shape, ostr, xstr = (1,), (0,), (0,)
        fn = self.library_kernel("copy", len(shape), "" if index_bits(work) == 32 else WIDE)
        args = (self.flatten(out), self.flatten(x), oo, xo, *shape, *ostr, *xstr)
        grid, block = self._loop_geometry(shape, _tpb(), fn, args)
        self.lib_launch(fn, grid, block, *args)

    def put(self, out, value, axis: int, lo: int) -> None:
        """out[..., lo:lo + len, ...] = value along `axis` (a budget's chunk into its output),
        on the device: one device-to-device copy where the rows lie in one run, else one
        strided-copy kernel."""
        value = self.contiguous(self._dev(value))
        if value.size == 0:
            return
        os_ = cstrides(out.shape)
        start = lo * os_[axis]
        if all(d == 1 for d in tuple(out.shape)[:axis]):  # the rows are one contiguous run
            self.flatten(out)[start:start + value.size].copy_to_device(
                self.flatten(value), stream=self.stream())
        else:
            self._copy(out, value, start, 0, value.shape, os_, cstrides(value.shape))

    def _view_copy(self, shape, dtype, x, xo: int, xstr) -> object:
        """x's elements at offset xo, strides xstr as a contiguous array of `shape`: a device
        view of x where they already lie in C order (a row, a run of rows along axis 0,
        length-1 axes moved), else a strided copy."""
        shape = tuple(shape)
        size = _math.prod(shape)
        if _c_ordered(shape, xstr) and x.dtype == dtype:
            return self.flatten(x)[xo:xo + size].reshape(shape)
        out = self.empty(shape, dtype)
        self._copy(out, x, 0, xo, shape, cstrides(shape), xstr)
        return out

    def _reshape(self, n: Node, args):
        x = args[0]
        return x.reshape(n.shape) if x.is_c_contiguous() else None

    def _slice(self, n: Node, args):
        x = self.contiguous(args[0])
        xs = cstrides(x.shape)
        sl = n.attr("slices")
        return self._view_copy(n.shape, n.dtype, x, sum(s[0] * st for s, st in zip(sl, xs)),
                               [s[2] * st for s, st in zip(sl, xs)])

    def _dynamic_slice(self, n: Node, args):
        x = self.contiguous(args[0])
        xs = cstrides(x.shape)
        starts = self.to_host(args[1])  # ndim integers: a wait where they are on the device
        return self._view_copy(n.shape, n.dtype, x, sum(int(s) * st for s, st in zip(starts, xs)),
                               [s * st for s, st in zip(n.attr("steps"), xs)])

    def _transpose(self, n: Node, args):
        """A view where the elements stay in C order, the tiled kernel (cuda/transpose.py) for
        a swap of two blocks of axes, else a strided copy."""
        x = self.contiguous(args[0])
        xs = cstrides(x.shape)
        st = [xs[p] for p in n.attr("perm")]
        out = None if _c_ordered(n.shape, st) else tiled_transpose(self, n, x)
        return self._view_copy(n.shape, n.dtype, x, 0, st) if out is None else out

    def _broadcast_to(self, n: Node, args):
        return self._broadcast(self.contiguous(args[0]), tuple(n.shape))

    def _broadcast(self, x, shape: tuple):
        xshape = tuple(x.shape)
        xs = cstrides(xshape)
        lead = len(shape) - x.ndim
        st = [0] * lead + [0 if xshape[k] == 1 and shape[lead + k] != 1 else xs[k]
                           for k in range(x.ndim)]
        return self._view_copy(shape, x.dtype, x, 0, st)

    def _concatenate(self, n: Node, args):
        out = self.empty(n.shape, n.dtype)
        ax = n.attr("axis")
        os_ = cstrides(n.shape)
        off = 0
        for x in args:
            x = self.contiguous(x)
            self._copy(out, x, off * os_[ax], 0, x.shape, os_, cstrides(x.shape))
            off += x.shape[ax]
        return out

    def _setslice(self, n: Node, args, inplace: bool = False):
        base, value = (self.contiguous(a) for a in args)
        if inplace and base is args[0]:  # the plan says nothing reads base's old value
            out = base
        else:
            out = self.empty(n.shape, n.dtype)
            self._copy(out, base, 0, 0, (n.size,), (1,), (1,))
        os_ = cstrides(n.shape)
        sl = n.attr("slices")
        self._copy(out, value, sum(s[0] * st for s, st in zip(sl, os_)), 0, value.shape,
                   [s[2] * st for s, st in zip(sl, os_)], cstrides(value.shape))
        return out

    def _matmul(self, n: Node, args):
        return tiled_matmul(self, n, args)


def _sim_ldcg(a, i):
    return a[i]


def _index_variant(kernel, bits: int):
    """A loop kernel's function for the index width (codegen.INDEX_TYPES)."""
    if bits == 32:
        return kernel.fn
    return getattr(sys.modules[f"tracer_gen.{kernel.module}"], kernel.name + WIDE)


def _thread_of(kernel, form: str = "thread"):
    """A reduction's thread- or warp-per-output kernel (cuda/reduce.py), from its module."""
    mod = sys.modules[f"tracer_gen.{kernel.module}"]
    return getattr(mod, (kernel.meta or {}).get(form, kernel.name + {"thread": "_t", "warp": "_warp"}[form]))
