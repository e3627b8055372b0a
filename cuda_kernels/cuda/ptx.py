"""PTX of the cuda backend's kernels, compiled without a GPU (needs NVRTC): what the PTX tests
check; and `assemble`, which runs `ptxas` (from the nvidia-cuda-nvcc wheel) on PTX and reads its
report: registers, spills, stack and shared memory per kernel."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata

import numba
import numpy as np
from numba import cuda

from tracer.ir.node import Node
from tracer.ir.config import context
from ..compiler import load_kernels
from ..emit import Emitter
from ..planning import find_reduce, row_plan
from .backend import CudaBackend
from .codegen import WIDE
from .cache import ptx as cached_ptx
from .reduce import partial_dtype
from .vector import VEC


def nb_array(dtype, ndim: int):
    """The numba type of a C-contiguous array (what this backend always launches with)."""
    t = numba.from_dtype(np.dtype(dtype))
    return t[(slice(None),) * (max(ndim, 1) - 1) + (slice(None, None, 1),)]


def _py_func(f):
    return getattr(f, "py_func", None) or f.fn  # a cuda.jit dispatcher, or a simulator kernel


def compile_ptx(fusion: Node, kernel, cc=(9, 0), wide: bool = False, vector: bool = False
                ) -> dict[str, str]:
    """PTX for a fusion node's CUDA kernel(s), compiled without a GPU (needs NVRTC): the kernel
    must have been planned with `cuda_sim=False` (its module is loaded here if it is not yet).
    `wide`: a loop kernel's 64-bit index variant too (codegen.INDEX_TYPES); `vector`: its
    vector variants (cuda/vector.py) too, where it has them."""
    with context(cuda_sim=False):
        load_kernels([kernel], CudaBackend())
    mod = sys.modules[f"tracer_gen.{kernel.module}"]
    body = fusion.attr("body")
    em = Emitter(body)
    sig = [nb_array(o.dtype, 1 if kernel.flat else max(o.ndim, 1)) for o in em.outputs]
    rank = 1 if kernel.flat else em.outputs[0].ndim
    sig += [nb_array(p.dtype, 1 if kernel.flat else p.ndim) for p in em.params]
    sig += [numba.from_dtype(c.dtype) for c in em.consts]
    names = [kernel.name]
    if kernel.kind in ("loop", "horizontal") and wide and not (kernel.meta or {}).get("tiled"):
        names.append(kernel.name + WIDE)
    if vector:
        names += [v for v in (kernel.name + VEC + n[len(kernel.name):] for n in list(names))
                  if hasattr(mod, v)]
    if kernel.kind == "loop":
        sig += [numba.int64] * max(rank, 1)
    elif kernel.kind == "row":
        sig += [numba.int64] * len(row_plan(body).shape)
    elif kernel.kind == "reduce":  # (horizontal kernels take no size arguments)
        red = find_reduce(body)
        sizes = [numba.int64] * red.inputs[0].ndim
        block = sig + [nb_array(partial_dtype(red), 1), nb_array(np.int64, 1),
                       nb_array(np.int32, 1)] + sizes + [numba.int64]
        return {kernel.name: cached_ptx(getattr(mod, kernel.name), tuple(block), cc),
                **{kernel.name + f: cached_ptx(getattr(mod, kernel.name + f), tuple(sig + sizes),
                                               cc) for f in ("_t", "_warp")}}
    return {n: cached_ptx(getattr(mod, n), tuple(sig), cc) for n in names}  # the disk cache's


def library_ptx(kind: str, arg, dtypes=("float32", "float32", "float32"), cc=(9, 0),
                variant: str = "") -> str:
    """PTX of a library kernel: kind "copy" (arg = rank; dtypes = out, x; variant: "" or
    codegen.WIDE), "transpose" (arg = the unsigned dtype of its element size), "matmul" (arg =
    result dtype; dtypes = out, a, b), "index" (arg = "R_K_MODE"; dtypes = out, x, v, index) or
    "segment" (arg = "scan", "place" or "apply_<target>_<values>_<op>"; dtypes = target, values)."""
    with context(cuda_sim=False):
        fn = CudaBackend().library_kernel(kind, arg, variant)
    if kind == "transpose":
        sig = (nb_array(arg, 3),) * 2 + (numba.int64,) * 3
    elif kind == "copy":
        r = max(arg, 1)
        sig = (nb_array(dtypes[0], 1), nb_array(dtypes[1], 1)) + (numba.int64,) * (2 + 3 * r)
    elif kind == "index":
        r, k, _ = arg.split("_")
        sig = tuple(nb_array(d, 1) for d in dtypes[:3]) + (nb_array("int64", 1),) + \
            (nb_array(dtypes[3], 1),) * int(k) + (numba.int64,) * (3 * int(r) + 2 * int(k))
    elif kind == "segment":  # (cuda/segment.py; dtypes: an apply's target and values)
        i64 = nb_array("int64", 1)
        sig = (i64, numba.int64) if arg == "scan" else (i64,) * 3 + (numba.int64,) \
            if arg == "place" else (nb_array(dtypes[0], 1), nb_array(dtypes[1], 1), i64, i64,
                                    numba.int64)
    else:
        sig = tuple(nb_array(d, 3) for d in dtypes[:3]) + (numba.int64,) * 5
    return cuda.compile_ptx(_py_func(fn), sig, cc=cc)[0]


# ---------------------------------------------------------------------------- ptxas

PTXAS_WHEELS = ("nvidia-cuda-nvcc", "nvidia-cuda-nvcc-cu12")


def find_ptxas() -> str | None:
    """ptxas from the nvidia-cuda-nvcc wheel (the test extra; cuda12's toolkit has its own),
    else the one on PATH; None when there is none."""
    for dist in PTXAS_WHEELS:
        try:
            files = metadata.distribution(dist).files or []
        except metadata.PackageNotFoundError:
            continue
        for f in files:
            if f.name == "ptxas" and f.parent.name == "bin":
                path = str(f.locate())
                if os.access(path, os.X_OK):
                    return path
    return shutil.which("ptxas")


@dataclass
class Usage:
    """What ptxas -v reports for one entry function."""
    registers: int = 0
    spill_stores: int = 0  # bytes
    spill_loads: int = 0
    stack: int = 0         # bytes of stack frame: local memory
    lmem: int = 0          # bytes of local memory beyond the stack frame
    smem: int = 0          # bytes of static shared memory


_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(")
_FIELDS = {"registers": re.compile(r"Used (\d+) registers"),
           "spill_stores": re.compile(r"(\d+) bytes spill stores"),
           "spill_loads": re.compile(r"(\d+) bytes spill loads"),
           "stack": re.compile(r"(\d+) bytes stack frame"),
           "lmem": re.compile(r"(\d+) bytes lmem"),
           "smem": re.compile(r"(\d+) bytes smem")}


def _ptxas_one(ptxas: str, arch: str, path: str) -> str:
    out = subprocess.run([ptxas, f"-arch={arch}", "-v", "-o", path + ".cubin", path],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"ptxas failed ({out.returncode}) on {path}:\n"
                           f"{(out.stdout + out.stderr)[-4000:]}")
    return out.stdout + out.stderr


def assemble(ptxs: dict[str, str], arch: str = "sm_90", ptxas: str | None = None,
             ) -> dict[str, Usage]:
    """Assemble PTX modules (label -> text) for `arch`, one ptxas call each (ptxas given
    several inputs at once crashes now and then), as many at a time as there are cores; each
    label's entry functions' usage, by label (and entry name, where a module has several).
    Raises RuntimeError with ptxas's message when it fails."""
    ptxas = ptxas or find_ptxas()
    if ptxas is None:
        raise FileNotFoundError("no ptxas: pip install nvidia-cuda-nvcc (the test extra)")
    entries: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="tracer-ptxas-") as d:
        files = []
        for k, (label, text) in enumerate(ptxs.items()):
            names = _ENTRY.findall(text)
            for e in names:
                entries[e] = label if len(names) == 1 else f"{label}:{e}"
            files.append(os.path.join(d, f"m{k}.ptx"))
            with open(files[-1], "w") as f:
                f.write(text)
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            report = list(pool.map(lambda f: _ptxas_one(ptxas, arch, f), files))
    usage: dict[str, Usage] = {}
    cur = None
    for line in "\n".join(report).splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$]+)'?", line)
        if m:  # (a non-entry function's own lines: ptxas inlined it into its callers)
            cur = usage.setdefault(entries[m.group(1)], Usage()) if m.group(1) in entries \
                else None
            continue
        if cur is not None:
            for field, rx in _FIELDS.items():
                m = rx.search(line)
                if m:
                    setattr(cur, field, int(m.group(1)))
    return usage
