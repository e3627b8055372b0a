"""Float sums on the cpu backend in NumPy's order, so that they are NumPy's to the bit.

NumPy reduces a C-ordered operand with its size-1 axes dropped; the reduced axes after the last
kept axis longer than 1 (`run_axes`) are its inner loop of T values, added by `pairwise_sum`:
below 8 values in sequence from -0.0; up to 128 (a leaf) in 8 interleaved partials combined
((0+1)+(2+3))+((4+5)+(6+7)), then the rest in sequence; longer runs split at n2 = n//2 rounded
down to a multiple of 8, the halves summed alike and added. The output starts at +0.0 and adds
each run's sum, the outer reduced indices in C order (T = 1: the operand's rows in order). All
in the sum's dtype: float32 rounds and overflows where NumPy's does.

The recursion runs on an explicit stack of frames (per-thread scratch rows). Where a run spans
several axes longer than 1, a leaf inside one stretch of the last axis reads it in place; one
that crosses stretches is staged into a buffer first, a stretch at a time, so no value needs a
division of its index (a leaf's start needs one chain). A full sum evaluates the top
subtrees of the recursion in parallel and adds them as the recursion does: exact, and the same
for any thread count. (Sums with T = 1 stay in codegen's `columns`/`rows` forms, adding in
the dtype in order.)
"""
from __future__ import annotations

import numpy as np

from tracer.ir.node import Node
from tracer.ir.registry import float_sum
from ..emit import tname
from ..planning import PAIRWISE_LEAF, run_axes

STACK = 64       # frames: a run of T values nests about log2(T / 64) deep
SUB_MIN = 1 << 14  # a full sum's parallel subtree holds at least this many values...
SUB_DEPTH = 6      # ...and there are at most 2**SUB_DEPTH of them


def is_pairwise(red: Node, axes) -> bool:
    """A float sum whose runs may hold more than one value (the pairwise forms here)."""
    shape = red.inputs[0].shape
    return float_sum(red) and any(shape[k] != 1 for k in run_axes(shape, axes))


def scratch_types(dt: np.dtype, threads: int, full: bool
                  ) -> list[tuple[tuple[int, ...], np.dtype]]:
    """(shape, dtype) of a pairwise kernel's scratch: per thread, the frames (start, length,
    phase) and the value stack with a leaf's buffer; a full sum's subtree sums."""
    out = [((threads, 3, STACK), np.dtype(np.int64)),
           ((threads, STACK + PAIRWISE_LEAF), np.dtype(dt))]
    return out + [((1 << SUB_DEPTH,), np.dtype(dt))] if full else out


def _leaf(value, lo: str, ind: str, dt: str) -> list[str]:
    """Lines setting `s` to numpy's pairwise sum of the n values at positions lo..lo+n-1
    (n <= PAIRWISE_LEAF); value(pos) gives the statements and name of the value at variable
    pos. The partials start at -0.0, which adds any value to itself: numpy starts them at the
    values."""
    z = f"{dt}(-0.0)"
    L = [f"{ind}n8 = n - n % 8", f"{ind}q0 = q1 = q2 = q3 = q4 = q5 = q6 = q7 = {z}",
         f"{ind}for i in range({lo}, {lo} + n8, 8):"]
    for k in range(8):
        st, v = value(f"pk{k}")
        L += [f"{ind}    pk{k} = i + {k}"] + [f"{ind}    {s}" for s in st] + \
            [f"{ind}    q{k} = {dt}(q{k} + {v})"]
    L += [f"{ind}s = {z} if n < 8 else {dt}({dt}({dt}(q0 + q1) + {dt}(q2 + q3)) + "
          f"{dt}({dt}(q4 + q5) + {dt}(q6 + q7)))",
          f"{ind}for pr in range({lo} + n8, {lo} + n):"]
    st, v = value("pr")
    return L + [f"{ind}    {s}" for s in st] + [f"{ind}    s = {dt}(s + {v})"]


def run_sum(em, src: Node, j: list[str], run: list[int], start: str, count: str, res: str,
            ind: str, tid: str) -> list[str]:
    """Lines setting `res` to numpy's pairwise sum of src over positions start..start+count-1
    of the run (the run's axes in C order; other axes at their loop variables j). The value
    stack `sv` may be wider than src's dtype (a row kernel's sums share it): values are read
    back in src's dtype, exactly as they were.

    One loop walks the recursion: a node longer than a leaf is pushed (its left half next);
    after a leaf, nodes whose right half is done add their two sums, and the next node is the
    right half of the innermost node whose left half is done. A run of one leaf pushes
    nothing."""
    dt = tname(src.dtype)
    shape = src.shape
    long = [k for k in run if shape[k] != 1]

    def at():  # the value at the loop variables (a row kernel's stash is read at them too)
        stmts: list[str] = []
        v = em.emit(src, tuple(j), stmts, {})
        return stmts, v

    def direct(pos: str):
        stmts, v = at()
        return [f"{j[long[-1]]} = {pos}"] + stmts, v

    def staged(pos: str):
        return [], f"{dt}(sv[{tid}, _ix({STACK} + {pos})])"

    fr = [f"sk[{tid}, {r}, top]" for r in range(3)]  # a frame: start, length, half in progress
    L = [f"{ind}{j[k]} = 0" for k in run if shape[k] == 1]
    L += [f"{ind}top = -1", f"{ind}vp = 0", f"{ind}lo = {start}", f"{ind}n = {count}",
          f"{ind}while True:", f"{ind}    if n > {PAIRWISE_LEAF}:",
          f"{ind}        top += 1", f"{ind}        {fr[0]} = lo", f"{ind}        {fr[1]} = n",
          f"{ind}        {fr[2]} = 0", f"{ind}        n2 = n // 2", f"{ind}        n = n2 - n2 % 8",
          f"{ind}        continue"]
    i2 = ind + "    "
    if len(long) == 1:
        L += _leaf(direct, "lo", i2, dt)
    else:  # a leaf within one stretch of the last axis reads it in place, others are staged
        L += _position(j, long, i2) + [f"{i2}if {j[long[-1]]} + n <= m{long[-1]}:"]
        L += [f"{i2}    js = {j[long[-1]]}"] + _leaf(direct, "js", i2 + "    ", dt)
        L += [f"{i2}else:"] + _stage(at, j, long, tid, i2 + "    ")
        L += _leaf(staged, "0", i2 + "    ", dt)
    L += [f"{i2}sv[{tid}, vp] = s", f"{i2}vp += 1",
          f"{i2}while top >= 0 and {fr[2]}:",  # right half done: add the halves
          f"{i2}    vp -= 1",
          f"{i2}    sv[{tid}, vp - 1] = {dt}({dt}(sv[{tid}, vp - 1]) + {dt}(sv[{tid}, vp]))",
          f"{i2}    top -= 1",
          f"{i2}if top < 0:", f"{i2}    break",
          f"{i2}{fr[2]} = 1",  # left half done: the right half next
          f"{i2}n2 = {fr[1]} // 2", f"{i2}n2 -= n2 % 8", f"{i2}lo = {fr[0]} + n2",
          f"{i2}n = {fr[1]} - n2",
          f"{ind}{res} = {dt}(sv[{tid}, 0])"]
    return L


def _position(j: list[str], long: list[int], ind: str) -> list[str]:
    """Lines setting the long run axes' variables to run position lo (a division chain)."""
    L = [f"{ind}rem = lo"]
    for k in reversed(long[1:]):
        L += [f"{ind}{j[k]} = rem % m{k}", f"{ind}rem //= m{k}"]
    return L + [f"{ind}{j[long[0]]} = rem"]


def _stage(at, j: list[str], long: list[int], tid: str, ind: str) -> list[str]:
    """Lines copying the leaf's n values from run position lo (the variables set by
    _position) into sv[tid, STACK:], a stretch of the last long axis at a time."""
    jl, last = j[long[-1]], long[-1]
    L = [f"{ind}js = {jl}", f"{ind}f = 0", f"{ind}while f < n:",
         f"{ind}    seg = min(n - f, m{last} - js)", f"{ind}    for {jl} in range(js, js + seg):"]
    st, v = at()
    L += [f"{ind}        {s}" for s in st]
    L += [f"{ind}        sv[{tid}, _ix({STACK} + f + {jl} - js)] = {v}",
          f"{ind}    f += seg", f"{ind}    js = 0"]
    i2 = ind + "    "  # carry into the axes before the last
    for k in reversed(long[:-1]):
        L += [f"{i2}{j[k]} += 1", f"{i2}if {j[k]} == m{k}:", f"{i2}    {j[k]} = 0"]
        i2 += "    "
    return L


def _epilogue(em, body: Node, red: Node, j, kept, ind: str) -> list[str]:
    stmts: list[str] = []
    em.override[id(red)] = "r"
    res = em.emit(body, tuple(j[k] for k in kept), stmts, {})
    em.override.clear()
    return [f"{ind}r = acc"] + [ind + s for s in stmts] + \
        [f"{ind}{em.sub('out', tuple(j[k] for k in kept))} = {res}"]


def gen_pairwise_reduce(em, body: Node, layout) -> list[str]:
    """A reduce kernel's lines (after its `def`) for a pairwise float sum: outputs in
    parallel, or a full sum's top subtrees in parallel."""
    red, src, axes, j, kept, redax, _ = layout
    dt = tname(red.dtype)
    run = run_axes(src.shape, axes)
    outer = [k for k in redax if k not in run]
    T = " * ".join(f"m{k}" for k in run)
    L = [f"    T = {T}"]
    if all(src.shape[k] == 1 for k in kept):  # nothing kept longer than 1: the full form
        L += [f"    {j[k]} = 0" for k in kept]
        L += ["    d = 0", f"    while d < {SUB_DEPTH} and (T >> (d + 1)) >= {SUB_MIN}:",
              "        d += 1",
              f"    for sb in {em.prange()}(1 << d):", f"        tid = {em.thread_id()}",
              "        lo0 = 0", "        n0 = T",
              "        for lv in range(d):",  # descend to subtree sb
              "            h = n0 // 2", "            h -= h % 8",
              "            if (sb >> (d - 1 - lv)) & 1:", "                lo0 += h",
              "                n0 -= h", "            else:", "                n0 = h"]
        L += run_sum(em, src, j, run, "lo0", "n0", "ps", "        ", "tid")
        L += ["        part[sb] = ps", "    w = 1 << d", "    while w > 1:",
              "        w //= 2", "        for i in range(w):",
              f"            part[i] = {dt}(part[2 * i] + part[2 * i + 1])",
              f"    acc = {dt}({dt}(0.0) + part[0])"]
        return L + _epilogue(em, body, red, j, kept, "    ")
    ind = "    "
    for n_, k in enumerate(sorted(kept, key=lambda k: src.shape[k] == 1)):  # prange a long one
        L.append(f"{ind}for {j[k]} in {em.prange() if n_ == 0 else 'range'}(m{k}):")
        ind += "    "
    L += [f"{ind}tid = {em.thread_id()}", f"{ind}acc = {dt}(0.0)"]
    at = len(L)
    em.open_hoist(j[k] for k in kept)  # (a gathered row's index: once per output)
    i2 = ind
    for k in outer:
        L.append(f"{i2}for {j[k]} in range(m{k}):")
        i2 += "    "
    L += run_sum(em, src, j, run, "0", "T", "ps", i2, "tid")
    L.append(f"{i2}acc = {dt}(acc + ps)")
    em.close_hoist(L, at, ind)
    return L + _epilogue(em, body, red, j, kept, ind)
