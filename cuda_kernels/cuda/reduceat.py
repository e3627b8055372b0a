"""`ufunc.reduceat` (the library op `reduceat`) on the cuda backend: one kernel, a thread per
(segment, outer position), that walks its segment in NumPy's order, so results are NumPy's to
the bit. Where a few long segments would leave the device idle (`split_depth`), the split form
cuts each segment's rest into 2**D pieces as numpy's pairwise recursion cuts it (a piece is a
subtree; one that is a leaf above depth D is its subtree's first piece, the others empty), a
thread sums each piece, and a second kernel combines them as the recursion does: float sums
keep NumPy's bits; integer, logical and max/min reductions do not depend on the order (float
products do, and keep the thread form).

NumPy's reduceat (ufunc_object.c, PyUFunc_Reduceat) copies a segment's first element into the
output, then runs the ufunc's loop in reduce mode over the rest of the segment; the thread does
the same: a float add sums the rest as numpy's `pairwise_sum` does (below 8 values in sequence
from -0.0; up to 128 in 8 interleaved partials; longer runs split at n2 = n//2 rounded down to
a multiple of 8, walked with a stack in local memory) and adds that to the first element; other
ufuncs combine in sequence. Values are cast to the loop's dtype and combined by the ufunc's own
kernel template (the emitter's, so integer wrap-around and float-to-int casts are NumPy's).

The array is read as (P, N, Q): the axes before the reduced one, the reduced axis, the axes
after; the output is (P, K, Q) for K indices. The same kernel's first block checks every index
and writes the first out of [0, N) into the launch's error record (the backend's flag slot; the
next host wait raises NumPy's IndexError for it); segments starting at a bad index are left
unwritten, as the run fails.

Runs on the host instead (returns None): dtypes without device kernels (complex, float16, ...),
ufuncs without a template for the loop's dtype, and ufuncs outside `IN_ORDER`. NumPy's reduce
loop is an in-order reduction only where a ufunc's loop handles reduce mode: power and arctan2
read the segment's first element once (power.reduceat([2, 3, 2], [0]) is 2 ** 2); fmax and fmin
on floats pick between -0.0 and 0.0 differently from their elementwise loop; float32 logaddexp's
loop rounds differently from the template in the last place.

Known difference: NumPy's float maximum and minimum reduce contiguous runs with SIMD
accumulators (their width is the CPU's), so where a segment's extreme is a zero of both signs,
NumPy's sign depends on the CPU; the kernel keeps the sequential loop's (the split form: its
tree's). Which NaN a segment
holding NaNs gives (sign, payload) is the compiler's and the device's, as for every float op.
"""
from __future__ import annotations

import math

import numpy as np

from tracer.ir.config import CONFIG
from tracer.ir.node import Node, make
from tracer.ir.registry import OPS, Kind
from ..emit import tname
from ..planning import PAIRWISE_LEAF
from .codegen import NB_TYPES, CudaEmitter, _tpb

STACK = 64  # pairwise frames: a run of n values nests about log2(n / 64) deep
FILL_THREADS = 1 << 17  # the split form cuts segments until this many threads work...
PIECE_MIN = 2048        # ...while a piece keeps at least this many values...
MAX_DEPTH = 10          # ...in at most 2**MAX_DEPTH pieces
FORCE_DEPTH: int | None = None  # tests set a depth to run the split form under the simulator
# ufuncs whose NumPy reduce loop combines in order (tests/differential/test_reduceat.py)
IN_ORDER = ("add", "multiply", "maximum", "minimum", "logical_and", "logical_or", "bitwise_and",
            "bitwise_or", "bitwise_xor", "fmax", "fmin")
_SIGNED_ZERO_REDUCE = ("fmax", "fmin")


def supported(ufunc: str, in_dt: np.dtype, loop: np.dtype) -> bool:
    """Whether the device kernel computes this reduceat (module docstring)."""
    d = OPS.get(ufunc)
    if ufunc not in IN_ORDER or d is None or d.kind is not Kind.ELEMENTWISE:
        return False
    if in_dt.name not in NB_TYPES or loop.name not in NB_TYPES:
        return False
    if ufunc in _SIGNED_ZERO_REDUCE and loop.kind == "f":
        return False
    return d.template((loop, loop), loop) is not None and \
        (in_dt == loop or OPS["cast"].template((in_dt,), loop) is not None)


def _scalar_body(ufunc: str, in_dt: np.dtype, loop: np.dtype) -> tuple[Node, Node, Node, Node]:
    """(x, acc, cast, combine): params standing for an element and the accumulator, the
    element in the loop's dtype, and one combine step, as a body the emitter writes."""
    x = make("param", (), (), in_dt, (("index", 0),))
    acc = make("param", (), (), loop, (("index", 1),))
    v = x if in_dt == loop else make("cast", (x,), (), loop, (("dtype", loop.str),))
    return x, acc, v, make(ufunc, (acc, v), (), loop)


def gen_reduceat(arg: str, name: str) -> str:
    """The kernels for `arg` = "<ufunc>__<input dtype>__<loop dtype>" (module docstring):
    `name` (out, x, idx, err, P, N, Q, K), the thread form; `name_part` (pv, pc, x, idx, err,
    P, N, Q, K, D) and `name_comb` (out, pv, pc, x, idx, P, N, Q, K, D), the split form."""
    ufunc, in_name, loop_name = arg.split("__")
    in_dt, loop = np.dtype(in_name), np.dtype(loop_name)
    x, acc, v, comb = _scalar_body(ufunc, in_dt, loop)
    em = CudaEmitter(comb)
    em.override[id(x)] = "xv"
    t = tname(loop)
    pairwise = ufunc == "add" and loop.kind == "f"

    def value(pos: str, ind: str) -> tuple[list[str], str]:
        """Statements loading the element at segment position `pos`, and its name."""
        st: list[str] = []
        r = em.emit(v, (), st, {})
        return [f"{ind}xv = x[base + ({pos}) * Q]"] + [ind + s for s in st], r

    def combine(a: str, b: str, ind: str) -> list[str]:
        """Statements setting `a` to the ufunc of a and b (b already in the loop's dtype)."""
        em.override[id(acc)], em.override[id(v)] = a, b
        st: list[str] = []
        r = em.emit(comb, (), st, {})
        del em.override[id(acc)]
        em.override.pop(id(v))
        em.override[id(x)] = "xv"
        return [ind + s for s in st] + [f"{ind}{a} = {t}({r})"]

    def run(lo: str, n: str, res: str, ind: str) -> list[str]:
        """Lines setting `res` to the reduction of the n >= 1 positions from lo: numpy's
        pairwise sum, else the ufunc in sequence."""
        if pairwise:
            return _pairwise(value, t, lo, n, res, ind)
        st, first = value(lo, ind)
        L = st + [f"{ind}{res} = {t}({first})", f"{ind}for i in range({lo} + 1, {lo} + {n}):"]
        st, xi = value("i", ind + "    ")
        return L + st + combine(res, xi, ind + "    ")

    stack = [f"    slo = cuda.local.array({STACK}, numba.int64)",
             f"    sn = cuda.local.array({STACK}, numba.int64)",
             f"    sph = cuda.local.array({STACK}, numba.int8)",
             f"    sv = cuda.local.array({STACK}, {NB_TYPES[loop.name]})"] if pairwise else []
    # block 0 finds the first index out of [0, N), as NumPy names it, and records it
    check = ["    first = cuda.shared.array(1, numba.int64)",
             "    if cuda.blockIdx.x == 0:",
             "        if cuda.threadIdx.x == 0:", "            first[0] = K",
             "        cuda.syncthreads()",
             "        for k in range(cuda.threadIdx.x, K, cuda.blockDim.x):",
             "            w = idx[k]",
             "            if w < 0 or w >= N:",
             "                cuda.atomic.min(first, 0, k)", "                break",
             "        cuda.syncthreads()",
             "        if cuda.threadIdx.x == 0 and first[0] < K:",
             "            err[0] = 1", "            err[1] = idx[first[0]]",
             "            err[2] = 0",
             "    g = cuda.grid(1)", "    gs = cuda.gridsize(1)"]
    st, first = value("s", "        ")
    start = st + [f"        a = {t}({first})"]

    # the thread form: a thread per (segment, outer position)
    L = ["@_jit", f"def {name}(out, x, idx, err, P, N, Q, K):"] + check + stack
    L += ["    for o in range(g, P * K * Q, gs):"] + _segment("        ") + start
    if pairwise:
        L += ["        if e - s > 1:"] + run("s + 1", "e - s - 1", "tot", "            ") + \
            [f"            a = {t}(a + tot)"]
    else:
        st, xi = value("i", "            ")
        L += ["        for i in range(s + 1, e):"] + st + combine("a", xi, "            ")
    L.append("        out[o] = a")

    # the split form's first kernel: a thread per piece of a segment's rest, 2**D of them,
    # cut as numpy's pairwise recursion cuts (a piece that is a leaf before depth D is the
    # first of its subtree's pieces, the others are empty: pc 0)
    L += ["", "", "@_jit", f"def {name}_part(pv, pc, x, idx, err, P, N, Q, K, D):"] + check + stack
    L += ["    G = 1 << D", "    for u in range(g, P * K * Q * G, gs):",
          "        o = u >> D", "        j = u & (G - 1)"] + _segment("        ")
    L += ["        lo = s + 1", "        n = e - s - 1", "        lev = D",
          "        while lev > 0 and n > 0:",
          "            lev -= 1", "            bit = (j >> lev) & 1",
          f"            if n > {PAIRWISE_LEAF}:",
          "                h = n // 2", "                h -= h % 8",
          "                if bit:", "                    lo += h", "                    n -= h",
          "                else:", "                    n = h",
          "            elif bit:", "                n = 0",
          "        pc[u] = max(n, 0)",
          "        if n > 0:"] + run("lo", "n", "tot", "            ") + ["            pv[u] = tot"]

    # its second kernel: a thread per (segment, outer position) combines the pieces as the
    # recursion does (left then right, level by level), then the first element with them
    L += ["", "", "@_jit", f"def {name}_comb(out, pv, pc, x, idx, P, N, Q, K, D):",
          "    G = 1 << D",
          "    for o in range(cuda.grid(1), P * K * Q, cuda.gridsize(1)):"] + _segment("        ")
    L += start + ["        if e - s > 1:", "            b0 = o * G", "            step = 1",
                  "            while step < G:",
                  "                for jl in range(b0, b0 + G, 2 * step):",
                  "                    if pc[jl + step] > 0:",
                  "                        l = pv[jl]", "                        r = pv[jl + step]"]
    L += ([f"                        l = {t}(l + r)"] if pairwise else
          combine("l", "r", "                        "))
    L += ["                        pv[jl] = l", "                step *= 2",
          "            tot = pv[b0]"]
    L += [f"            a = {t}(a + tot)"] if pairwise else combine("a", "tot", "            ")
    L.append("        out[o] = a")
    helpers = em.helper_source("@_devjit")
    return (helpers + "\n\n\n" if helpers.strip() else "") + "\n".join(L)


def _segment(ind: str) -> list[str]:
    """Lines finding output o's segment [s, e) and base offset; a bad start skips it."""
    return [f"{ind}q = o % Q", f"{ind}r = o // Q", f"{ind}k = r % K", f"{ind}p = r // K",
            f"{ind}s = idx[k]", f"{ind}if s < 0 or s >= N:", f"{ind}    continue",
            f"{ind}e = idx[k + 1] if k + 1 < K else N", f"{ind}if e > N:", f"{ind}    e = N",
            f"{ind}base = p * N * Q + q"]


def _pairwise(value, t: str, lo0: str, n0: str, res: str, ind0: str) -> list[str]:
    """Lines setting `res` to numpy's pairwise_sum of the n0 >= 1 positions from lo0 (module
    docstring). A frame is a run (start, length) and its phase: 0 while its left half runs, 1
    while its right half does (its left half's sum in sv)."""
    body = ["sp = 0", f"slo[0] = {lo0}", f"sn[0] = {n0}", "sph[0] = 0",
            "while sp >= 0:",
            "    m = sn[sp]",
            f"    if m > {PAIRWISE_LEAF}:",  # split, the left half first
            "        h = m // 2", "        h -= h % 8",
            "        slo[sp + 1] = slo[sp]", "        sn[sp + 1] = h",
            "        sph[sp + 1] = 0", "        sp += 1",
            "        continue",
            "    lo = slo[sp]",
            "    n8 = m - m % 8",
            "    if m < 8:",
            f"        v = {t}(-0.0)",
            "        for i in range(lo, lo + m):"]
    L = [ind0 + b for b in body]
    ind = ind0 + "    "
    st, xi = value("i", ind + "        ")
    L += st + [f"{ind}        v = {t}(v + {xi})", f"{ind}else:"]
    for j in range(8):
        st, xi = value(f"lo + {j}", ind + "    ")
        L += st + [f"{ind}    q{j} = {xi}"]
    L.append(f"{ind}    for i in range(lo + 8, lo + n8, 8):")
    for j in range(8):
        st, xi = value(f"i + {j}", ind + "        ")
        L += st + [f"{ind}        q{j} = {t}(q{j} + {xi})"]
    L += [f"{ind}    v = {t}({t}({t}(q0 + q1) + {t}(q2 + q3)) + {t}({t}(q4 + q5) + {t}(q6 + q7)))",
          f"{ind}    for i in range(lo + n8, lo + m):"]
    st, xi = value("i", ind + "        ")
    L += st + [f"{ind}        v = {t}(v + {xi})"]
    tail = ["    sp -= 1",
            "    while sp >= 0 and sph[sp] == 1:",  # right halves done: add up
            f"        v = {t}(sv[sp] + v)", "        sp -= 1",
            "    if sp < 0:",
            f"        {res} = v",
            "    else:",  # a left half done: its right half next
            "        sv[sp] = v", "        sph[sp] = 1",
            "        h = sn[sp] // 2", "        h -= h % 8",
            "        slo[sp + 1] = slo[sp] + h", "        sn[sp + 1] = sn[sp] - h",
            "        sph[sp + 1] = 0", "        sp += 1"]
    return L + [ind0 + b for b in tail]


def split_depth(ufunc: str, loop: np.dtype, work: int, n: int, k: int, sim: bool) -> int:
    """D, where the split form cuts each segment into 2**D pieces: where there are too few
    (segment, outer position) pairs to fill the device and their segments are long, for float
    sums (the pieces are numpy's pairwise subtrees) and reductions whose order does not change
    their value; 0 (the thread form) elsewhere, and under the simulator unless a test forces it."""
    if not (ufunc == "add" or loop.kind != "f" or ufunc in ("maximum", "minimum")):
        return 0  # (a float product rounds in sequence)
    if FORCE_DEPTH is not None:
        return FORCE_DEPTH
    if sim:
        return 0
    mean, d = n // max(k, 1), 0
    while d < MAX_DEPTH and work << d < FILL_THREADS and mean >> (d + 1) >= PIECE_MIN:
        d += 1
    return d


def device_reduceat(be, n: Node, args: list):
    """n's value on the device (one launch; two in the split form), or None where it runs
    through the host."""
    ufunc, ax, loop = n.attr("ufunc"), n.attr("axis"), np.dtype(n.attr("dtype"))
    a, idx = args
    in_dt = n.inputs[0].dtype
    if not supported(ufunc, in_dt, loop):
        return None
    x, idx = be.contiguous(be._dev(a)), be.contiguous(be._dev(idx))
    shape = tuple(n.inputs[0].shape)
    P, N, Q = math.prod(shape[:ax]), shape[ax], math.prod(shape[ax + 1:])
    K = n.shape[ax]
    out = be.empty(n.shape, n.dtype)
    work = P * K * Q
    if max(work, K) == 0:
        return out
    arg = f"{ufunc}__{in_dt.name}__{loop.name}"
    err = be.flag_slot(n, [N], _message(ufunc, N))
    d = split_depth(ufunc, loop, work, N, K, CONFIG.cuda_sim) if work else 0
    if not d:
        fn = be.library_kernel("reduceat", arg)
        be.lib_launch(fn, be._blocks(max(work, 1), _tpb()), _tpb(), be.flatten(out),
                      be.flatten(x), idx, err, P, N, Q, K)
        return out
    pv, pc = be.empty((work << d,), loop), be.empty((work << d,), np.int64)
    part = be.library_kernel("reduceat", arg, "_part")
    fin = be.library_kernel("reduceat", arg, "_comb")
    be.lib_launch(part, be._blocks(work << d, _tpb()), _tpb(), pv, pc, be.flatten(x),
                  idx, err, P, N, Q, K, d)
    be.lib_launch(fin, be._blocks(work, _tpb()), _tpb(), be.flatten(out), pv, pc, be.flatten(x),
                  idx, P, N, Q, K, d)
    be.release(pv)
    be.release(pc)
    return out


def _message(ufunc: str, size: int):
    """NumPy's IndexError message for a bad index (the flag slot's record)."""
    return lambda bad, j: f"index {bad} out-of-bounds in {ufunc}.reduceat [0, {size})"
