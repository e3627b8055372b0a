"""Backends: how to generate, allocate, launch and run library ops. `cpu` is numba.njit; `cuda`
lives in cuda.py. Both see the same fusion bodies."""
from __future__ import annotations

import math
import os
import pickle
import re
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba.core import config as numba_config

from tracer.ir import Node
from tracer.ir.catalogue import py_slice
from tracer.ir.registry import fusion_outputs
from tracer.ir.interp import eval_node
from tracer.ir.stats import STATS
from . import cpu
from .compiler import cache_dir, purge_disk_cache, writable, write_atomic
from .emit import key_hash
from .scatter_cpu import run_scatter


@dataclass
class Gen:
    header: str
    helpers: str
    kernel: str
    consts: list[Node]
    meta: dict = field(default_factory=dict)


def const_value(c: Node):
    return c.dtype.type(c.attr("value"))


def reduce_launch_sizes(body: Node) -> tuple[tuple[int, ...], int]:
    """The reduction's input sizes and the chunk length of a full reduction."""
    red = cpu.find_reduce(body)
    m = red.inputs[0].shape
    axes = red.attr("axes")
    if len(axes) != len(m):
        return m, 1
    inner = math.prod(m[1:]) if len(m) > 1 else 1
    return m, max(1, cpu.FULL_CHUNK // max(inner, 1))


def record_launch(seconds: float, compiled: bool, disk_hit: bool = False,
                  recompile: bool = False) -> None:
    """Count a launch; a launch that compiled (or loaded from disk) counts as compile time."""
    STATS.kernels_compiled += compiled
    STATS.cache_hits_disk += disk_hit
    STATS.recompiles += recompile
    if compiled or disk_hit:
        STATS.compile_s += seconds
    else:
        STATS.run_s += seconds
    STATS.kernels_launched += 1


def fill(shape, dtype, value) -> np.ndarray:
    """An array of one value: np.zeros for +0 (pages come zeroed from the OS, touched only when
    written), else np.full."""
    if not np.asarray(value, dtype).tobytes().strip(b"\0"):
        return np.zeros(shape, dtype)  # all-zero bits only (-0.0, also in complex, is not)
    return np.full(shape, value, dtype)


# Rows of per-thread scratch: numba's get_thread_id() is below its pool size.
_THREADS = numba_config.NUMBA_NUM_THREADS

# References to an unused pool block seen from a loop over the pool: the pool's list, the loop
# variable and getrefcount's own argument.
_UNUSED = 3


class HostPool:
    """Reuse of large host buffers across evaluations. A freed large block goes back to the OS,
    and touching fresh pages costs about 0.2 s/GiB here, paid again by every evaluation of a
    program (a 4096^2 float32 softmax: 14 of its 55 ms). Blocks stay in the pool; one is handed
    out again once no array refers to it (every numpy view of a block holds a reference to it,
    so its reference count tells). Idle blocks past `IDLE_CAP` bytes are let go."""

    MIN_BYTES = 1 << 20  # smaller blocks come from malloc's free lists, already touched
    IDLE_CAP = 1 << 30

    def __init__(self):
        self.blocks: list[np.ndarray] = []

    def empty(self, shape, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < self.MIN_BYTES:
            return np.empty(shape, dtype)
        for block in self.blocks:
            if block.nbytes == nbytes and sys.getrefcount(block) <= _UNUSED:
                return block.view(dtype).reshape(shape)
        block = np.empty(nbytes, np.uint8)
        self.blocks.append(block)
        idle = [b for b in self.blocks if b is not block and sys.getrefcount(b) <= _UNUSED]
        excess = sum(b.nbytes for b in idle) - self.IDLE_CAP
        for b in idle:  # oldest first
            if excess <= 0:
                break
            excess -= b.nbytes
            self.blocks = [x for x in self.blocks if x is not b]
        del idle
        return block.view(dtype).reshape(shape)


def _hoist_scalar_params(src: str) -> str:
    """Read each 0-d param once, before any loop: Numba's parfor lowering passes a 0-d array
    into a prange body as a scalar, where `p[()]` fails to type."""
    reads = sorted(set(re.findall(r"\b(p\d+)\[\(\)\]", src)))
    if not reads:
        return src
    head, rest = src.split("\n", 1)
    hoisted = "".join(f"    {p}_v = {p}[()]\n" for p in reads)
    for p in reads:
        rest = rest.replace(f"{p}[()]", f"{p}_v")
    return head + "\n" + hoisted + rest


_SUBSCRIPT = re.compile(r"(?<![.\w])([A-Za-z_]\w*)\[")


def _unsigned_subscripts(src: str) -> str:
    """Index arrays with unsigned integers. A signed index makes Numba wrap negative values
    (`i < 0 ? i + n : i`), and in a loop that does not start at 0 LLVM cannot drop that
    select, so it vectorizes with gathers and scatters: W1' over range(lo, hi) ran 3.4x
    slower. Fused kernels never index below 0."""
    out, pos = [], 0
    for m in _SUBSCRIPT.finditer(src):
        if m.start() < pos:
            continue
        start = m.end()
        depth, k, parts, last = 0, start, [], start
        while depth >= 0:
            ch = src[k]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(src[last:k])
                last = k + 1
            k += 1
        parts.append(src[last:k - 1])
        idx = ", ".join(p.strip() if p.strip().isdigit() or p.strip() == "()"
                        else f"_ix({_unsigned_subscripts(p.strip())})" for p in parts)
        out += [src[pos:start], idx, "]"]
        pos = k
    out.append(src[pos:])
    return "".join(out)


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


class CpuBackend:
    name = "cpu"

    def __init__(self):
        self.pool = HostPool()

    def generate(self, body: Node, kind: str, name: str, flat: bool, parallel: bool) -> Gen:
        fn_src, em = cpu.generate(body, kind, name, flat)
        fn_src = _unsigned_subscripts(_hoist_scalar_params(fn_src))
        if not parallel:  # serial: no threading layer, whose symbols get_thread_id needs
            fn_src = fn_src.replace("prange(", "range(").replace("get_thread_id()", "0")
        par = "prange(" in fn_src
        deco = f"@njit(parallel={par}, error_model='numpy', cache=True)"
        helpers = em.helper_source("@njit(inline='always', error_model='numpy', cache=True)")
        return Gen(cpu.HEADER, helpers, deco + "\n" + fn_src, em.consts)

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
            buf.host = get("cuda").to_host(buf.value)
        return buf.host

    def is_contiguous(self, x) -> bool:
        return x.flags.c_contiguous

    def contiguous(self, x):
        return np.ascontiguousarray(x)

    def flatten(self, x):
        return x.reshape(-1)

    # ---- getting kernels ready (compile_pool.py)
    def signature(self, n: Node, kernel, consts: list) -> tuple:
        """The Numba argument types fusion n's kernel will be launched with (see `launch`),
        predicted from the graph: outputs are fresh C arrays, a param's layout and
        writeability are those of a stand-in built like its value (executor.stand_in),
        constants are numpy scalars, sizes are int64."""
        from numba import typeof, types
        from .executor import stand_in

        def arr(v: np.ndarray):
            if kernel.flat:  # flattened, copied first where not contiguous (_launch)
                v = v.reshape(-1) if v.flags.c_contiguous else np.zeros(1, v.dtype)
            return typeof(v)
        body = n.attr("body")
        sig = [arr(np.zeros((1,) * o.ndim, o.dtype)) for o in fusion_outputs(body)]
        sig += [arr(stand_in(i)) for i in n.inputs]
        sig += [typeof(c) for c in consts]
        if kernel.kind == "row":
            sig += [types.int64] * len(cpu.row_plan(body).shape)
        elif kernel.kind == "reduce":
            m, ch = reduce_launch_sizes(body)
            sig += [types.int64] * (len(m) + 1)
            sig += [typeof(s) for s in cpu.reduce_scratch(body, m, ch, 1)]
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

    def launch(self, kernel, body: Node, outs: list, params: list, consts: list) -> None:
        fn = kernel.fn
        before = len(fn.overloads)
        hits = sum(fn._cache_hits.values())
        t0 = time.perf_counter()
        if kernel.kind in ("loop", "horizontal"):
            args = (*outs, *params, *consts)
        elif kernel.kind == "row":
            args = (*outs, *params, *consts, *cpu.row_plan(body).shape)
        else:
            m, ch = reduce_launch_sizes(body)
            args = (*outs, *params, *consts, *m, ch, *cpu.reduce_scratch(body, m, ch, _THREADS))
        try:
            fn(*args)
        except Exception:
            # a first call loads from Numba's disk cache: a corrupt or truncated entry is
            # dropped and the kernel compiled again (a second failure is a real error)
            if len(fn.overloads) > before or not purge_disk_cache(kernel.module, kernel.name):
                raise
            fn(*args)
        new = len(fn.overloads) > before
        disk = new and sum(fn._cache_hits.values()) > hits
        record_launch(time.perf_counter() - t0, new and not disk, disk, new and not disk and before > 0)

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


_BACKENDS: dict[str, Any] = {"cpu": CpuBackend()}


def get(name: str):
    if name not in _BACKENDS and name == "cuda":
        from .cuda import CudaBackend
        _BACKENDS["cuda"] = CudaBackend()
    return _BACKENDS[name]
