"""The cpu backend (numba.njit): kernels from cpu/codegen.py, made ready by cpu/compile_pool.py,
launched on host arrays; views and library ops by NumPy (scatters by cpu/scatter.py)."""
from __future__ import annotations

import math
import os
import pickle
import time

import numpy as np
from numba.core import config as numba_config

from tracer.ir.node import Node
from tracer.ir.stats import STATS
from tracer.ir.interp import eval_node, run_graph
from tracer.ir.catalogue import py_slice
from tracer.ir.registry import fusion_outputs
from ..base import Backend, Gen, fill, record_launch
from ..compiler import cache_dir, purge_disk_cache, writable, write_atomic
from ..emit import gathers_of, key_hash
from ..layout import stand_in
from ..planning import row_plan
from . import codegen, compile_pool
from .codegen import reduce_launch_sizes, reduce_scratch, reduce_scratch_types, row_scratch_types
from .memory import HostPool
from .scatter import run_scatter

# Rows of per-thread scratch: numba's get_thread_id() is below its pool size.
_THREADS = numba_config.NUMBA_NUM_THREADS


def init_nrt(ctx) -> None:
    """Numba's runtime (NRT) for this process, as `rtsys.initialize` sets it up, but with its
    few functions loaded from object code an earlier process compiled (under TRACER_CACHE_DIR,
    keyed by the Numba version and the host CPU) where Numba compiles them anew in every
    process: about 20 ms of a warm start."""
    from llvmlite import binding as ll
    from numba import __version__
    from numba.core import config
    from numba.core.runtime import _nrt_python, nrtdynmod, rtsys
    if rtsys._init:
        return
    if config.NRT_STATS:
        _nrt_python.memsys_enable_stats()
    for py_name, address in _nrt_python.c_helpers.items():
        ll.add_symbol(py_name if py_name.startswith("_") else "NRT_" + py_name, address)
    tag = key_hash(f"{__version__} {ll.get_host_cpu_name()} {ll.get_host_cpu_features().flatten()}")
    path = os.path.join(cache_dir(), f"nrt-{tag}.pkl")
    try:
        with open(path, "rb") as f:
            library = ctx.codegen().unserialize_library(pickle.load(f))
    except Exception:  # no entry yet, or an unreadable one: compile it and write it
        ir_mod, library = nrtdynmod.create_nrt_module(ctx)
        library.enable_object_caching()
        library.add_ir_module(ir_mod)
        library.finalize()
        if writable():
            write_atomic(path, pickle.dumps(library.serialize_using_object_code()))
    rtsys._library = library
    rtsys._init = True


class CpuBackend(Backend):
    name = "cpu"
    reads_host_arrays = True

    def __init__(self):
        self.pool = HostPool()
        # id(body) -> (body, sizes, scratch types): what `launch` passes after the constants
        self._launch_args: dict[int, tuple] = {}

    def generate(self, body: Node, kind: str, name: str, flat: bool, parallel: bool) -> Gen:
        return codegen.generate(body, kind, name, flat, parallel)

    def module_globals(self) -> dict:
        return {"_CACHE": writable()}  # Numba's disk cache, beside the generated module

    def empty(self, shape, dtype):
        return self.pool.empty(shape, dtype)

    def from_host(self, a: np.ndarray):
        return a

    def to_host(self, x) -> np.ndarray:
        return x

    def from_buffer(self, buf):
        """A leaf's host value; a value the cuda backend left on the device is copied back once."""
        if isinstance(buf.value, np.ndarray):
            return buf.value
        if buf.host is None:
            v = buf.value
            buf.host = np.asarray(v) if isinstance(v, np.generic) else v.copy_to_host()
        return buf.host

    def is_contiguous(self, x) -> bool:
        return x.flags.c_contiguous

    def contiguous(self, x):
        return np.ascontiguousarray(x)

    def flatten(self, x):
        return x.reshape(-1)

    # ---- getting kernels ready (cpu/compile_pool.py)
    def prepare(self, fusions: list[tuple[Node, object, list, object]]) -> None:
        compile_pool.prepare(self, [(k, self.signature(n, k, consts, out))
                                    for n, k, consts, out in fusions])

    def ready(self, kernel) -> bool:
        return kernel.pending is None or compile_pool.ready(self, kernel)

    def start_deferred(self) -> None:
        if compile_pool._DEFERRED:
            compile_pool.start_deferred()

    def signature(self, n: Node, kernel, consts: list, out: np.ndarray | None = None) -> tuple:
        """The Numba argument types fusion n's kernel will be launched with (see `launch`),
        predicted from the graph: outputs are fresh C arrays (or `out`'s layout: the slice it
        writes into, in_place.into_stand_in), a param's layout and writeability are those of
        a stand-in built like its value (layout.stand_in), fused gathers' error records int64
        arrays, constants are numpy scalars, sizes are int64."""
        from numba import typeof, types

        def arr(v: np.ndarray):
            if kernel.flat:  # flattened, copied first where not contiguous (_launch)
                v = v.reshape(-1) if v.flags.c_contiguous else np.zeros(1, v.dtype)
            return typeof(v)
        body = n.attr("body")
        sig = [arr(np.zeros((1,) * o.ndim, o.dtype)) for o in fusion_outputs(body)] \
            if out is None else [typeof(out)]
        sig += [arr(stand_in(i)) for i in n.inputs]
        sig += [typeof(np.zeros(3, np.int64))] * len(gathers_of(body))  # their error records
        sig += [typeof(c) for c in consts]
        if kernel.kind == "row":
            sig += [types.int64] * len(row_plan(body).shape)
            sig += [typeof(np.empty(s, dt)) for s, dt in row_scratch_types(body, 1)]
        elif kernel.kind == "reduce":
            m, ch = reduce_launch_sizes(body)
            sig += [types.int64] * (len(m) + 1)
            sig += [typeof(s) for s in reduce_scratch(body, m, ch, 1)]
        return tuple(sig)

    def has(self, kernel, sig: tuple) -> bool:
        return sig in kernel.fn.overloads

    def load(self, kernel, sig: tuple) -> bool:
        """Load kernel's code for `sig` from Numba's disk cache, if it is there. This is what
        the dispatcher's own cache lookup does, less its first step: re-registering Numba's
        whole library of implementations in every new process (`refresh`), about 250 ms that a
        cached kernel does not need. (It uses Numba internals; any surprise falls back to the
        dispatcher, which loads or compiles as usual.)"""
        from numba.core.compiler_lock import global_compiler_lock
        disp = kernel.fn
        try:
            with global_compiler_lock:
                if sig in disp.overloads:
                    return True
                if not os.path.exists(disp._cache._cache_file._index_path):
                    return False  # never compiled: not worth setting up the runtime for
                init_nrt(disp.targetctx)
                cres = disp._cache._load_overload(sig, disp.targetctx)
                if cres is None:
                    return False
                disp._cache_hits[sig] += 1
                disp.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
                disp.add_overload(cres)
                return True
        except Exception:  # a corrupt entry, or Numba internals that moved: the launch decides
            return False

    def _extra_args(self, kind: str, body: Node) -> tuple[tuple, list]:
        """(sizes, scratch (shape, dtype)s) a kernel of this kind and body is launched with
        after its constants; worked out once per body (they hold the body: a bounded table)."""
        got = self._launch_args.get(id(body))
        if got is not None and got[0] is body:
            return got[1], got[2]
        if kind in ("loop", "horizontal"):
            sizes, scratch = (), []
        elif kind == "row":
            sizes, scratch = tuple(row_plan(body).shape), row_scratch_types(body, _THREADS)
        else:
            m, ch = reduce_launch_sizes(body)
            sizes, scratch = (*m, ch), reduce_scratch_types(body, m, ch, _THREADS)
        if len(self._launch_args) >= 4096:
            self._launch_args.clear()
        self._launch_args[id(body)] = (body, sizes, scratch)
        return sizes, scratch

    def launch(self, kernel, body: Node, outs: list, params: list, consts: list) -> None:
        fn = kernel.fn
        before = len(fn.overloads)
        hits = sum(fn._cache_hits.values())
        sizes, scratch = self._extra_args(kernel.kind, body)
        if scratch:
            sizes = (*sizes, *[np.empty(s, dt) for s, dt in scratch])
        records = [np.zeros(3, np.int64) for _ in gathers_of(body)]  # fused gathers' errors
        args = (*outs, *params, *records, *consts, *sizes)
        t0 = time.perf_counter()
        try:
            fn(*args)
        except Exception:
            # a first call loads from Numba's disk cache: a corrupt or truncated entry is
            # dropped and the kernel compiled again (a second failure is a real error)
            if len(fn.overloads) > before or not purge_disk_cache(kernel.module, kernel.name):
                raise
            fn(*args)
        seconds = time.perf_counter() - t0
        if any(r[0] for r in records):
            _gather_error(body, params, records)
        if len(fn.overloads) == before:
            STATS.run_s += seconds
            STATS.kernels_launched += 1
            return
        disk = sum(fn._cache_hits.values()) > hits
        record_launch(seconds, not disk, disk, not disk and before > 0)

    def launcher(self, kernel, body: Node, consts: list, out_type: tuple):
        """launch() for one program step, its constant parts worked out once: the output
        allocated (by NumPy below the pool's size), the arguments after the constants, the
        accounting of a launch that compiled or loaded the kernel (record_launch)."""
        if gathers_of(body):  # (launch() checks their error records)
            return None
        fn = kernel.fn
        shape, dtype = out_type
        sizes, scratch = self._extra_args(kernel.kind, body)
        tail = (*consts, *sizes)
        empty = np.empty if math.prod(shape) * dtype.itemsize < HostPool.MIN_BYTES else \
            self.pool.empty
        overloads, hits = fn.overloads, fn._cache_hits
        perf_counter = time.perf_counter
        seen = [-1, 0]  # overloads, cache hits when last counted (hits grow only with overloads)

        one = scratch[0] if len(scratch) == 1 else None

        def run(params: list):
            out = empty(shape, dtype)
            if not scratch:
                args = (out, *params, *tail)
            elif one is not None:
                args = (out, *params, *tail, np.empty(*one))
            else:
                args = (out, *params, *tail, *[np.empty(s, dt) for s, dt in scratch])
            before = len(overloads)
            if before != seen[0]:
                seen[0], seen[1] = before, sum(hits.values())
            t0 = perf_counter()
            try:
                fn(*args)
            except Exception:  # as launch(): a damaged disk cache entry is dropped, once
                if len(overloads) > before or not purge_disk_cache(kernel.module, kernel.name):
                    raise
                fn(*args)
            seconds = perf_counter() - t0
            now = len(overloads)
            if now == before:
                STATS.run_s += seconds
                STATS.kernels_launched += 1
                return out
            total = sum(hits.values())
            disk = total > seen[1]
            seen[0], seen[1] = now, total
            record_launch(seconds, not disk, disk, not disk and before > 0)
            return out
        return run

    def run_node(self, n: Node, args: list, inplace: bool = False):
        """Views, library ops (matmul, concatenate, setslice, gather, scatter) and interpreter
        fallbacks. A matmul writes into a pooled buffer (BLAS through np.matmul's `out`); an
        update writes into its operand when the plan says `inplace`, else into a copy."""
        if n.op == "matmul" and n.ndim >= 2 and n.nbytes >= HostPool.MIN_BYTES:
            a, b = args
            a = np.swapaxes(a, -1, -2) if n.attr("ta") else a
            b = np.swapaxes(b, -1, -2) if n.attr("tb") else b
            return np.matmul(a, b, out=self.pool.empty(n.shape, n.dtype))
        if n.op == "scatter":
            return run_scatter(n, args, self._update_target(args[0], inplace))
        if n.op == "setslice":
            out = self._update_target(args[0], inplace)(args[0].shape, args[0].dtype)
            out[tuple(py_slice(*s) for s in n.attr("slices"))] = args[1]
            return out
        return eval_node(n, args)

    def _update_target(self, x: np.ndarray, inplace: bool):
        """allocate(shape, dtype) for an update's result holding x's values: x itself in
        place; a fill for a broadcast constant (zero pages untouched until written, as the
        first write into `np.zeros(...)` has); else a pooled copy."""
        def allocate(shape, dtype):
            if inplace and x.flags.writeable:
                return x
            if x.size and not any(x.strides):
                return fill(shape, dtype, x.flat[0])
            out = self.pool.empty(shape, dtype)
            np.copyto(out, x)
            return out
        return allocate


def _gather_error(body: Node, params: list, records: list) -> None:
    """A fused gather flagged an index out of bounds: NumPy runs the body and raises its
    IndexError (the first bad index in NumPy's order, which the kernel's threads may not
    have found first)."""
    run_graph([body], params=params)
    g, r = next((g, r) for g, r in zip(gathers_of(body), records) if r[0])
    ax = g.attr("axes")[int(r[2])]
    raise IndexError(f"index {int(r[1])} is out of bounds for axis {ax} with size "
                     f"{g.inputs[0].shape[ax]}")
