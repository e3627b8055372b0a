"""Strided device views on the cuda backend: a slice, dynamic slice, transpose or broadcast of a
device array as an array over the same memory (no copy, no launch), for the kernels that read
it with full subscripts (executor.lower decides which views those are) and for a producer that
writes straight into the slice it is assigned to (opt/liveness.py's `into`).

Such an array is typed with layout 'A' (or 'F') by numba-cuda: a separate specialization of
the kernel, whose argument types key its disk cache entry (cuda/cache.py) and whose registers
the launch geometry reads (cuda/occupancy.py) like any other overload. Strides here are in
elements; only non-negative ones are made (a reversed axis keeps the copy kernel: numba-cuda's
views and the simulator's are only tested here with the pointer at the lowest address)."""
from __future__ import annotations

import math

import numpy as np

from tracer.ir.config import CONFIG
from tracer.ir.node import Node
from ..layout import unit_reshape_strides
from .codegen import NB_TYPES


def elem_strides(x) -> list[int]:
    """x's strides in elements."""
    return [s // x.dtype.itemsize for s in x.strides]


def view_layout(n: Node, x, starts=None) -> tuple[int, list[int]] | None:
    """(offset, strides) in elements, relative to device array x's first element, of view
    node n of x (`starts`: a dynamic slice's, on the host); None where a stride would be
    negative."""
    xs = elem_strides(x)
    if n.op == "slice":
        sl = n.attr("slices")
        off, st = sum(s[0] * k for s, k in zip(sl, xs)), [s[2] * k for s, k in zip(sl, xs)]
    elif n.op == "dynamic_slice":
        off = sum(int(s) * k for s, k in zip(starts, xs))
        st = [s * k for s, k in zip(n.attr("steps"), xs)]
    elif n.op == "transpose":
        off, st = 0, [xs[p] for p in n.attr("perm")]
    else:  # broadcast_to
        lead = n.ndim - x.ndim
        off = 0
        st = [0] * lead + [0 if x.shape[k] == 1 and n.shape[lead + k] != 1 else xs[k]
                           for k in range(x.ndim)]
    return None if any(s < 0 for s in st) else (off, st)


class _SimView:
    """Under the simulator: host memory at an address, kept alive by `keep` (the array it
    lies in, whose pool lease then stays alive too)."""

    def __init__(self, keep, ptr: int, shape, strides, typestr: str):
        self.keep = keep
        self.__array_interface__ = {"shape": tuple(shape), "strides": tuple(strides),
                                    "typestr": typestr, "version": 3, "data": (ptr, False)}


def device_view(x, offset: int, shape, strides, sim: bool):
    """The device array of `shape` whose element i is x's element at offset + i . strides
    (elements, relative to x's first element; non-negative), over x's memory."""
    shape = tuple(int(d) for d in shape)
    item = x.dtype.itemsize
    bstrides = tuple(int(s) * item for s in strides)
    if sim:
        core = x._ary
        ptr = core.__array_interface__["data"][0] + offset * item
        arr = np.asarray(_SimView(core, ptr, shape, bstrides, core.dtype.str))
        return type(x)(arr)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    gpu = x.gpu_data.view(offset * item) if math.prod(shape) else None
    return DeviceNDArray(shape, bstrides, x.dtype, stream=x.stream, gpu_data=gpu)


class Views:
    """CudaBackend's view methods (it provides to_host)."""

    def strided_view(self, n: Node, args: list):
        """View node n (slice, dynamic_slice, transpose, broadcast_to) as a strided device
        array over its operand's memory, for kernels that read it in place (the executor's
        plan: `Program.strided`); None where it cannot be one (run_node copies it then)."""
        x = args[0]
        if not hasattr(x, "copy_to_host") or np.dtype(n.dtype).name not in NB_TYPES or \
                not n.size:
            return None
        got = view_layout(n, x, self.to_host(args[1]) if n.op == "dynamic_slice" else None)
        return None if got is None else device_view(x, got[0], n.shape, got[1], CONFIG.cuda_sim)

    def slice_view(self, base, slices, shape):
        """base[slices] (steps positive) reshaped to `shape` (only length-1 axes differ), as a
        device array over base's memory: where a producer writes the value a slice write
        assigns (the memory plan's `into`)."""
        xs = elem_strides(base)
        sub = [len(range(*s)) for s in slices]
        return device_view(base, sum(s[0] * k for s, k in zip(slices, xs)), shape,
                           unit_reshape_strides(sub, [s[2] * k for s, k in zip(slices, xs)],
                                                shape, 1), CONFIG.cuda_sim)
