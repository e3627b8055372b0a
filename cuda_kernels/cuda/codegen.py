"""CUDA kernel source: each fused group and each library kernel (strided copy, tiled matmul)
as Python source for numba.cuda; cuda/backend.py loads and launches it. See its docstring for
the kernel shapes."""
from __future__ import annotations

from collections import ChainMap

import numpy as np

from tracer.ir.node import Node, toposort
from tracer.ir.config import CONFIG
from tracer.ir.registry import OPS
from ..emit import Emitter, tname, unsigned_index
from ..helpers import HELPERS
from ..planning import (acc_dtype, combine_expr, combine_text, emit_ready, ident_literal,
                        row_index, row_plan, stores)
from .vector import gen_vector, lanes, vector_body

HEADER = """import math
import numba
import numpy as np
_ix = np.uint64
"""

NB_TYPES = {"bool": "numba.boolean", "int8": "numba.int8", "int16": "numba.int16",
            "int32": "numba.int32", "int64": "numba.int64", "uint8": "numba.uint8",
            "uint16": "numba.uint16", "uint32": "numba.uint32", "uint64": "numba.uint64",
            "float32": "numba.float32", "float64": "numba.float64"}

TILE = 16           # matmul tile edge
# The simulator runs every thread as a Python thread and polls them all at each syncthreads:
# 8 threads a block still make a three-level reduction tree, at a fraction of 32's cost.
SIM_TPB = 8


def _tpb() -> int:
    return SIM_TPB if CONFIG.cuda_sim else 256


def _unflatten(var: str, names: list[str], sizes: list[str], ind: str, cast: str = ""
               ) -> list[str]:
    """names[k] = k-th digit of var in the mixed radix `sizes` (last fastest); `cast`: the
    index type each step is cast back to (Numba widens integer arithmetic to 64 bits)."""
    if not names:
        return []
    if len(names) == 1:
        return [f"{ind}{names[0]} = {var}"]

    def c(e: str) -> str:
        return f"{cast}({e})" if cast else e
    out = [f"{ind}rem = {var}"]
    for k in range(len(names) - 1, 0, -1):
        out.append(f"{ind}{names[k]} = {c(f'rem % {sizes[k]}')}")
        out.append(f"{ind}rem = {c(f'rem // {sizes[k]}')}")
    out.append(f"{ind}{names[0]} = rem")
    return out


# ---------------------------------------------------------------------------- index math
# Loop kernels come in two variants, one function each in the module: `name` does its index
# arithmetic in uint32 and `name + WIDE` in uint64; the launch picks one from the sizes
# (index_bits). Every step is cast back to the variant's type, so LLVM narrows the 64-bit ops
# Numba types to 32-bit ones (a 32-bit divmod is a few instructions, a 64-bit one a loop).
# Unsigned, as indices are never negative: no floor-division sign fixes.
WIDE = "_w"
INDEX_TYPES = (("", "_u32"), (WIDE, "_u64"))


def index_bits(total: int) -> int:
    """32 when a launch's `total` elements (so every index, and an index plus the grid's
    stride) fit in 32 bits, else 64."""
    return 32 if total < 2 ** 31 else 64


def grid_loops(U: str, sizes: list[str], idx: list[str], body: list[str], two_d: bool
               ) -> list[str]:
    """Grid-stride loops running `body` (statements at indent 0) at every index `idx` of the
    C-ordered index space `sizes`, index arithmetic in type U. 1-D: one flat loop over the
    grid, the multi-index by divmod. 2-D (two_d, rank > 1): grid y strides over the rows (the
    outer axes, divmod per row) and grid x over the innermost axis, so consecutive threads
    touch consecutive elements and the innermost index needs no divmod."""
    r = len(sizes)
    s = [f"s{k}" for k in range(r)]
    L = [f"    {s[k]} = {U}({sizes[k]})" for k in range(r)]
    if not (two_d and r > 1):
        L += [f"    f = {U}(cuda.grid(1))", f"    step = {U}(cuda.gridsize(1))",
              f"    total = {U}({' * '.join(s)})", "    while f < total:"]
        L += _unflatten("f", idx, s, "        ", U)
        L += ["        " + b for b in body]
        L.append(f"        f = {U}(f + step)")
        return L
    L += ["    gx, gy = cuda.grid(2)", "    sx, sy = cuda.gridsize(2)",
          f"    stx = {U}(sx)", f"    sty = {U}(sy)",
          f"    nrow = {U}({' * '.join(s[:-1])})", f"    row = {U}(gy)", "    while row < nrow:"]
    L += _unflatten("row", idx[:-1], s[:-1], "        ", U)
    L += [f"        {idx[-1]} = {U}(gx)", f"        while {idx[-1]} < {s[-1]}:"]
    L += ["            " + b for b in body]
    L += [f"            {idx[-1]} = {U}({idx[-1]} + stx)", f"        row = {U}(row + sty)"]
    return L


def _variants(name: str, args: list[str], make) -> str:
    """The module text of a kernel's two index variants; make(U) gives a body's lines."""
    return "\n\n\n".join("\n".join(["@_jit", f"def {name}{suffix}({', '.join(args)}):"] +
                                    make(U)) for suffix, U in INDEX_TYPES)


# numba-cuda computes a float `%` as a - b * floor(a / b): NaN for an infinite b, inexact for
# a large a (remainder(1e308, 6) was 5e291); libdevice's fmod is exact
# a fused gather's index (emit.Emitter._gather): from the end where negative; the first thread
# with one out of bounds claims the gather's error record (the host raises NumPy's IndexError
# at its next wait, cuda/backend.py sync) and reads 0
_GIDX = """def _gidx(v, n, err, j):
    w = v + n if v < 0 else v
    if w < 0 or w >= n:
        if cuda.atomic.cas(err, 0, 0, 1) == 0:
            err[1] = v
            err[2] = j
        return _i64(0)
    return w"""
HELPER_SOURCES = ChainMap({"_absmod": "def _absmod(a, b):\n    return math.fmod(abs(a), abs(b))",
                           "_gidx": _GIDX}, HELPERS)


class CudaEmitter(Emitter):
    """The emitter of numba.cuda kernels: a 0-d array is launched as a 1-element array, so it
    is read and written at [0]; subscripts are unsigned (emit.unsigned_index), as on the CPU."""
    helper_sources = HELPER_SOURCES

    def sub(self, name: str, idx: tuple[str, ...]) -> str:
        return f"{name}[{', '.join(unsigned_index(idx)) if idx else '0'}]"


# ---------------------------------------------------------------------------- fusion kernels

def gen_loop(em: CudaEmitter, body: Node, name: str, flat: bool) -> str:
    """A grid-stride loop over the output (grid_loops: 1-D where flat or rank 1, else 2-D),
    in both index variants; a 0-d output is written by thread 0. A 1-D loop over same-shaped
    arrays also gets its vector variants (cuda/vector.py)."""
    rank = 1 if flat else em.outputs[0].ndim
    idx = [f"i{k}" for k in range(rank)]
    args = em.out_names + [em.pname(p) for p in em.params] + [em.cname(c) for c in em.consts] + \
        [f"n{k}" for k in range(max(rank, 1))]
    inner: list[str] = []
    inner += stores(em, em.outputs, tuple(idx), inner, {})
    if rank == 0:
        return _variants(name, args, lambda U: ["    if cuda.grid(1) == 0:"] +
                         ["        " + s for s in inner])
    src = _variants(name, args, lambda U: grid_loops(U, [f"n{k}" for k in range(rank)], idx,
                                                     inner, two_d=True))
    w = lanes([o.dtype for o in em.outputs] + [p.dtype for p in em.params])
    if rank == 1 and w > 1 and vector_body(body):
        src += "\n\n\n" + gen_vector(em, name, args, INDEX_TYPES, w)
    return src


def gen_horizontal(em: CudaEmitter, body: Node, name: str) -> str:
    """Independent outputs of different shapes (horizontal fusion) in one launch: a flat
    grid-stride loop per output, one after another; each output's sizes are read from its
    array. Both index variants (the launch picks by the largest output)."""
    args = em.out_names + [em.pname(p) for p in em.params] + [em.cname(c) for c in em.consts]
    parts = []
    for out, o in zip(em.out_names, em.outputs):
        idx = [f"i{k}" for k in range(o.ndim)]
        inner: list[str] = []
        inner += stores(em, [o], tuple(idx), inner, {})
        parts.append((out, o.ndim, idx, inner))

    def make(U: str) -> list[str]:
        L = []
        for out, ndim, idx, inner in parts:
            if ndim == 0:
                L += ["    if cuda.grid(1) == 0:"] + ["        " + s for s in inner]
            else:
                L += grid_loops(U, [f"{out}.shape[{k}]" for k in range(ndim)], idx, inner,
                                two_d=False)
        return L
    return _variants(name, args, make)


def _arg_pick(red: Node, va: str, ia: str, vb: str, ib: str) -> str:
    """True when candidate b beats a: NumPy's first-occurrence and first-NaN rules. An index
    below zero marks an empty candidate."""
    cmp = OPS[red.op].better
    if red.inputs[0].dtype.kind == "f":
        better = (f"(({va} != {va}) and ({vb} != {vb}) and {ib} < {ia}) or "
                  f"(({va} == {va}) and (({vb} != {vb}) or {vb} {cmp} {va} or "
                  f"({vb} == {va} and {ib} < {ia})))")
    else:
        better = f"{vb} {cmp} {va} or ({vb} == {va} and {ib} < {ia})"
    return f"{ib} >= 0 and ({ia} < 0 or {better})"


def _in_order(red: Node) -> bool:
    """A float product: NumPy multiplies in order, and where a partial overflows or underflows
    (1e30 * 1e30 * 1e-30, max * max * 0) another order gives another result (finite, inf,
    nan), besides rounding otherwise. One thread multiplies the whole reduced range in order;
    the other threads and blocks give the identity, which the trees multiply in exactly."""
    return OPS[red.op].ufunc is np.multiply and acc_dtype(red).kind == "f"


def gen_row(em: CudaEmitter, body: Node, name: str, tpb: int) -> str:
    """One block per row (grid-stride over rows): each reduction is a strided pass of the
    block's threads and a shared-memory tree whose result every thread reads; per-row values are
    computed by every thread; the final pass writes the row. A stashed value is written and read
    back by the same thread (same stride), so it needs no barrier."""
    plan = row_plan(body)
    shape, k = plan.shape, plan.nkept
    p = len(shape)
    j = [f"j{d}" for d in range(p)]
    full, kept = tuple(j), tuple(j[:k])
    sh_t = {NB_TYPES[acc_dtype(r).name] for r in plan.reds}
    sh_name = {t: f"sh{n}" for n, t in enumerate(sorted(sh_t))}
    base = em.out_names + [em.pname(q) for q in em.params] + [em.cname(c) for c in em.consts]
    L = ["@_jit", f"def {name}({', '.join(base + [f'm{d}' for d in range(p)])}):"]
    L += [f"    {v} = cuda.shared.array({tpb}, {t})" for t, v in sh_name.items()]
    L += ["    tid = cuda.threadIdx.x", f"    nrow = {' * '.join(f'm{d}' for d in range(k))}",
          f"    nred = {' * '.join(f'm{d}' for d in range(k, p))}",
          "    for o in range(cuda.blockIdx.x, nrow, cuda.gridDim.x):"]
    ind = "        "
    L += _unflatten("o", list(kept), [f"m{d}" for d in range(k)], ind)
    done: set[int] = set()

    def hoist() -> None:
        L.extend(emit_ready(em, plan, done, kept, ind))

    def strided(in_order: bool = False) -> str:
        L.append(f"{ind}for r in range(nred if tid == 0 else 0):" if in_order else
                 f"{ind}for r in range(tid, nred, {tpb}):")
        L.extend(_unflatten("r", list(j[k:]), [f"m{d}" for d in range(k, p)], ind + "    "))
        return ind + "    "

    for r, red in enumerate(plan.reds):
        hoist()
        acc_t = tname(acc_dtype(red))
        combine = combine_text(red)
        em._need(combine)
        shv = sh_name[NB_TYPES[acc_dtype(red).name]]

        def comb(a: str, b: str) -> str:
            return f"{acc_t}({combine_expr(combine, a, b)})"

        L.append(f"{ind}acc = {acc_t}({ident_literal(red)})")
        i2 = strided(_in_order(red))
        stmts: list[str] = []
        memo: dict = {}
        stashed = plan.stash is not None and id(plan.stash) not in em.override and \
            any(m is plan.stash for m in toposort([red.inputs[0]]))
        stash_at = f"{em.out_names[plan.stash_out]}[{', '.join(full)}]"
        if stashed:
            stmts.append(f"{stash_at} = {em.emit(plan.stash, full, stmts, memo)}")
        v = em.emit(red.inputs[0], full, stmts, memo)
        L.extend(i2 + st for st in stmts)
        L.append(f"{i2}acc = {comb('acc', v)}")
        if stashed:
            em.override[id(plan.stash)] = stash_at
        L += [f"{ind}{shv}[tid] = acc", f"{ind}cuda.syncthreads()", f"{ind}s = {tpb // 2}",
              f"{ind}while s > 0:", f"{ind}    if tid < s:",
              f"{ind}        {shv}[tid] = {comb(f'{shv}[tid]', f'{shv}[tid + s]')}",
              f"{ind}    cuda.syncthreads()", f"{ind}    s //= 2",
              f"{ind}r{r} = {tname(red.dtype)}({shv}[0])",
              f"{ind}cuda.syncthreads()"]  # all threads read [0] before the next pass writes
        em.override[id(red)] = f"r{r}"
        done.add(id(red))
    hoist()
    narrow = [o for o in em.outputs if o.shape != shape]
    if narrow:
        L.append(f"{ind}if tid == 0:")
        for o in narrow:
            stmts = []
            stmts += stores(em, [o], row_index(o, kept), stmts, {})
            L.extend(ind + "    " + st for st in stmts)
    wide = [o for o in em.outputs if o.shape == shape and
            not (o is plan.stash and id(o) in em.override)]  # a stashed output is stored
    if wide:
        i2 = strided()
        stmts = []
        stmts += stores(em, wide, full, stmts, {})
        L.extend(i2 + st for st in stmts)
    em.override.clear()
    return "\n".join(L)


# ---------------------------------------------------------------------------- library kernels

def gen_strided_copy(rank: int, name: str) -> str:
    """out[oo + sum(i_k * os_k)] = x[xo + sum(i_k * xs_k)] over the index space n (flat 1-D
    `out` and `x`; strides in elements, 0 for a broadcast axis, negative for a reversed one;
    offsets in int64). One kernel serves slice, transpose, broadcast_to, concatenate and
    setslice; grid_loops' 2-D form from rank 2, in both index variants."""
    r = max(rank, 1)
    n = [f"n{k}" for k in range(r)]
    os_ = [f"os{k}" for k in range(r)]
    xs = [f"xs{k}" for k in range(r)]
    i = [f"i{k}" for k in range(r)]
    oidx = " + ".join(f"_i64({a}) * {b}" for a, b in zip(i, os_))
    xidx = " + ".join(f"_i64({a}) * {b}" for a, b in zip(i, xs))
    body = [f"out[_ix(oo + {oidx})] = x[_ix(xo + {xidx})]"]
    return _variants(name, ["out", "x", "oo", "xo"] + n + os_ + xs,
                     lambda U: grid_loops(U, n, i, body, two_d=True))


def gen_matmul(dtype: np.dtype, name: str) -> str:
    """Tiled shared-memory matmul: out[z] = A[z] @ B[z] on 3-D (batch, rows, cols) arrays;
    TILE x TILE threads per block, output tiles on grid x, batch on grid z (both grid-strided).
    `ma`, `mb` are the operands' modes: bit 0 is the batch step (0: one matrix shared by the
    batch), bit 1 says the operand is stored transposed (a as [k, m], b as [n, k], the dot's
    `ta`/`tb`); a transposed operand's tile is loaded with the thread axes swapped, so it is read
    in place and the reads stay coalesced. Operands are cast to the result dtype (NumPy's loop),
    then accumulated in float64 (floats), int64/uint64 (integers, same wrap-around) or int64
    (bool: any(a and b))."""
    dtype = np.dtype(dtype)
    acc = {"f": "float64", "i": "int64", "u": "uint64", "b": "int64"}[dtype.kind]
    acc_t, out_t = tname(np.dtype(acc)), tname(dtype)
    store = "acc != 0" if dtype.kind == "b" else f"{out_t}(acc)"
    T = TILE
    return f"""@_jit
def {name}(out, a, b, ma, mb, M, N, K):
    ta = cuda.shared.array(({T}, {T}), {NB_TYPES[acc]})
    tb = cuda.shared.array(({T}, {T}), {NB_TYPES[acc]})
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    nbn = (N + {T - 1}) // {T}
    ntiles = ((M + {T - 1}) // {T}) * nbn
    for z in range(cuda.blockIdx.z, out.shape[0], cuda.gridDim.z):
        za = z * (ma & 1)
        zb = z * (mb & 1)
        for t in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
            r0 = (t // nbn) * {T}
            c0 = (t % nbn) * {T}
            row = r0 + ty
            col = c0 + tx
            acc = {acc_t}(0)
            for k0 in range(0, K, {T}):
                if ma & 2:
                    if r0 + tx < M and k0 + ty < K:
                        ta[tx, ty] = {acc_t}({out_t}(a[za, k0 + ty, r0 + tx]))
                    else:
                        ta[tx, ty] = {acc_t}(0)
                elif row < M and k0 + tx < K:
                    ta[ty, tx] = {acc_t}({out_t}(a[za, row, k0 + tx]))
                else:
                    ta[ty, tx] = {acc_t}(0)
                if mb & 2:
                    if c0 + ty < N and k0 + tx < K:
                        tb[tx, ty] = {acc_t}({out_t}(b[zb, c0 + ty, k0 + tx]))
                    else:
                        tb[tx, ty] = {acc_t}(0)
                elif col < N and k0 + ty < K:
                    tb[ty, tx] = {acc_t}({out_t}(b[zb, k0 + ty, col]))
                else:
                    tb[ty, tx] = {acc_t}(0)
                cuda.syncthreads()
                for kk in range({T}):
                    acc = {acc_t}(acc + ta[ty, kk] * tb[kk, tx])
                cuda.syncthreads()
            if row < M and col < N:
                out[z, row, col] = {store}"""
