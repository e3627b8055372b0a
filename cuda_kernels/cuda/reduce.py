"""CUDA reduction kernels, chosen by shape at launch (`strategy`). Each reduce kernel is
generated in two forms:

- `<name>_t`, a thread per output: the thread walks its output's reduced elements in NumPy's
  order, so the result is NumPy's to the bit. NumPy reduces a C-ordered operand with size-1
  axes dropped: the trailing run of reduced axes (planning.run_axes) is its inner loop, which
  float sums add pairwise (numpy's `pairwise_sum`: below 8 values in sequence; up to 128 in 8
  interleaved partials, combined ((0+1)+(2+3))+((4+5)+(6+7)), then the rest in sequence); the
  runs are added to the output in order, from +0.0. Other reductions (products, max, arg-
  reductions, integers) go in sequence. A float sum is pairwise-exact for runs of up to 128
  values (one leaf of numpy's recursion); longer runs take the block form. No shared memory,
  no barrier, one launch, the epilogue fused.
- `<name>_warp`, a warp per output: the lanes stride over the reduced elements and combine by
  `shfl_down_sync` (offsets 16, 8, 4, 2, 1: a fixed tree); lane 0 applies the epilogue. For
  runs too long for one thread and too short, or too many, for blocks of partials. Warps of a
  block walk their outputs in step, so every shuffle has the whole warp (and, under the
  simulator, whose shuffle is a block barrier (cuda/sim.py), the whole block).
- `<name>`, G blocks per output: each thread strides over the reduced elements, the block
  combines its threads in a shared-memory tree; with G == 1 the block applies the epilogue and
  writes the output; with G > 1 each block writes a partial and takes a ticket (an atomic add
  on the output's counter after a fence), and the block that takes the last ticket combines
  the G partials in a fixed tree and writes the output (the "last block finishes" pass of the
  CUDA programming guide's fence example), then sets the counter back to 0 for the next launch.
  One launch; results are the same from run to run (the order is fixed by G and the block
  size, never by which block finishes first). Floats accumulate by planning.acc_dtype.
"""
from __future__ import annotations

import math

import numpy as np

from tracer.ir.node import Node
from ..emit import tname
from tracer.ir.registry import float_sum
from ..planning import (PAIRWISE_LEAF, acc_dtype, combine_expr, combine_text, ident_literal,
                        reduce_layout, run_axes)
from .codegen import NB_TYPES, _arg_pick, _in_order, _unflatten

THREAD_MAX_RED = 4096  # a thread per output walks at most this many values...
THREAD_MIN_OUT = 4096  # ...and does so past short runs only where outputs fill the device
SHORT_RED = 64         # a run this short always gets a thread per output
WARP_MAX_RED = 8192    # a warp per output up to this many values...
WARP_MIN_OUT = 32      # ...where there are this many outputs (else blocks of partials)
FORCE: str | None = None  # tests set "thread" or "block" to run one form everywhere it can


def partial_dtype(red: Node) -> np.dtype:
    """The dtype of the block form's partials: the accumulator's (bool as uint8: the cached
    load `_ldcg` has no 1-bit form)."""
    dt = acc_dtype(red)
    return np.dtype(np.uint8) if dt.kind == "b" else dt


def strategy(red: Node, shape: tuple, sim: bool) -> str:
    """"thread" (a thread per output, numpy's order), "warp" or "block" (G blocks per output)
    for a reduction of an operand of `shape`. Under the simulator, where a thread costs about as
    much as an element, the thread form takes every reduction numpy's order allows, so the
    sweeps check it everywhere; the block form takes long float-sum runs; the warp form runs
    where a test forces it (FORCE)."""
    axes = red.attr("axes")
    nred = math.prod(d for k, d in enumerate(shape) if k in axes)
    nout = math.prod(d for k, d in enumerate(shape) if k not in axes)
    # numpy's order in one thread: a float sum's inner run must fit one pairwise leaf
    in_order = not (float_sum(red) and
                    math.prod(shape[k] for k in run_axes(shape, axes)) > PAIRWISE_LEAF)
    if FORCE:
        return FORCE if FORCE != "thread" or in_order else "block"
    if in_order and (sim or nred <= SHORT_RED or
                     (nred <= THREAD_MAX_RED and nout >= THREAD_MIN_OUT)):
        return "thread"
    if not sim and nred <= WARP_MAX_RED and nout >= WARP_MIN_OUT:
        return "warp"
    return "block"


def _epilogue(em, body: Node, red: Node, j, kept, value: str, ind: str) -> list[str]:
    """Statements writing the output from the reduced value `value`."""
    stmts: list[str] = []
    em.override[id(red)] = "r"
    res = em.emit(body, tuple(j[k] for k in kept), stmts, {})
    em.override.clear()
    target = ", ".join(j[k] for k in kept) or "0"
    return [f"{ind}r = {value}"] + [ind + s for s in stmts] + [f"{ind}out[{target}] = {res}"]


def gen_thread(em, body: Node, name: str) -> str:
    """`<name>_t`: a thread per output, numpy's order (module docstring)."""
    red, src, axes, j, kept, redax, is_arg = reduce_layout(body)
    p = src.ndim
    pw = float_sum(red)
    acc = red.dtype if pw else acc_dtype(red)
    acc_t = tname(acc)
    combine = combine_text(red)
    em._need(combine)
    args = ["out"] + [em.pname(q) for q in em.params] + [em.cname(c) for c in em.consts] + \
        [f"m{k}" for k in range(p)]
    rsizes = [f"m{k}" for k in redax]
    L = ["@_jit", f"def {name}_t({', '.join(args)}):",
         f"    nout = {' * '.join(f'm{k}' for k in kept) or '1'}",
         f"    nred = {' * '.join(rsizes) or '1'}",
         "    for o in range(cuda.grid(1), nout, cuda.gridsize(1)):"]
    L += _unflatten("o", [j[k] for k in kept], [f"m{k}" for k in kept], "        ")

    def value(r: str, ind: str) -> tuple[list[str], str]:
        """Statements computing the source at flat reduced index `r`, and its name."""
        stmts: list[str] = []
        v = em.emit(src, tuple(j), stmts, {})
        return _unflatten(r, [j[k] for k in redax], rsizes, ind) + [ind + s for s in stmts], v

    def comb(a: str, b: str) -> str:
        return f"{acc_t}({combine_expr(combine, a, b)})"

    if is_arg:
        L += [f"        acc = {acc_t}(0)", "        bi = -1",
              "        for r in range(nred):"]
        st, v = value("r", "            ")
        L += st + [f"            if {_arg_pick(red, 'acc', 'bi', v, 'r')}:",
                   f"                acc = {v}", "                bi = r"]
        L += _epilogue(em, body, red, j, kept, "bi", "        ")
        return "\n".join(L)
    L.append(f"        acc = {acc_t}({ident_literal(red)})")
    if not pw:
        L.append("        for r in range(nred):")
        st, v = value("r", "            ")
        L += st + [f"            acc = {comb('acc', v)}"]
        L += _epilogue(em, body, red, j, kept, f"{tname(red.dtype)}(acc)", "        ")
        return "\n".join(L)
    # numpy's pairwise leaf over each run of T values, the runs added in order
    z = f"{acc_t}(-0.0)"
    L.append(f"        T = {' * '.join(f'm{k}' for k in run_axes(src.shape, axes)) or '1'}")
    L += ["        for lo in range(0, nred, max(T, 1)):",  # (T is 0 only where nred is)
          "            n8 = T - T % 8",
          f"            q0 = q1 = q2 = q3 = q4 = q5 = q6 = q7 = {z}",
          "            for i in range(0, n8, 8):"]
    for k in range(8):
        st, v = value(f"lo + i + {k}", "                ")
        L += st + [f"                q{k} = {acc_t}(q{k} + {v})"]
    L += ["            if T < 8:",
          f"                s = {z}",
          "            else:",
          f"                s = {acc_t}({acc_t}({acc_t}(q0 + q1) + {acc_t}(q2 + q3)) + "
          f"{acc_t}({acc_t}(q4 + q5) + {acc_t}(q6 + q7)))",
          "            for r in range(lo + n8, lo + T):"]
    st, v = value("r", "                ")
    L += st + [f"                s = {acc_t}(s + {v})",
               f"            acc = {acc_t}(acc + s)"]
    L += _epilogue(em, body, red, j, kept, "acc", "        ")
    return "\n".join(L)


def _accumulate(em, body: Node, acc_t: str, comb, start: str, step: str,
                first: str) -> list[str]:
    """A thread's pass over its share of an output's reduced elements (r from `start` by
    `step`) into `acc` (and `bi`, the best value's index, for an arg-reduction). A float
    product multiplies in order (numpy's rounding and overflow): the thread where `first`
    holds takes the whole range; the others keep the identity, which the combining tree
    multiplies in exactly."""
    red, src, axes, j, kept, redax, is_arg = reduce_layout(body)
    stmts: list[str] = []
    v = em.emit(src, tuple(j), stmts, {})
    L = [f"        acc = {acc_t}(0)", "        bi = -1"] if is_arg else \
        [f"        acc = {acc_t}({ident_literal(red)})"]  # (bi < 0: no value seen yet)
    L.append(f"        for r in range(nred if {first} else 0):" if _in_order(red) else
             f"        for r in range({start}, nred, {step}):")
    L += _unflatten("r", [j[k] for k in redax], [f"m{k}" for k in redax], "            ")
    L += ["            " + st for st in stmts]
    if is_arg:
        return L + [f"            if {_arg_pick(red, 'acc', 'bi', v, 'r')}:",
                    f"                acc = {v}", "                bi = r"]
    return L + [f"            acc = {comb('acc', v)}"]


def gen_block(em, body: Node, name: str, tpb: int) -> str:
    """`<name>`: G blocks per output, one launch (module docstring). Arguments after the
    output, params and consts: pv/pi (the partials, flat [o * G + g]), cnt (an int32 counter
    per output, 0 between launches), the operand's sizes, G."""
    red, src, axes, j, kept, redax, is_arg = reduce_layout(body)
    p = src.ndim
    acc_t = tname(acc_dtype(red))
    sh_t = NB_TYPES[acc_dtype(red).name]
    combine = combine_text(red)
    em._need(combine)
    args = ["out"] + [em.pname(q) for q in em.params] + [em.cname(c) for c in em.consts] + \
        ["pv", "pi", "cnt"] + [f"m{k}" for k in range(p)] + ["G"]

    def comb(a: str, b: str) -> str:
        return f"{acc_t}({combine_expr(combine, a, b)})"

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

    result = "shi[0]" if is_arg else f"{tname(red.dtype)}(shv[0])"
    L = ["@_jit", f"def {name}({', '.join(args)}):",
         f"    shv = cuda.shared.array({tpb}, {sh_t})"]
    if is_arg:
        L.append(f"    shi = cuda.shared.array({tpb}, numba.int64)")
    L += ["    last = cuda.shared.array(1, numba.int32)",
          "    tid = cuda.threadIdx.x",
          f"    nout = {' * '.join(f'm{k}' for k in kept) or '1'}",
          f"    nred = {' * '.join(f'm{k}' for k in redax) or '1'}",
          "    for blk in range(cuda.blockIdx.x, nout * G, cuda.gridDim.x):",
          "        o = blk // G", "        g = blk % G"]
    L += _unflatten("o", [j[k] for k in kept], [f"m{k}" for k in kept], "        ")
    L += _accumulate(em, body, acc_t, comb, f"g * {tpb} + tid", f"G * {tpb}", "g == 0 and tid == 0")
    L += ["        shv[tid] = acc"] + (["        shi[tid] = bi"] if is_arg else [])
    L += tree("        ")
    L += ["        if G == 1:", "            if tid == 0:"]
    L += _epilogue(em, body, red, j, kept, result, "                ")
    L += ["            continue",
          "        if tid == 0:", "            pv[blk] = shv[0]"]
    if is_arg:
        L.append("            pi[blk] = shi[0]")
    # the partial is visible device-wide before the ticket is taken; the last block reads
    # partials past its L1 (_ldcg), which may hold none of them
    L += ["            cuda.threadfence()",
          "            last[0] = 1 if cuda.atomic.add(cnt, o, 1) == G - 1 else 0",
          "        cuda.syncthreads()",
          "        if last[0]:"]
    if is_arg:
        L += ["            shv[tid] = _ldcg(pv, o * G)", "            shi[tid] = -1",
              f"            for h in range(tid, G, {tpb}):",
              "                hv = _ldcg(pv, o * G + h)",
              "                hi = _ldcg(pi, o * G + h)",
              f"                if {_arg_pick(red, 'shv[tid]', 'shi[tid]', 'hv', 'hi')}:",
              "                    shv[tid] = hv", "                    shi[tid] = hi"]
    else:
        L += [f"            acc = {acc_t}({ident_literal(red)})",
              f"            for h in range(tid, G, {tpb}):",
              f"                acc = {comb('acc', '_ldcg(pv, o * G + h)')}",
              "            shv[tid] = acc"]
    L += tree("            ")
    L += ["            if tid == 0:", "                cnt[o] = 0"]
    L += _epilogue(em, body, red, j, kept, result, "                ")
    # No barrier before the next output: every thread read last[0] before the tree's barriers
    # that thread 0 passes before writing it again; after a tree only thread 0 reads shv[0].
    return "\n".join(L)


def _shuffled(dt: np.dtype) -> tuple[str, str]:
    """(to, back): casts around a shuffle, which moves signed 32- and 64-bit words and floats."""
    if dt.kind == "f" or dt in (np.dtype(np.int32), np.dtype(np.int64)):
        return "", ""
    return ("_i32" if dt.itemsize <= 4 else "_i64"), tname(dt)


def gen_warp(em, body: Node, name: str, tpb: int) -> str:
    """`<name>_warp`: a warp per output (module docstring). Arguments after the output, params
    and consts: the operand's sizes."""
    red, src, axes, j, kept, redax, is_arg = reduce_layout(body)
    p = src.ndim
    W = min(32, tpb)  # (the simulator's blocks are narrower than a warp)
    acc = acc_dtype(red)
    acc_t = tname(acc)
    combine = combine_text(red)
    em._need(combine)
    to, back = _shuffled(acc)
    args = ["out"] + [em.pname(q) for q in em.params] + [em.cname(c) for c in em.consts] + \
        [f"m{k}" for k in range(p)]

    def comb(a: str, b: str) -> str:
        return f"{acc_t}({combine_expr(combine, a, b)})"

    def shfl(v: str, t: str = "") -> str:
        a, b = (to, back) if not t else t
        got = f"cuda.shfl_down_sync(0xFFFFFFFF, {a}({v}), off)" if a else \
            f"cuda.shfl_down_sync(0xFFFFFFFF, {v}, off)"
        return f"{b}({got})" if b else got

    L = ["@_jit", f"def {name}_warp({', '.join(args)}):",
         "    tid = cuda.threadIdx.x", f"    lane = tid % {W}", f"    warp = tid // {W}",
         f"    nout = {' * '.join(f'm{k}' for k in kept) or '1'}",
         f"    nred = {' * '.join(f'm{k}' for k in redax) or '1'}",
         f"    for base in range(cuda.blockIdx.x * {tpb // W}, nout, cuda.gridDim.x * {tpb // W}):",
         "        o = base + warp",
         "        live = o < nout",  # every warp shuffles, live or not (module docstring)
         "        if not live:", "            o = nout - 1"]
    L += _unflatten("o", [j[k] for k in kept], [f"m{k}" for k in kept], "        ")
    L += _accumulate(em, body, acc_t, comb, "lane", str(W), "lane == 0")
    L.append(f"        off = {W // 2}")
    L.append("        while off > 0:")
    if is_arg:
        L += [f"            hv = {shfl('acc')}",
              f"            hi = {shfl('bi', ('_i64', ''))}",
              f"            if lane + off < {W} and {_arg_pick(red, 'acc', 'bi', 'hv', 'hi')}:",
              "                acc = hv", "                bi = hi"]
    else:
        L += [f"            h = {shfl('acc')}",
              f"            if lane + off < {W}:", f"                acc = {comb('acc', 'h')}"]
    L.append("            off //= 2")
    L.append("        if live and lane == 0:")
    L += _epilogue(em, body, red, j, kept, "bi" if is_arg else f"{tname(red.dtype)}(acc)",
                   "            ")
    return "\n".join(L)
