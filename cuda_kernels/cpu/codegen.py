"""CPU codegen: a fusion body becomes a `numba.njit(parallel=True)` function with prange loops
(a serial kernel, below the size where threads pay, gets plain range loops).

Loop kernels write `out` at every index. Reduction kernels keep the kept axes outside (prange on
the first) and the reduced axes inside; float sums add in NumPy's order, in their dtype
(cpu/pairwise.py: NumPy's bits); a full reduction of anything else splits its first axis into
chunks whose partial results are combined in order, so results do not depend on the thread count.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from tracer.ir.node import Node, toposort
from tracer.ir.registry import ACC_SELECT, OPS, float_sum, fusion_outputs
from ..base import Gen
from ..emit import Emitter, tname, unsigned_index
from .helpers import HELPERS
from .pairwise import gen_pairwise_reduce, is_pairwise, run_sum, scratch_types
from ..planning import (acc_dtype, combine_expr, combine_text, emit_ready, find_reduce,
                        ident_literal, is_reduce, reach, reduce_layout, row_index, row_plan,
                        stores)

BLOCK = 1024
FULL_CHUNK = 16384  # a full reduction's chunk: fewer, longer vector loops (sum(a*a) 3.6 -> 3.1 ms)

HEADER = """import math
import numpy as np
from numba import get_thread_id, njit, prange
from tracer.cuda_kernels.cpu.vecmath import _EXP_HI, _EXP_LO, _PH0, _PH1, _PH2
from tracer.cuda_kernels.cpu.vecmath import _bits_f64, _f64_bits, _fma
_ix = np.uint64
"""


class CpuEmitter(Emitter):
    """The emitter of numba.njit kernels. Arrays are indexed with unsigned integers (`_ix`): a
    signed index makes Numba wrap negative values (`i < 0 ? i + n : i`), and in a loop that does
    not start at 0 LLVM cannot drop that select, so it vectorizes with gathers and scatters (W1'
    over range(lo, hi) ran 3.4x slower); fused kernels never index below 0. A 0-d param is read
    once, before any loop (`generate` puts the reads first): Numba's parfor lowering passes a
    0-d array into a prange body as a scalar, where `p[()]` fails to type. A serial kernel
    (`parallel` False) gets range loops and thread 0, so it needs no threading layer."""
    helper_sources = HELPERS

    def __init__(self, body: Node, parallel: bool):
        super().__init__(body)
        self.parallel = parallel
        self.used_prange = False
        self.scalar_params: set[str] = set()

    def sub(self, name: str, idx: tuple[str, ...]) -> str:
        if not idx:
            return f"{name}[()]"
        return f"{name}[{', '.join(unsigned_index(idx))}]"

    def load(self, p: Node, idx: tuple[str, ...]) -> str:
        if idx:
            return self.sub(self.pname(p), idx)
        self.scalar_params.add(self.pname(p))
        return f"{self.pname(p)}_v"

    def prange(self) -> str:
        """The loop of the kernel's parallel axis."""
        self.used_prange |= self.parallel
        return "prange" if self.parallel else "range"

    def thread_id(self) -> str:
        return "get_thread_id()" if self.parallel else "0"


def signature_args(em: Emitter) -> list[str]:
    return em.out_names + [em.pname(p) for p in em.params] + [em.cname(c) for c in em.consts]


TRIG_BLOCK = 4096


def _trig_args(body: Node) -> list[Node]:
    """Arguments of float32 sin and cos, whose branch-free helpers reduce large ones
    (|x| >= 2**16) with a Payne-Hanek step that costs as much as the rest of the function.
    Empty unless every argument has the output's shape: gen_trig_loop reads them at the
    output's index (a broadcast argument has fewer axes, or length 1)."""
    shape = fusion_outputs(body)[0].shape
    args = [n.inputs[0] for n in toposort([body]) if n.op in ("sin", "cos") and
            n.dtype == np.float32]
    return args if all(a.shape == shape for a in args) else []


def gen_trig_loop(em: CpuEmitter, name: str, args: list[Node]) -> list[str]:
    """A flat loop in blocks: a block whose sin/cos arguments are all below 2**16 (the usual
    case) runs the vectorized Cody-Waite-only helpers, any other block libm's scalar sinf and
    cosf, which keeps Payne-Hanek's code (most of the compile time) out of the kernel. The
    check only reads, so an output that shares its buffer with an input is still written
    after the block's reads."""
    L = [f"def {name}({', '.join(signature_args(em))}):", f"    n0 = {em.out_names[0]}.shape[0]",
         f"    for b in {em.prange()}((n0 + {TRIG_BLOCK - 1}) // {TRIG_BLOCK}):",
         f"        lo = b * {TRIG_BLOCK}", f"        hi = min(lo + {TRIG_BLOCK}, n0)",
         "        nbig = 0", "        for i0 in range(lo, hi):"]
    stmts: list[str] = []
    memo: dict = {}
    vals = [em.emit(a, ("i0",), stmts, memo) for a in args]
    stmts.append("nbig += " + " + ".join(f"(abs({v}) >= 65536.0)" for v in vals))
    L += ["            " + st for st in stmts]
    for cond, sin, cos in (("if nbig:", "math.sin", "math.cos"), ("else:", "_vsin32s", "_vcos32s")):
        em.calls = {"_sin_f32": sin, "_cos_f32": cos}
        body: list[str] = []
        body += stores(em, em.outputs, ("i0",), body, {})
        L += [f"        {cond}", "            for i0 in range(lo, hi):"]
        L += ["                " + st for st in body]
    em.calls = {}
    return L


def gen_loop(em: CpuEmitter, body: Node, name: str, flat: bool) -> list[str]:
    if (flat or em.outputs[0].ndim == 1) and (args := _trig_args(body)):
        return gen_trig_loop(em, name, args)
    rank = 1 if flat else em.outputs[0].ndim
    idx = tuple(f"i{k}" for k in range(rank))
    args = signature_args(em)
    lines = [f"def {name}({', '.join(args)}):"]
    for k in range(rank):
        lines.append(f"    n{k} = {em.out_names[0]}.shape[{k}]")
    inner: list[str] = []
    if rank:
        em.open_hoist(idx[:-1])  # (a gathered row's index: once per row)
    inner += stores(em, em.outputs, idx, inner, {})
    ind = "    "
    for k in range(rank):
        rng = em.prange() if k == 0 else "range"
        if k == rank - 1:
            em.close_hoist(lines, len(lines), ind)
        lines.append(f"{ind}for i{k} in {rng}(n{k}):")
        ind += "    "
    lines += [ind + s for s in inner]
    return lines


def _better(red: Node, v: str, best: str) -> str:
    cmp = OPS[red.op].better
    if red.inputs[0].dtype.kind == "f":
        return f"{best} == {best} and ({v} {cmp} {best} or {v} != {v})"
    return f"{v} {cmp} {best}"


def reduce_form(body: Node) -> str:
    """How gen_reduce loops: `pairwise` (a float sum whose runs may hold several values:
    cpu/pairwise.py), `columns` (the innermost axis kept), `rows` (other kept axes) or `full`
    (nothing kept: chunk partials combined in order)."""
    lay = reduce_layout(body)
    if not lay.is_arg and is_pairwise(lay.red, lay.axes):
        return "pairwise"
    if lay.kept and lay.kept[-1] == lay.src.ndim - 1 and not lay.is_arg:
        return "columns"
    return "rows" if lay.kept else "full"


@functools.lru_cache(maxsize=4096)
def _scratch_spec(body: Node) -> tuple[str, int, tuple[np.dtype, ...]]:
    """(form, the chunked axis of a full reduction, the scratch dtypes), once per body."""
    lay = reduce_layout(body)
    form = reduce_form(body)
    if form == "full":
        dts = (lay.src.dtype, np.dtype(np.intp)) if lay.is_arg else (_acc_dtype(lay.red),)
        return form, lay.redax[0], dts
    if form == "pairwise":
        return form, int(_pairwise_full(lay)), (lay.red.dtype,)
    return form, -1, (_acc_dtype(lay.red),) if form == "columns" else ()


def _pairwise_full(lay) -> bool:
    """A pairwise sum with nothing kept longer than 1: its top subtrees run in parallel."""
    return all(lay.src.shape[k] == 1 for k in lay.kept)


def _acc_dtype(red: Node) -> np.dtype:
    """The accumulator: a float sum's own dtype (NumPy's), else planning.acc_dtype."""
    return red.dtype if float_sum(red) else acc_dtype(red)


def reduce_scratch(body: Node, m: tuple[int, ...], ch: int, threads: int) -> list[np.ndarray]:
    """The scratch arrays a reduce kernel is launched with (its last arguments): kernels
    allocate nothing, so loading one from the disk cache needs none of Numba's array
    library (about 25 ms of imports in a fresh process). `full`: a partial per chunk (and its
    index for arg-reductions); `columns`: a per-thread row of accumulators; `pairwise`:
    per-thread stacks (pairwise.scratch_types)."""
    return [np.empty(shape, dt) for shape, dt in reduce_scratch_types(body, m, ch, threads)]


def reduce_scratch_types(body: Node, m: tuple[int, ...], ch: int, threads: int
                         ) -> list[tuple[tuple[int, ...], np.dtype]]:
    """(shape, dtype) of each of reduce_scratch's arrays."""
    form, a0, dts = _scratch_spec(body)
    if form == "columns":
        return [((threads, BLOCK), dts[0])]
    if form == "pairwise":
        return scratch_types(dts[0], threads, bool(a0))
    nch = max((m[a0] + ch - 1) // ch, 1) if form == "full" else 0
    return [((nch,), dt) for dt in dts]


def gen_reduce(em: CpuEmitter, body: Node, name: str) -> list[str]:
    red, src, axes, j, kept, redax, is_arg = reduce_layout(body)
    p = src.ndim
    acc_t = tname(_acc_dtype(red))
    combine = combine_text(red)
    em._need(combine)
    form = reduce_form(body)
    scratch = {"columns": ["sc"], "rows": [], "full": ["part", "pidx"] if is_arg else ["part"],
               "pairwise": ["sk", "sv"] + (["part"] if _scratch_spec(body)[1] else [])}
    args = signature_args(em) + [f"m{k}" for k in range(p)] + ["ch"] + scratch[form]
    L = [f"def {name}({', '.join(args)}):"]
    if form == "pairwise":
        return L + gen_pairwise_reduce(em, body, reduce_layout(body))

    def red_loops(ind: str, first: tuple[str, str] | None) -> list[str]:
        """The reduced loops with the producer and the accumulate step, at indent ind; `first`
        bounds the first reduced axis (a chunk of a full reduction)."""
        out: list[str] = []
        for pos, k in enumerate(redax):
            last = pos == len(redax) - 1
            if pos == 0 and first:
                lo, hi = first
            elif is_arg and last:
                lo, hi = "1", f"m{k}"
            else:
                lo, hi = "0", f"m{k}"
            out.append(f"{ind}for {j[k]} in range({lo}, {hi}):")
            ind += "    "
        stmts: list[str] = []
        v = em.emit(src, tuple(j), stmts, {})
        out += [ind + s for s in stmts]
        if is_arg:
            out += [f"{ind}if {_better(red, v, 'acc')}:", f"{ind}    acc = {v}",
                    f"{ind}    bi = {j[redax[-1]]}"]
        else:
            out += [ind + st for st in acc_step(red, combine, v, acc_t)]
        return out

    def init(ind: str, fixed: dict[int, str]) -> list[str]:
        if not is_arg:
            return [ind + st for st in acc_init(red, acc_t)]
        stmts: list[str] = []
        idx = tuple(fixed.get(k, "0") if k in axes else j[k] for k in range(p))
        v0 = em.emit(src, idx, stmts, {})
        return [ind + s for s in stmts] + [f"{ind}acc = {v0}", f"{ind}bi = {fixed.get(axes[0], '0')}"]

    def epilogue(ind: str, target: tuple[str, ...]) -> list[str]:
        stmts: list[str] = []
        em.override[id(red)] = "r"
        res = em.emit(body, tuple(j[k] for k in kept), stmts, {})
        em.override.clear()
        rv = "bi" if is_arg else f"{tname(red.dtype)}(acc)"
        return [f"{ind}r = {rv}"] + [ind + s for s in stmts] + [f"{ind}{em.sub('out', target)} = {res}"]

    if form == "columns":
        return L + _columns(em, body, red, src, j, kept, redax, acc_t, combine)
    if form == "rows":
        ind = "    "
        for n_, k in enumerate(kept):
            L.append(f"{ind}for {j[k]} in {em.prange() if n_ == 0 else 'range'}(m{k}):")
            ind += "    "
        L += init(ind, {})
        at = len(L)
        em.open_hoist(j[k] for k in kept)  # (a gathered row's index: once per output)
        L += red_loops(ind, None)
        em.close_hoist(L, at, ind)
        if not is_arg:
            L += [ind + st for st in acc_final(red, acc_t)]
        L += epilogue(ind, tuple(j[k] for k in kept))
        return L

    # full reduction: chunks of the first axis in parallel, partials combined in order
    a0 = redax[0]
    L.append(f"    nch = (m{a0} + ch - 1) // ch")
    part, pidx = em.sub("part", ("c",)), em.sub("pidx", ("c",))
    L.append(f"    for c in {em.prange()}(nch):")
    if is_arg:
        L += init("        ", {a0: "c * ch"})
        L += red_loops("        ", ("c * ch + 1", f"min(m{a0}, (c + 1) * ch)"))
        L.append(f"        {part} = acc")
        L.append(f"        {pidx} = bi")
        L.append("    acc = part[0]")
        L.append("    bi = pidx[0]")
        L.append("    for c in range(1, nch):")
        L.append(f"        if {_better(red, part, 'acc')}:")
        L.append(f"            acc = {part}")
        L.append(f"            bi = {pidx}")
    else:
        L += init("        ", {})
        L += red_loops("        ", ("c * ch", f"min(m{a0}, (c + 1) * ch)"))
        L += ["        " + st for st in acc_final(red, acc_t)]
        L.append(f"        {part} = acc")
        L.append(f"    acc = {acc_t}({ident_literal(red)})")
        L.append("    for c in range(nch):")
        L.append(f"        acc = {acc_t}({combine_expr(combine, 'acc', part)})")
    L += epilogue("    ", ())
    return L


def _columns(em: Emitter, body: Node, red: Node, src: Node, j, kept, redax, acc_t,
             combine) -> list[str]:
    """The innermost axis is kept: run it innermost, accumulating a chunk of columns at once,
    so rows are read contiguously (a column sum otherwise strides through memory). Chunks of
    the last axis (times the first kept axis) run in parallel. Each column adds its rows in
    order, as NumPy's loop does (a float sum in its dtype: NumPy's bits)."""
    last = kept[-1]
    jl = j[last]
    stmts: list[str] = []
    v = em.emit(src, tuple(j), stmts, {})
    ident = ident_literal(red)
    # the column accumulators: this thread's row of the scratch argument
    acc = em.sub("sc", ("tid", f"{jl} - lo"))
    # parallel over (first kept axis) x (column blocks): a few columns still spread
    L = [f"    nb = (m{last} + {BLOCK} - 1) // {BLOCK}"]
    if len(kept) > 1:
        k0 = kept[0]
        L += [f"    for t in {em.prange()}(m{k0} * nb):", f"        {j[k0]} = t // nb",
              "        b = t % nb"]
    else:
        L.append(f"    for b in {em.prange()}(nb):")
    L += [f"        lo = b * {BLOCK}", f"        hi = min(lo + {BLOCK}, m{last})",
          f"        tid = {em.thread_id()}"]
    ind = "        "
    for k in kept[1:-1]:
        L.append(f"{ind}for {j[k]} in range(m{k}):")
        ind += "    "
    L += [f"{ind}for {jl} in range(lo, hi):", f"{ind}    {acc} = {acc_t}({ident})"]
    first = redax[0]
    L.append(f"{ind}for {j[first]} in range(m{first}):")
    body_ind = ind + "    "
    for k in redax[1:]:
        L.append(f"{body_ind}for {j[k]} in range(m{k}):")
        body_ind += "    "
    L.append(f"{body_ind}for {jl} in range(lo, hi):")
    L += [body_ind + "    " + st for st in stmts]
    L.append(f"{body_ind}    {acc} = {acc_t}({combine_expr(combine, acc, v)})")
    est: list[str] = []
    em.override[id(red)] = "r"
    res = em.emit(body, tuple(j[k] for k in kept), est, {})
    em.override.clear()
    L += [f"{ind}for {jl} in range(lo, hi):", f"{ind}    r = {tname(red.dtype)}({acc})"]
    L += [ind + "    " + st for st in est]
    L.append(f"{ind}    {em.sub('out', tuple(j[k] for k in kept))} = {res}")
    return L


def _nan_flagged(red: Node) -> bool:
    """Float compare-and-select reductions (max, min) select by `better` and note NaNs in a
    flag: that loop vectorizes (about 2x on a 4096^2 row max); NumPy's NaN-propagating helper
    is a branch."""
    return OPS[red.op].accumulate == ACC_SELECT and red.inputs[0].dtype.kind == "f"


def acc_init(red: Node, acc_t: str) -> list[str]:
    return [f"acc = {acc_t}({ident_literal(red)})"] + (["nanf = False"] if _nan_flagged(red) else [])


def acc_step(red: Node, combine: str, v: str, acc_t: str) -> list[str]:
    if _nan_flagged(red):  # ties take v, as NumPy's maximum(acc, v) does
        return [f"nanf |= {v} != {v}", f"acc = acc if acc {OPS[red.op].better} {v} else {v}"]
    return [f"acc = {acc_t}({combine_expr(combine, 'acc', v)})"]


def acc_final(red: Node, acc_t: str) -> list[str]:
    return ["if nanf:", f"    acc = {acc_t}(math.nan)"] if _nan_flagged(red) else []


# ---------------------------------------------------------------- row kernels

def gen_row(em: CpuEmitter, body: Node, name: str) -> list[str]:
    """A row kernel: per row (the kept axes, in parallel), its reductions in turn, then the
    values that read them. Float sums add in NumPy's order (pairwise.run_sum)."""
    plan = row_plan(body)
    shape, k = plan.shape, plan.nkept
    p = len(shape)
    j = [f"j{d}" for d in range(p)]
    full, kept = tuple(j), tuple(j[:k])
    scratch = ["sk", "sv"] if row_scratch_types(body, 1) else []
    L = [f"def {name}({', '.join(signature_args(em) + [f'm{d}' for d in range(p)] + scratch)}):"]
    ind = "    "
    for d in range(k):
        L.append(f"{ind}for {j[d]} in {em.prange() if d == 0 else 'range'}(m{d}):")
        ind += "    "
    if scratch:
        L.append(f"{ind}tid = {em.thread_id()}")
    done: set[int] = set()

    def hoist() -> None:
        L.extend(emit_ready(em, plan, done, kept, ind))

    def inner_loops() -> str:
        i2 = ind
        for d in range(k, p):
            L.append(f"{i2}for {j[d]} in range(m{d}):")
            i2 += "    "
        return i2

    for r, red in enumerate(plan.reds):
        hoist()
        acc_t = tname(_acc_dtype(red))
        combine = combine_text(red)
        em._need(combine)
        L += [ind + st for st in acc_init(red, acc_t)]
        pw = is_pairwise(red, red.attr("axes"))
        stashed = plan.stash is not None and id(plan.stash) not in em.override and \
            any(m is plan.stash for m in reach(red.inputs[0], is_reduce))
        if stashed:  # its own loop, which vectorizes; the reduction reads the row back from cache
            stash_at = em.sub(em.out_names[plan.stash_out], full)
            stmts: list[str] = []
            sv = em.emit(plan.stash, full, stmts, {})
            i3 = inner_loops()
            L.extend(i3 + st for st in stmts + [f"{stash_at} = {sv}"])
            em.override[id(plan.stash)] = stash_at
        if pw:  # acc is +0.0: NumPy's output before it adds the row's pairwise sum
            run = list(range(k, p))
            T = " * ".join(f"m{d}" for d in run)
            L += run_sum(em, red.inputs[0], j, run, "0", T, "ps", ind, "tid")
            L.append(f"{ind}acc = {acc_t}(acc + ps)")
        else:
            i2 = inner_loops()
            stmts = []
            v = em.emit(red.inputs[0], full, stmts, {})
            L.extend(i2 + st for st in stmts)
            L += [i2 + st for st in acc_step(red, combine, v, acc_t)]
        L += [ind + st for st in acc_final(red, acc_t)]
        L.append(f"{ind}r{r} = {tname(red.dtype)}(acc)")
        em.override[id(red)] = f"r{r}"
        done.add(id(red))
    hoist()
    for o in em.outputs:
        if o.shape != shape:
            stmts: list[str] = []
            stmts += stores(em, [o], row_index(o, kept), stmts, {})
            L.extend(ind + st for st in stmts)
    wide = [o for o in em.outputs if o.shape == shape and
            not (o is plan.stash and id(o) in em.override)]  # a stashed output is stored
    if wide:
        i2 = inner_loops()
        stmts = []
        stmts += stores(em, wide, full, stmts, {})
        L.extend(i2 + st for st in stmts)
    em.override.clear()
    return L


def row_scratch_types(body: Node, threads: int) -> list[tuple[tuple[int, ...], np.dtype]]:
    """(shape, dtype) of a row kernel's scratch: the stacks of its pairwise float sums (their
    widest dtype), or none."""
    dts = [r.dtype for r in row_plan(body).reds if is_pairwise(r, r.attr("axes"))]
    return scratch_types(max(dts, key=lambda d: d.itemsize), threads, False) if dts else []


def gen_horizontal(em: CpuEmitter, body: Node, name: str) -> list[str]:
    """Independent outputs of different shapes (horizontal fusion): one loop nest per output,
    one after another in one function, so several small kernels cost one call."""
    L = [f"def {name}({', '.join(signature_args(em))}):"]
    for out, o in zip(em.out_names, em.outputs):
        idx = tuple(f"i{k}" for k in range(o.ndim))
        inner: list[str] = []
        inner += stores(em, [o], idx, inner, {})
        ind = "    "
        for k in range(o.ndim):
            L.append(f"{ind}for i{k} in {em.prange() if k == 0 else 'range'}({out}.shape[{k}]):")
            ind += "    "
        L += [ind + s for s in inner]
    return L


def reduce_launch_sizes(body: Node) -> tuple[tuple[int, ...], int]:
    """The reduction's input sizes and the chunk length of a full reduction."""
    red = find_reduce(body)
    m = red.inputs[0].shape
    axes = red.attr("axes")
    if len(axes) != len(m):
        return m, 1
    inner = math.prod(m[1:]) if len(m) > 1 else 1
    return m, max(1, FULL_CHUNK // max(inner, 1))


def generate(body: Node, kind: str, name: str, flat: bool, parallel: bool) -> Gen:
    """The module parts of one kernel. Its decorators cache to disk where `_CACHE` (bound when
    the module is imported) says the kernel cache is writable."""
    em = CpuEmitter(body, parallel)
    gen = {"reduce": gen_reduce, "row": gen_row, "horizontal": gen_horizontal}.get(kind)
    lines = gen(em, body, name) if gen else gen_loop(em, body, name, flat)
    lines[1:1] = [f"    {p}_v = {p}[()]" for p in sorted(em.scalar_params)]
    deco = f"@njit(parallel={em.used_prange}, error_model='numpy', cache=_CACHE)"
    helpers = em.helper_source("@njit(inline='always', error_model='numpy', cache=_CACHE)")
    return Gen(HEADER, helpers, "\n".join([deco] + lines), em.consts)
