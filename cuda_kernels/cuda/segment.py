"""`ufunc.at` without an exact atomic on the cuda backend: the sort-and-segment plan.

NumPy applies `ufunc.at`'s values one by one in index order, so where several land on one
element the result depends on that order (float add and multiply round at each step). Here:

1. `offs` (an index kernel, cuda/index.py): the flat target position of every value, an index
   out of bounds flagged as for gathers;
2. the positions' stable argsort `perm`: by the library (CuPy's stable sort: cuda/libs.py
   `argsort_positions`), else by a counting sort on the device (`count` histogram in the offs
   kernel, one-block exclusive `scan` of the counts, `place`: each value takes the next slot of
   its target with an atomic, so the order inside a target's segment is not yet the values');
3. `apply`: one thread per segment (a run of equal positions in `perm`) puts the segment in
   occurrence order (insertion sort: a no-op after a stable sort) and combines its values into
   the target in that order, in NumPy's loop dtype, each step cast back to the target's dtype.
   Results are NumPy's to the bit and never depend on timing.

Why a counting sort without the library: the keys are positions in the target, so a histogram,
a scan and one atomic per value group them in O(values + target size) with no comparison sort;
the segment's own order is restored by its thread, which walks it anyway.
"""
from __future__ import annotations

import numpy as np

from tracer.ir.registry import OPS
from ..emit import _WRAP_I64, tname
from ..helpers import helper_source, needed_helpers
from .codegen import HELPER_SOURCES


def loop_dtypes(op: str, xdt: np.dtype, vdt: np.dtype) -> tuple | None:
    """NumPy's loop (its two input dtypes and output dtype) for `op.at` on a target of xdt with
    values of vdt, or None where the combiner has no kernel template for it."""
    uf = getattr(np, op, None)
    if not isinstance(uf, np.ufunc) or op not in OPS:
        return None
    try:
        loop = uf.resolve_dtypes((xdt, vdt, None))
    except (TypeError, ValueError):
        return None
    if any(d.name not in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                          "uint64", "float32", "float64") for d in loop):
        return None
    if OPS[op].template(loop[:2], loop[2]) is None:
        return None
    return loop


def gen_segment(arg: str, name: str, tpb: int) -> str:
    """The plan's kernels: "scan", "place", or "apply_<target dtype>_<value dtype>_<op>"."""
    if arg == "scan":  # exclusive, in place, one block: a chunk per thread
        return "\n".join([
            "@_jit", f"def {name}(a, n):",
            "    t = cuda.threadIdx.x",
            f"    part = cuda.shared.array({tpb}, numba.int64)",
            f"    per = (n + {tpb - 1}) // {tpb}",
            "    lo = t * per",
            "    hi = min(lo + per, n)",
            "    s = 0",
            "    for i in range(lo, hi):",
            "        s += a[i]",
            "    part[t] = s",
            "    cuda.syncthreads()",
            "    if t == 0:",
            "        acc = 0",
            f"        for k in range({tpb}):",
            "            w = part[k]",
            "            part[k] = acc",
            "            acc += w",
            "    cuda.syncthreads()",
            "    acc = part[t]",
            "    for i in range(lo, hi):",
            "        w = a[i]",
            "        a[i] = acc",
            "        acc += w"])
    if arg == "place":
        return "\n".join([
            "@_jit", f"def {name}(perm, offs, starts, n):",
            "    for q in range(cuda.grid(1), n, cuda.gridsize(1)):",
            "        perm[cuda.atomic.add(starts, offs[q], 1)] = q"])
    _, xdt, vdt, op = arg.split("_", 3)
    xdt, vdt = np.dtype(xdt), np.dtype(vdt)
    l0, l1, lo = loop_dtypes(op, xdt, vdt)
    tpl = OPS[op].template((l0, l1), lo)
    if lo == np.int64:  # wraps around as NumPy's int64 does (emit._WRAP_I64)
        tpl = _WRAP_I64.get(op, tpl)
    step = tpl.format(f"{tname(l0)}(acc)", f"{tname(l1)}(v[perm[a]])")
    L = ["@_jit", f"def {name}(out, v, perm, offs, n):",
         "    for p in range(cuda.grid(1), n, cuda.gridsize(1)):",
         "        off = offs[perm[p]]",
         "        if p > 0 and offs[perm[p - 1]] == off:",
         "            continue  # (inside a segment: its first position's thread does it)",
         "        e = p + 1",
         "        while e < n and offs[perm[e]] == off:",
         "            e += 1",
         "        for a in range(p + 1, e):  # occurrence order",
         "            q = perm[a]",
         "            b = a",
         "            while b > p and perm[b - 1] > q:",
         "                perm[b] = perm[b - 1]",
         "                b -= 1",
         "            perm[b] = q",
         "        acc = out[off]",
         "        for a in range(p, e):",
         f"            acc = {tname(xdt)}({tname(lo)}({step}))",
         "        out[off] = acc"]
    helpers = needed_helpers(tpl, set(), HELPER_SOURCES)
    src = "\n".join(L)
    return helper_source(helpers, "@_devjit", HELPER_SOURCES) + "\n\n\n" + src if helpers else src
