"""Every kernel of the registry sweep assembles for sm_90 with `ptxas` (the nvidia-cuda-nvcc
wheel of the test extra): no failure, no register spill, no local memory (stack frame) beyond
libdevice's own (LIBDEVICE_LOCAL). Issue 20 item 7; `python bench/ptx_report.py` prints the registers, spills and shared memory of the same
kernels.

The kernels are those the sweep (tests/sweep/test_registry_sweep.py) plans on the cuda backend,
planned with `explain` (nothing runs) and compiled to PTX driverless (cuda/ptx.py): every ufunc
loop with a kernel template, every reduction (along no axis, axis 0 and axis 1); plus the library
kernels (strided copy, matmul, gather and scatter) that other ops run.

Cost: compiling a kernel to PTX takes 0.1-0.2 s of Numba's Python pipeline and ptxas about
0.05 s; the sweep plans about 860 PTX modules (3 min of CPU), too many for CI. So this covers
every kernel template once, about 310 modules (about 60 s of CPU): per ufunc the float64, int64,
uint64 and bool loops, float32 only where it calls libm (its own libdevice functions), and
kernels whose source and operand dtypes are the same up to integer width and signedness count
once (widths change register sizes, not the code ptxas schedules; bool operands count as int8);
each reduction along all three axis kinds for its first dtype, along axis 1 for the others.
Each 1-D loop kernel's vector variant (cuda/vector.py, 32-bit index) adds about 210 modules
(about 30 s of CPU; 2026-11-25: 798 modules in all, PTX and ptxas 63 s with a warm PTX cache).
"""
from __future__ import annotations

import re
import time

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir import toposort
from tracer.ir.config import context

pytestmark = [pytest.mark.nvrtc, pytest.mark.lazy]

# one dtype per family, the widest (the most registers); float32 too, for its own libm calls
UFUNC_DTYPES = ("float64", "float32", "int64", "uint64", "bool")
REDUCE_DTYPES = ("float64", "int64", "bool")


# local memory of libdevice's own functions, allowed where a kernel calls them: float64
# sin/cos/tan reduce a huge argument (Payne-Hanek) in a 5-word local array, as CUDA C's do
LIBDEVICE_LOCAL = {"__internal_trig_reduction_slowpathd": 40}


def _width_free(text: str) -> str:
    """Integer dtypes as one: signedness changes an instruction's suffix where the source is
    the same (where it matters, the template writes other source)."""
    return re.sub(r"\b(?:u?int|_[iu]|[iu])(?:8|16|32|64)\b", "INT", text)


def _template(kernel, dtypes) -> tuple:
    """A kernel's template: its source without its name, integer widths abstracted, and its
    operands' dtypes the same way."""
    src = "\n".join(l for l in kernel.source.replace(kernel.name, "K").splitlines()
                    if not re.match(r"_[iu]\d+ = ", l))
    return kernel.kind, _width_free(src), _width_free(" ".join(dtypes).replace("bool", "int8"))


def _cases():
    """(label, thunk giving the lazy results, dtypes) for each expression of the sweep (see
    the module doc for which dtypes)."""
    from sweep.test_registry_sweep import (NARROW_REDUCTIONS, REDUCTIONS, UFUNC_REDUCTIONS,
                                           UFUNCS, cross, reduction_matrix)
    from tracer.ir.registry import OPS
    for name in UFUNCS:
        uf = OPS[name].ufunc
        for dt in UFUNC_DTYPES:
            args = [a[:4] for a in cross([dt] * uf.nin)]
            yield f"{name}-{dt}", lambda n=name, a=args: getattr(np, n)(
                *[np.asarray(x) for x in a]), (dt,)
    for fn in list(REDUCTIONS) + UFUNC_REDUCTIONS:
        dts = [dt for dt in REDUCE_DTYPES if dt in NARROW_REDUCTIONS.get(fn, REDUCE_DTYPES)]
        for dt in dts:
            h = reduction_matrix(fn, dt)
            for axis in (1, None, 0) if dt == dts[0] else (1,):
                yield f"{fn}-{dt}-axis{axis}", lambda f=fn, h=h, ax=axis: (
                    getattr(np, f)(np.asarray(h), axis=ax) if f in REDUCTIONS else
                    getattr(np, OPS[f].ufunc.__name__).reduce(np.asarray(h), axis=ax)), (dt,)


def sweep_kernels():
    """(label, fusion node, kernel) for one kernel of each template the sweep plans on cuda."""
    seen = set()
    with context(backend="cuda", cuda_sim=False, eager_size=0, small_graph=0):
        for label, thunk, dts in _cases():
            try:
                with numpy.errstate(all="ignore"):
                    got = thunk()
            except (TypeError, ValueError):  # NumPy has no loop for these dtypes
                continue
            plan = tracer.explain(*(got if isinstance(got, tuple) else (got,)))
            fusions = [n for n in toposort(plan.graph_after.roots) if n.op == "fusion"]
            for f, k in zip(fusions, plan.kernels):
                key = _template(k, dts)
                if dts == ("float32",) and "math." not in k.source:
                    continue  # the float64 kernel's template: float32 differs by libm calls
                if key not in seen and k.name not in seen:
                    seen |= {key, k.name}
                    yield label, f, k


# (kind, argument, operand dtypes) of cuda/ptx.py's library_ptx: every rank the copy kernel is
# generated for in the sweep's shapes and beyond, matmul's accumulator families, and each
# index-kernel mode (atomics per dtype family, gather, claim/write, the segment plan's kernels)
LIBRARY = [("copy", r, (dt, dt)) for r in (1, 2, 3, 4) for dt in ("float64", "int8")] + \
    [("transpose", f"uint{b}", (f"uint{b}",) * 2) for b in (8, 16, 32, 64)] + \
    [("matmul", dts[0], dts) for dts in [("float32",) * 3, ("float64", "int32", "float32"),
                                         ("int64",) * 3, ("bool",) * 3]] + \
    [("index", f"{r}_{k}_gather", ("float32", "float32", "float32", "int64"))
     for r, k in ((1, 1), (2, 1), (3, 2))] + \
    [("index", f"2_1_{m}", (dt, dt, dt, "int64")) for m in ("add", "max", "min")
     for dt in ("int32", "uint64", "float32", "float64") if m == "add" or dt[0] != "f"] + \
    [("index", "1_1_claim", ("int64", "float32", "float32", "int64")),
     ("index", "2_1_write", ("int32", "int64", "int32", "int64")),
     ("index", "1_1_offs", ("int64", "float32", "float32", "int64")),
     ("index", "2_1_count", ("int64", "int64", "float32", "int64"))] + \
    [("segment", a, dts) for a, dts in (("scan", ()), ("place", ()),
                                        ("apply_int8_int8_maximum", ("int8", "int8")),
                                        ("apply_float32_float64_add", ("float32", "float64")),
                                        ("apply_float32_float32_multiply", ("float32",) * 2))]


def all_ptx(match: str = "") -> dict[str, str]:
    """label -> PTX of every kernel above whose label matches the regex (reductions give two:
    the block form, the thread form `-thread` and the warp form `-warp`; a 1-D loop kernel's
    vector variant is `-vec`)."""
    from tracer.cuda_kernels.cuda.codegen import WIDE
    from tracer.cuda_kernels.cuda.ptx import compile_ptx, library_ptx
    from tracer.cuda_kernels.cuda.vector import VEC
    out = {}
    for label, f, k in sweep_kernels():
        if re.search(match, label):
            for kname, ptx in compile_ptx(f, k, cc=(9, 0), wide=True).items():
                form = ("-thread" if kname.endswith("_t") else "-warp" if
                        kname.endswith("_warp") else "") if k.kind == "reduce" else ""
                out[label + (form or ("-wide" if kname.endswith(WIDE) else ""))] = ptx
            if k.kind == "loop":  # the vector variant (cuda/vector.py), 32-bit index only
                out.update((label + "-vec", ptx) for kname, ptx in
                           compile_ptx(f, k, cc=(9, 0), vector=True).items()
                           if kname.endswith(VEC))
    for kind, arg, dts in LIBRARY:
        label = f"{kind}-{arg}-{'-'.join(dts)}"
        if re.search(match, label):
            out[label] = library_ptx(kind, arg, dts)
            if kind == "copy":  # and its 64-bit index variant
                out[label + "-wide"] = library_ptx(kind, arg, dts, variant=WIDE)
    return out


def test_every_sweep_kernel_assembles_without_spills_or_local_memory():
    from tracer.cuda_kernels.cuda.ptx import assemble, find_ptxas
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas: the nvidia-cuda-nvcc wheel (test extra) is not installed")
    t0 = time.perf_counter()
    ptxs = all_ptx()
    t1 = time.perf_counter()
    usage = assemble(ptxs, "sm_90", ptxas)
    print(f"{len(ptxs)} kernels: PTX {t1 - t0:.1f} s, ptxas {time.perf_counter() - t1:.1f} s")
    assert set(usage) == set(ptxs)
    kinds = {re.sub(r"-.*", "", lab) for lab in ptxs}
    assert {"add", "sum", "argmax", "copy", "matmul", "index"} <= kinds
    bad = {lab: u for lab, u in usage.items() if u.spill_stores or u.spill_loads or
           u.stack + u.lmem > sum(n for f, n in LIBDEVICE_LOCAL.items() if f in ptxs[lab])}
    assert not bad, bad
    assert all(u.registers > 0 for u in usage.values())
