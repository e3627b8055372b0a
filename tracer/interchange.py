"""DLPack and the CUDA array interface: tracer's values handed to other libraries and theirs
taken in, without copies.

Out: `__dlpack__` hands out the realized value as NumPy does a read-only array (tracer's
buffers are shared snapshots, as `numpy.asarray(t)` is): the DLPack 1.0 read-only flag is set,
and a consumer of the older protocol gets NumPy's BufferError. On the cuda backend a value on
the device goes out as a CUDA tensor, and `__cuda_array_interface__` (v3, read-only, with
tracer's stream) describes it: no copy to the host.

In: `from_dlpack` (and `asarray` of a device array on the cuda backend) makes a base over the
producer's memory (`Alias`), as NumPy's from_dlpack views it: reading it reads that memory, a
write through it is evaluated at once and lands there, so each side sees the other's writes.
A value recorded from it is computed at once, as NumPy computes it (store.reads_borrowed): the
producer may write the memory at any time after. What follows it stays lazy and fuses.
"""
from __future__ import annotations

import weakref

import numpy as np

from tracer.cuda_kernels import backends
from tracer.cuda_kernels.cuda.memory import Borrowed
from tracer.ir.catalogue import py_slice
from tracer.ir.config import CONFIG
from tracer.ir.node import make_leaf
from . import dlpack
from . import graph as G
from .array import ndarray
from .eager import _layout as layout
from .store import LOCK, Var, copy_of, evaluate_vars, to_numpy
from .view import View


class Alias(Var):
    """A base over borrowed memory (`leaf`): its value is always that memory. A write
    evaluates the new value at once and copies it into the memory (no pending value reads
    the memory: each was computed as it was recorded)."""

    __slots__ = ("leaf",)
    borrows = True

    def __init__(self, leaf):
        super().__init__(leaf)
        self.leaf = leaf

    def assign(self, node) -> None:
        with LOCK:
            leaf = self.leaf
            if node.op == "setslice" and node.inputs[0] is leaf and self._write_part(node):
                return
            try:  # (a value that reads the memory is computed as it is recorded)
                Var.assign(self, node)
                evaluate_vars([self])
            except BaseException:
                self.node = leaf  # NumPy's write raised before it wrote: nothing changed
                self.version += 1
                raise
            new = self.node.attrs[0][1].value
            mem = leaf.attrs[0][1].value
            if new is not mem:
                if isinstance(mem, np.ndarray):
                    np.copyto(mem, new if isinstance(new, np.ndarray) else
                              backends.get("cuda").to_host(new))
                else:
                    mem.copy_to_device(new, stream=backends.get("cuda").stream())
            self.node = leaf
            self.version += 1

    def _write_part(self, node) -> bool:
        """A write of a slice (`t[i] = v`, `t[a:b] += v`): only the value is evaluated and
        copied into its part of the memory, as NumPy writes it (not the whole base). False
        where the part is a strided region of device memory (the whole base is written)."""
        mem = self.leaf.attrs[0][1].value
        part = mem[tuple(py_slice(*s) for s in node.attr("slices"))]
        host = isinstance(mem, np.ndarray)
        if not host and not part.is_c_contiguous():
            return False
        value = ndarray._from_node(node.inputs[1])
        evaluate_vars([value._var])
        v = value._var.node.attrs[0][1].value
        if host:
            part[...] = v if isinstance(v, np.ndarray) else backends.get("cuda").to_host(v)
        else:
            part.copy_to_device(v, stream=backends.get("cuda").stream())
        self.version += 1  # (views' memos of the old node go; the node stays the leaf)
        return True


def borrowed(value, keep, writeable: bool) -> ndarray:
    """A lazy array over memory another library owns."""
    out = ndarray(Alias(make_leaf(tuple(value.shape), np.dtype(value.dtype),
                                  Borrowed(value, keep))))
    if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
        out._view = View((), value.shape, layout(value))  # NumPy's flags for its strides
    out._arr0 = True  # an array, as NumPy's from_dlpack gives, also when 0-d
    if not writeable:
        out.flags.writeable = False
    return out


def _cuda():
    """The cuda backend where it is the one in use, else None."""
    return backends.get("cuda") if backends.default_backend(CONFIG.backend) == "cuda" else None


# ---- out

def _device_value(a: ndarray, be):
    """a's value as a device array of the cuda backend, evaluated: a view's as an array of its
    own (a device view or copy), a host leaf's uploaded."""
    if a._view.steps:
        a = ndarray._from_node(a._node)
    with LOCK:
        evaluate_vars([a._var])
        buf = a._var.node.attrs[0][1]
    v = buf.value
    return v if hasattr(v, "copy_to_host") else be.from_buffer(buf)


def _on_device(a: ndarray, be) -> bool:
    if be is None:
        return False
    with LOCK:
        evaluate_vars([a._var])
        return hasattr(a._var.node.attrs[0][1].value, "copy_to_host")


# id(array) -> (weak ref to it, the device arrays its interface handed out): alive as long
# as the array, which the consumer holds
_HANDED: dict[int, tuple] = {}


def cuda_array_interface(a: ndarray) -> dict:
    be = _cuda()
    if be is None:  # (hasattr() is False, as for NumPy's arrays)
        raise AttributeError("'ndarray' object has no attribute '__cuda_array_interface__' "
                             "(the cuda backend is not in use)")
    arr = _device_value(a, be)
    entry = _HANDED.get(id(a))
    if entry is None or entry[0]() is not a:
        entry = _HANDED[id(a)] = (weakref.ref(a, lambda r, k=id(a): _HANDED.pop(k, None)), [])
    if not any(x is arr for x in entry[1]):
        entry[1].append(arr)
    return be.interface(arr)


def dlpack_device(a: ndarray) -> tuple[int, int]:
    be = _cuda()
    if _on_device(a, be):
        return (dlpack.CUDA, be.device_id())
    return to_numpy(a).__dlpack_device__()


def to_dlpack(a: ndarray, stream=None, max_version=None, dl_device=None, copy=None):
    be = _cuda()
    if not _on_device(a, be):  # NumPy's export, checks and errors
        return to_numpy(a).__dlpack__(stream=stream, max_version=max_version,
                                      dl_device=dl_device, copy=copy)
    if copy is not None and not isinstance(copy, bool):
        raise ValueError("copy must be True, False or None")
    if max_version is not None and not (isinstance(max_version, tuple) and
                                        len(max_version) == 2):
        raise TypeError("max_version must be None or a tuple with two elements.")
    here = (dlpack.CUDA, be.device_id())
    if dl_device is not None and tuple(dl_device) != here:
        if tuple(dl_device) != (dlpack.CPU, 0) or copy is False:
            raise BufferError("unsupported device requested")
        return to_numpy(a).__dlpack__(max_version=max_version, copy=True)
    if stream == 0:
        raise ValueError("stream 0 is ambiguous for CUDA: pass 1 (the legacy default stream), "
                         "2 (the per-thread default stream) or a stream handle")
    arr = _device_value(a, be)
    if copy:  # a device copy of its own, which the consumer may write
        arr = copy_of(arr).value
    if stream != -1:  # the consumer's work on its stream waits for tracer's
        be.order_before(1 if stream is None else stream)
    versioned = max_version is not None and max_version[0] >= 1
    if not versioned and not copy:
        raise BufferError("Cannot export readonly array since signalling readonly is "
                          "unsupported by DLPack (supported by newer DLPack version).")
    ptr = be.interface(arr)["data"][0]
    return dlpack.capsule(arr, ptr, here, dlpack.IS_COPIED if copy else dlpack.READ_ONLY,
                          versioned)


# ---- in

def from_dlpack(x, /, *, device=None, copy=None):
    """NumPy's from_dlpack: a lazy array over the producer's memory (a copy of its own with
    copy=True). On the cuda backend a producer on a CUDA device gives a device leaf (no copy
    to or from the host)."""
    if isinstance(x, ndarray):  # tracer's own: a view of it (writes reach it), or a copy
        np.from_dlpack(np.empty(0), device=device, copy=copy)  # NumPy's argument errors
        return x.copy() if copy else x._alias()
    be = _cuda()
    kind = getattr(x, "__dlpack_device__", None)
    if be is not None and kind is not None and kind()[0] == dlpack.CUDA:
        if device not in (None, "cpu"):  # (tracer's device is "cpu", as `.device` says)
            raise ValueError(f'Device not understood. Only "cpu" is allowed, but received: '
                             f"{device}")
        try:
            cap = x.__dlpack__(stream=be.stream_handle() or 1, max_version=dlpack.VERSION)
        except TypeError:  # a producer of the older protocol
            cap = x.__dlpack__(stream=be.stream_handle() or 1)
        taken = dlpack.Taken(cap)
        arr = be.from_interface(taken.interface(), taken)
        return _device_leaf(arr, taken, be, copy, not taken.read_only)
    h = np.from_dlpack(x, device=device, copy=copy)
    if copy:
        return ndarray(Var(G.leaf(h)))
    return borrowed(h, x, h.flags.writeable)


def from_device(obj, copy) -> ndarray | None:
    """`asarray`/`array` of an object with a CUDA array interface, on the cuda backend: a
    device leaf over its memory (copy=True: a device copy of its own); None elsewhere (the
    host copy NumPy makes)."""
    be = _cuda()
    if be is None:
        return None
    desc = obj.__cuda_array_interface__
    return _device_leaf(be.from_interface(desc, obj), obj, be, copy,
                        not desc["data"][1])


def _device_leaf(arr, keep, be, copy, writeable: bool) -> ndarray:
    if copy:
        out = ndarray(Var(make_leaf(tuple(arr.shape), np.dtype(arr.dtype), copy_of(arr))))
        out._arr0 = True
        return out
    return borrowed(arr, keep, writeable)
