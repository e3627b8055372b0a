"""PTX of the cuda backend's kernels, compiled without a GPU (needs NVRTC): what the PTX tests
check."""
from __future__ import annotations

import sys

import numba
import numpy as np
from numba import cuda

from tracer.ir.node import Node
from tracer.ir.config import context
from ..compiler import load_kernels
from ..emit import Emitter
from ..planning import acc_dtype, find_reduce, row_plan
from .backend import CudaBackend
from .cache import ptx as cached_ptx


def nb_array(dtype, ndim: int):
    """The numba type of a C-contiguous array (what this backend always launches with)."""
    t = numba.from_dtype(np.dtype(dtype))
    return t[(slice(None),) * (max(ndim, 1) - 1) + (slice(None, None, 1),)]


def _py_func(f):
    return getattr(f, "py_func", None) or f.fn  # a cuda.jit dispatcher, or a simulator kernel


def compile_ptx(fusion: Node, kernel, cc=(9, 0)) -> dict[str, str]:
    """PTX for a fusion node's CUDA kernel(s), compiled without a GPU (needs NVRTC): the kernel
    must have been planned with `cuda_sim=False` (its module is loaded here if it is not yet)."""
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
    if kernel.kind == "loop":
        sig += [numba.int64] * max(rank, 1)
    elif kernel.kind == "row":
        sig += [numba.int64] * len(row_plan(body).shape)
    elif kernel.kind == "reduce":  # (horizontal kernels take no size arguments)
        red = find_reduce(body)
        sig += [nb_array(acc_dtype(red), 2), nb_array(np.int64, 2)]
        sig += [numba.int64] * (red.inputs[0].ndim + 1)
        names.append(kernel.name + "_fin")
    return {n: cached_ptx(getattr(mod, n), tuple(sig), cc) for n in names}  # the disk cache's


def library_ptx(kind: str, arg, dtypes=("float32", "float32", "float32"), cc=(9, 0)) -> str:
    """PTX of a library kernel: kind "copy" (arg = rank; dtypes = out, x), "matmul" (arg =
    result dtype; dtypes = out, a, b) or "index" (arg = "R_K_MODE"; dtypes = out, x, v, index)."""
    with context(cuda_sim=False):
        fn = CudaBackend().library_kernel(kind, arg)
    if kind == "copy":
        r = max(arg, 1)
        sig = (nb_array(dtypes[0], 1), nb_array(dtypes[1], 1)) + (numba.int64,) * (2 + 3 * r)
    elif kind == "index":
        r, k, _ = arg.split("_")
        sig = tuple(nb_array(d, 1) for d in dtypes[:3]) + (nb_array("int64", 1),) + \
            (nb_array(dtypes[3], 1),) * int(k) + (numba.int64,) * (3 * int(r) + 2 * int(k))
    else:
        sig = tuple(nb_array(d, 3) for d in dtypes[:3]) + (numba.int64,) * 5
    return cuda.compile_ptx(_py_func(fn), sig, cc=cc)[0]
