"""The cuda backend (numba.cuda): loading, memory, waits and library ops; launching fused
kernels is cuda/launch.py's (a mixin). The kernel source comes from cuda/codegen.py and
cuda/reduce.py, for the same fusion bodies as the CPU backend; gathers no kernel reads (and
scatters) run in cuda/index.py and cuda/segment.py.

Kernels
- Loop kernels (codegen.grid_loops): a grid-stride loop over the flat output index for flat and
  rank-1 kernels; from rank 2 a 2-D grid, rows (the outer axes, multi-index by divmod once a
  row) on y and the innermost axis on x, so no divmod per element. Sizes are kernel arguments
  (never constants). Each kernel has a 32-bit and a 64-bit index variant (unsigned index
  arithmetic, cast back at every step); the launch takes the 32-bit one where the output has
  fewer than 2**31 elements. Subscripts are unsigned (no negative-index wrap), as on the CPU.
  A kernel whose output is the transpose of its last two axes goes through a shared-memory
  tile (cuda/transpose.py): coalesced reads and writes. A 1-D loop over same-shaped arrays
  also has a vector variant (16 bytes a thread through ld/st.global.v2/v4, cuda/vector.py),
  launched where every array is contiguous and aligned.
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
- Uploads go through pinned staging buffers (memory.Staging), asynchronously; a budget's
  chunks upload on a second stream (overlapped_uploads), with events ordering the two.
- A tracer.jit replay on a device is captured once as a CUDA graph and launched as one
  (cuda/graphs.py).
- Index kernels, and fused kernels for each gather in them (emit.Emitter._gather), flag an
  out-of-bounds index in their slot of a device error buffer; `sync` reads the slots used
  since the last wait and raises the first flagged error at the user's line
  (tracer.debug.raise_device_error).

What runs where (`run_node`)
- On the device, no host copy:
  * reshape of a contiguous array, and a slice, transpose or broadcast whose elements already
    lie in C order (a row, rows along axis 0): a device view (no allocation, no launch);
  * a slice or dynamic slice (positive steps), a transpose keeping the innermost axis, or a
    broadcast that only fused kernels read (the executor's plan, `strided_view`): a strided
    device view (cuda/views.py) the kernels read in place, layout 'A';
  * a transpose that swaps two blocks of axes (`.T`, a batch's last two axes): the tiled
    transpose kernel (cuda/transpose.py); other slices, transposes, broadcast_to: one
    strided-copy kernel into a new array (2-D grid from rank 2, both index variants);
  * concatenate: one strided copy per input into its part of the output;
  * setslice (a write through a view): a copy of the base, then a strided copy of the value into
    the slice; nothing where the value's fusion wrote straight into the slice (the memory
    plan's `into`, `slice_view`);
  * matmul, sorts, partitions, searchsorted and integer scans through CuPy (cuBLAS, Thrust/CUB)
    on a real device where it is installed (cuda/libs.py: dtypes, NumPy's NaN and tie order);
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
import weakref

import numpy as np

from tracer.ir.node import Buffer, Node
from tracer.ir.config import CONFIG
from tracer.ir.interp import eval_node
from tracer.ir.stats import STATS
from ..base import ERROR_HOOKS, Backend, Gen
from ..compiler import import_module, write_module
from ..emit import key_hash, type_aliases
from . import libs, occupancy
from .codegen import (HEADER, NB_TYPES, WIDE, CudaEmitter, _tpb, gen_horizontal, gen_loop,
                      gen_matmul, gen_row, gen_strided_copy, index_bits)
from .reduce import gen_block, gen_thread, gen_warp
from .launch import SIM_MAX_BLOCKS, Launcher  # noqa: F401 - (SIM_MAX_BLOCKS: tests read it here)
from .index import device_gather, device_scatter, gen_index
from .segment import gen_segment
from .reduceat import device_reduceat, gen_reduceat
from .libs import tiled_matmul
from .memory import Borrowed, DevicePool, Staging, Uploads, cstrides, from_interface, interface
from .sim import shared_arrays_once, sim_ldcg, warp_shuffles
from .transpose import gen_tiled_loop, gen_transpose, tiled_transpose, tiles_last_two
from .views import Views
from .toolchain import device_api
from .vector import vector_globals

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

class CudaBackend(Launcher, Views, Backend):
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
        self._uploads = Uploads(self._api, lambda: self._event(), self.pool, self._staging)
        self._per_mode: dict[str, tuple] = {}  # mode -> (stream, device flags, their host copy)
        # per flag slot handed out since the last wait: (node, its index axes' sizes, the
        # evaluation's graph, the raw site of the user's line that evaluated it, the message)
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
            ldcg = sim_ldcg
        else:  # the intrinsic itself: cuda.ldcg's overload needs a driver to compile
            from numba.cuda.cache_hints import ldcg_intrinsic as ldcg
            from .cache import jit  # lazy: device mode only (numba-cuda caching)
            dev = self._cuda.jit(device=True, inline="always")
        return {"cuda": self._cuda, "_jit": jit, "_devjit": dev, "_ldcg": ldcg,
                **vector_globals(CONFIG.cuda_sim)}

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
        cuda/index.py, a ufunc.at segment kernel: cuda/segment.py, a reduceat kernel:
        cuda/reduceat.py, or a tiled transpose:
        cuda/transpose.py) for the current mode, generated
        once into the kernel cache's folder and imported like a fusion kernel, so the simulator
        and PTX tests see the same source. Its module is named by the hash of its text, as batch
        modules are: a file never changes under a process using it (the CUDA disk cache keys
        kernels by that text). `variant`: the suffix of another function of the module (the
        copy's and transpose's 64-bit index variant, codegen.WIDE)."""
        name = f"lib_{kind}_{arg}_{self._mode()}"
        mod = _LIB.get(name)
        if mod is None:
            src = {"copy": lambda: gen_strided_copy(arg, name), "index": lambda: gen_index(arg, name),
                   "segment": lambda: gen_segment(arg, name, _tpb()),
                   "matmul": lambda: gen_matmul(np.dtype(arg), name),
                   "transpose": lambda: gen_transpose(name, CONFIG.cuda_sim, arg),
                   "reduceat": lambda: gen_reduceat(arg, name)}[kind]()
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
        block = self._uploads.upload(a.reshape(-1).view(np.uint8), self.stream())
        STATS.h2d_copies += 1
        STATS.h2d_bytes += a.nbytes
        return block.view(a.dtype).reshape(a.shape)  # (back to the pool when its leaf dies)

    def overlapped_uploads(self):
        """`with`: uploads go on a second stream meanwhile (memory.Uploads)."""
        return self._uploads.overlapped(self.stream())

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

    def flag_slot(self, n: Node, sizes: list, message=None):
        """A zeroed 3-int64 error record for one index launch of node `n` (`sizes`: the
        lengths of its indexed axes): the kernel writes (1, bad index, index array) into it
        and the next wait raises NumPy's IndexError for the first launch that wrote one
        (`message(bad, j)`: its text, where not a gather's or scatter's)."""
        if len(self._checks) == FLAG_SLOTS:
            self.sync()
        k = len(self._checks)
        self._unguarded.append(k)
        self._checks.append((n, sizes, self.run_graph,
                             ERROR_HOOKS.user_site() if ERROR_HOOKS.user_site else None, message))
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
        for k, (n, sizes, graph, raw, message) in enumerate(checks):
            if host[3 * k]:
                flags[:used].copy_to_device(np.zeros(used, np.int64), stream=stream)
                j, bad = int(host[3 * k + 2]), int(host[3 * k + 1])
                exc = IndexError(message(bad, j) if message else
                                 f"index {bad} is out of bounds for axis {n.attr('axes')[j]} "
                                 f"with size {sizes[j]}")
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

    # ---- non-fusion nodes
    def run_node(self, n: Node, args: list, inplace: bool = False):
        """Views and library ops on the device when their dtypes have kernels; everything else
        (interpreter ops) round-trips through the host. See the module docstring."""
        # cuBLAS, sorts and scans where the library can; segmented reductions: cuda/reduceat.py
        out = device_reduceat(self, n, args) if n.op == "reduceat" else libs.run(self, n, args)
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
