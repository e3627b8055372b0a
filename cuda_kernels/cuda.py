"""CUDA codegen and launch (numba.cuda). The same fusion bodies as the CPU backend.

- Loop kernels: a grid-stride loop over the flat output index; the multi-index comes from divmod
  by sizes passed as arguments.
- Reductions: two launches. The first gives every output `G` blocks; each thread strides over the
  flattened reduced index, then the block combines its threads in a shared-memory tree and writes
  one partial. The second combines the `G` partials of each output in the same fixed tree order
  and applies the epilogue. No atomics, so results are the same from run to run. Float sums
  accumulate in float64.
- Under `CONFIG.cuda_sim` the same source runs on Numba's simulator, with tiny grids.
- Ops that are not fusion kernels (views, matmul, concatenate, slice writes, interpreter ops)
  round-trip through the host: correct, but a copy each way. Device versions are later work.
"""
from __future__ import annotations

import math as _math
import time

import numpy as np

from ir import Buffer, Node
from ir.config import CONFIG
from ir.interp import eval_node
from ir.registry import OPS, reduce_identity
from .backends import Gen, record_launch, reduce_launch_sizes
from .cpu import acc_dtype, find_reduce, reduce_layout
from .emit import Emitter, tname

HEADER = """import math
import numba
import numpy as np
"""

NB_TYPES = {"bool": "numba.boolean", "int8": "numba.int8", "int16": "numba.int16",
            "int32": "numba.int32", "int64": "numba.int64", "uint8": "numba.uint8",
            "uint16": "numba.uint16", "uint32": "numba.uint32", "uint64": "numba.uint64",
            "float32": "numba.float32", "float64": "numba.float64"}


def _tpb() -> int:
    return 32 if CONFIG.cuda_sim else 256


def _ident(red: Node) -> str:
    v = reduce_identity(OPS[red.op], red.inputs[0].dtype)
    if isinstance(v, float) and _math.isinf(v):
        return "math.inf" if v > 0 else "-math.inf"
    return repr(v)


def _unflatten(var: str, names: list[str], sizes: list[str], ind: str) -> list[str]:
    """names[k] = k-th digit of var in the mixed radix `sizes` (last fastest)."""
    if not names:
        return []
    if len(names) == 1:
        return [f"{ind}{names[0]} = {var}"]
    out = [f"{ind}rem = {var}"]
    for k in range(len(names) - 1, 0, -1):
        out.append(f"{ind}{names[k]} = rem % {sizes[k]}")
        out.append(f"{ind}rem = rem // {sizes[k]}")
    out.append(f"{ind}{names[0]} = rem")
    return out


def _fix_0d(src: str) -> str:
    return src.replace("[()]", "[0]")  # 0-d arrays are launched as 1-element arrays


def gen_loop(em: Emitter, body: Node, name: str, flat: bool) -> str:
    rank = 1 if flat else body.ndim
    idx = tuple(f"i{k}" for k in range(rank))
    args = ["out"] + [em.pname(p) for p in em.params] + [em.cname(c) for c in em.consts] + \
        [f"n{k}" for k in range(max(rank, 1))]
    inner: list[str] = []
    res = em.emit(body, idx, inner, {})
    L = ["@_jit", f"def {name}({', '.join(args)}):"]
    if rank == 0:
        L.append("    if cuda.grid(1) == 0:")
        L += ["        " + s for s in inner]
        L.append(f"        out[0] = {res}")
        return _fix_0d("\n".join(L))
    total = " * ".join(f"n{k}" for k in range(rank))
    L.append(f"    for flat in range(cuda.grid(1), {total}, cuda.gridsize(1)):")
    L += _unflatten("flat", list(idx), [f"n{k}" for k in range(rank)], "        ")
    L += ["        " + s for s in inner]
    L.append(f"        out[{', '.join(idx)}] = {res}")
    return _fix_0d("\n".join(L))


def _arg_pick(red: Node, va: str, ia: str, vb: str, ib: str) -> str:
    """True when candidate b beats a: NumPy's first-occurrence and first-NaN rules. An index
    below zero marks an empty candidate."""
    cmp = ">" if red.op == "argmax" else "<"
    if red.inputs[0].dtype.kind == "f":
        better = (f"(({va} != {va}) and ({vb} != {vb}) and {ib} < {ia}) or "
                  f"(({va} == {va}) and (({vb} != {vb}) or {vb} {cmp} {va} or "
                  f"({vb} == {va} and {ib} < {ia})))")
    else:
        better = f"{vb} {cmp} {va} or ({vb} == {va} and {ib} < {ia})"
    return f"{ib} >= 0 and ({ia} < 0 or {better})"


def gen_reduce(em: Emitter, body: Node, name: str, tpb: int) -> str:
    red, src, axes, j, kept, redax, is_arg = reduce_layout(body)
    p = src.ndim
    acc_t = tname(src.dtype) if is_arg else tname(acc_dtype(red))
    sh_t = NB_TYPES[src.dtype.name if is_arg else acc_dtype(red).name]
    combine = OPS[red.op].combine
    if combine:
        em._need(combine)
    base = ["out"] + [em.pname(q) for q in em.params] + [em.cname(c) for c in em.consts]
    sizes = [f"m{k}" for k in range(p)]
    nout = " * ".join(f"m{k}" for k in kept) or "1"
    nred = " * ".join(f"m{k}" for k in redax) or "1"

    def comb(a: str, b: str) -> str:
        return f"{acc_t}({combine.replace('(acc, v)', f'({a}, {b})').replace('acc', a).replace(' v)', f' {b})')})"

    def tree(ind: str) -> list[str]:
        L = [f"{ind}cuda.syncthreads()", f"{ind}s = {tpb // 2}", f"{ind}while s > 0:",
             f"{ind}    if tid < s:"]
        if is_arg:
            L += [f"{ind}        if {_arg_pick(red, 'shv[tid]', 'shi[tid]', 'shv[tid + s]', 'shi[tid + s]')}:",
                  f"{ind}            shv[tid] = shv[tid + s]",
                  f"{ind}            shi[tid] = shi[tid + s]"]
        else:
            L.append(f"{ind}        shv[tid] = {comb('shv[tid]', 'shv[tid + s]')}")
        L += [f"{ind}    cuda.syncthreads()", f"{ind}    s //= 2"]
        return L

    shared = [f"    shv = cuda.shared.array({tpb}, {sh_t})"]
    if is_arg:
        shared.append(f"    shi = cuda.shared.array({tpb}, numba.int64)")
    # pass 1: partials[o, g]
    stmts: list[str] = []
    v = em.emit(src, tuple(j), stmts, {})
    L = ["@_jit", f"def {name}({', '.join(base + ['pv', 'pi'] + sizes + ['G'])}):"]
    L += shared
    L += ["    tid = cuda.threadIdx.x", f"    nout = {nout}", f"    nred = {nred}",
          "    for blk in range(cuda.blockIdx.x, nout * G, cuda.gridDim.x):",
          "        o = blk // G", "        g = blk % G"]
    L += _unflatten("o", [j[k] for k in kept], [f"m{k}" for k in kept], "        ")
    if is_arg:
        L += [f"        acc = {acc_t}(0)", "        bi = -1"]  # empty until a value is seen
    else:
        L.append(f"        acc = {acc_t}({_ident(red)})")
    L.append(f"        for r in range(g * {tpb} + tid, nred, G * {tpb}):")
    L += _unflatten("r", [j[k] for k in redax], [f"m{k}" for k in redax], "            ")
    L += ["            " + s for s in stmts]
    if is_arg:
        L += [f"            if {_arg_pick(red, 'acc', 'bi', v, 'r')}:",
              f"                acc = {v}", "                bi = r"]
        L += ["        shv[tid] = acc", "        shi[tid] = bi"]
        L += tree("        ")
        L += ["        if tid == 0:", "            pv[o, g] = shv[0]", "            pi[o, g] = shi[0]"]
    else:
        L.append(f"            acc = {comb('acc', v)}")
        L.append("        shv[tid] = acc")
        L += tree("        ")
        L += ["        if tid == 0:", "            pv[o, g] = shv[0]"]
    L.append("        cuda.syncthreads()")

    # pass 2: combine the G partials of each output, then the epilogue
    F = ["", "", "@_jit", f"def {name}_fin({', '.join(base + ['pv', 'pi'] + sizes + ['G'])}):"]
    F += shared
    F += ["    tid = cuda.threadIdx.x", f"    nout = {nout}",
          "    for o in range(cuda.blockIdx.x, nout, cuda.gridDim.x):"]
    F += _unflatten("o", [j[k] for k in kept], [f"m{k}" for k in kept], "        ")
    if is_arg:
        F += ["        shv[tid] = pv[o, 0]", "        shi[tid] = -1"]
        F += [f"        for g in range(tid, G, {tpb}):",
              f"            if {_arg_pick(red, 'shv[tid]', 'shi[tid]', 'pv[o, g]', 'pi[o, g]')}:",
              "                shv[tid] = pv[o, g]", "                shi[tid] = pi[o, g]"]
    else:
        F += [f"        acc = {acc_t}({_ident(red)})",
              f"        for g in range(tid, G, {tpb}):",
              f"            acc = {comb('acc', 'pv[o, g]')}",
              "        shv[tid] = acc"]
    F += tree("        ")
    estmts: list[str] = []
    em.override[id(red)] = "r"
    res = em.emit(body, tuple(j[k] for k in kept), estmts, {})
    em.override.clear()
    rv = "shi[0]" if is_arg else f"{tname(red.dtype)}(shv[0])"
    F += ["        if tid == 0:", f"            r = {rv}"]
    F += ["            " + s for s in estmts]
    target = ", ".join(j[k] for k in kept) or "0"
    F += [f"            out[{target}] = {res}", "        cuda.syncthreads()"]
    return _fix_0d("\n".join(L + F))



class CudaBackend:
    name = "cuda"

    def __init__(self):
        from numba import cuda
        from numba.cuda import simulator
        self._cuda = cuda
        self._sim = simulator

    # ---- codegen and loading
    def variant(self) -> str:
        return f"|cuda-{'sim' if CONFIG.cuda_sim else 'dev'}-{_tpb()}"

    def module_globals(self) -> dict:
        if CONFIG.cuda_sim:
            jit, dev = self._sim.jit, self._sim.jit(device=True)
        else:
            jit, dev = self._cuda.jit, self._cuda.jit(device=True, inline="always")
        return {"cuda": self._cuda, "_jit": jit, "_devjit": dev}

    def generate(self, body: Node, kind: str, name: str, flat: bool, parallel: bool) -> Gen:
        em = Emitter(body, "cuda")
        if kind == "reduce":
            src = gen_reduce(em, body, name, _tpb())
        else:
            src = gen_loop(em, body, name, flat)
        return Gen(HEADER, em.helper_source("@_devjit"), src, em.consts)

    # ---- memory
    def _api(self):
        return self._sim if CONFIG.cuda_sim else self._cuda

    def empty(self, shape, dtype):
        return self._api().device_array(shape, dtype)

    def from_host(self, a: np.ndarray):
        return self._api().to_device(np.ascontiguousarray(a))

    def from_buffer(self, buf: Buffer):
        if isinstance(buf.value, np.ndarray):
            buf.host = buf.value
            buf.value = self.from_host(buf.value)
        return buf.value

    def to_host(self, x) -> np.ndarray:
        if isinstance(x, (np.ndarray, np.generic)):
            return np.asarray(x)
        return x.copy_to_host()

    def is_contiguous(self, x) -> bool:
        return x.is_c_contiguous()

    def contiguous(self, x):
        return self.from_host(self.to_host(x))

    def flatten(self, x):
        return x.reshape(x.size)

    # ---- launch
    def _grid(self, work: int) -> int:
        if CONFIG.cuda_sim:
            return 1 if work <= 64 else 2
        return max(1, min(-(-work // _tpb()), 4096))

    def launch(self, kernel, body: Node, out, params: list, consts: list) -> None:
        params = [p.reshape(1) if p.ndim == 0 else p for p in params]
        target = out.reshape(1) if out.ndim == 0 else out
        fn = kernel.fn
        t0 = time.perf_counter()
        before = len(getattr(fn, "overloads", {}) or {})
        tpb = _tpb()
        if kernel.kind == "loop":
            sizes = (1,) if out.ndim == 0 or kernel.flat else tuple(out.shape)
            total = int(np.prod(sizes))
            if total:
                fn[self._grid(total), tpb](target, *params, *consts, *sizes)
        else:
            m, _ = reduce_launch_sizes(body)
            red = find_reduce(body)
            axes = red.attr("axes")
            nout = int(np.prod([d for k, d in enumerate(m) if k not in axes]))
            nred = int(np.prod([d for k, d in enumerate(m) if k in axes]))
            if nout:
                G = 1 if (CONFIG.cuda_sim or nout > 64) else max(1, min(nred // (tpb * 8), 256))
                pv = self.empty((nout, G), red.inputs[0].dtype if red.op in ("argmax", "argmin")
                                else acc_dtype(red))
                pi = self.empty((nout, G) if red.op in ("argmax", "argmin") else (1, 1), np.int64)
                fn[self._grid(nout * G), tpb](target, *params, *consts, pv, pi, *m, G)
                fin = getattr(kernel, "fin", None) or _fin_of(kernel)
                fin[self._grid(nout), tpb](target, *params, *consts, pv, pi, *m, G)
        if not CONFIG.cuda_sim:
            self._cuda.synchronize()
        compiled = len(getattr(fn, "overloads", {}) or {}) > before
        record_launch(time.perf_counter() - t0, compiled, recompile=compiled and before > 0)

    def run_node(self, n: Node, args: list):
        host = [self.to_host(a) if not isinstance(a, (np.generic, int, float, bool, complex))
                else a for a in args]
        out = eval_node(n, host)
        return self.from_host(np.ascontiguousarray(out))


def _fin_of(kernel):
    import sys
    mod = sys.modules[f"tracer_gen.{kernel.name}"]
    kernel.fin = getattr(mod, kernel.name + "_fin")
    return kernel.fin


def _nb_array(dtype: np.dtype, ndim: int):
    import numba
    return numba.from_dtype(np.dtype(dtype))[(slice(None),) * (ndim - 1) + (slice(None, None, 1),)] \
        if ndim else numba.from_dtype(np.dtype(dtype))[::1]


def compile_ptx(fusion: Node, kernel, cc=(9, 0)) -> dict[str, str]:
    """PTX for a fusion node's CUDA kernel(s), compiled without a GPU (needs NVRTC)."""
    import sys
    import numba
    from numba import cuda
    mod = sys.modules[f"tracer_gen.{kernel.name}"]
    body = fusion.attr("body")
    em = Emitter(body, "cuda")
    rank = 1 if kernel.flat else fusion.ndim
    sig = [_nb_array(fusion.dtype, max(rank, 1))]
    sig += [_nb_array(p.dtype, max(1 if kernel.flat else p.ndim, 1)) for p in em.params]
    sig += [numba.from_dtype(c.dtype) for c in em.consts]
    names = [kernel.name]
    if kernel.kind == "loop":
        sig += [numba.int64] * max(rank, 1)
    else:
        red = find_reduce(body)
        pv_t = red.inputs[0].dtype if red.op in ("argmax", "argmin") else acc_dtype(red)
        sig += [_nb_array(pv_t, 2), _nb_array(np.int64, 2)]
        sig += [numba.int64] * (red.inputs[0].ndim + 1)
        names.append(kernel.name + "_fin")
    return {n: cuda.compile_ptx(getattr(mod, n).py_func, tuple(sig), cc=cc)[0] for n in names}
