"""A caching device allocator. Buffers the executor lets go of (an intermediate after the last
reader of its storage, a reduction's partial results) are kept and handed out again for the
same byte size, so repeated evaluations do not call cudaMalloc, and free, each time.

Only arrays this pool handed out come back, and only when the executor releases them: it knows
from the plan's storage analysis that no view and no result still refers to them. A handed-out
array is recognized by identity (a weak reference), never by a reused `id`.
"""
from __future__ import annotations

import ctypes
import math
import weakref

import numpy as np

from tracer.ir.node import Buffer


def cstrides(shape) -> list[int]:
    """The strides of a C-contiguous array of this shape, in elements."""
    st = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        st[k] = st[k + 1] * max(shape[k + 1], 1)
    return st


class DevicePool:
    IDLE_CAP = 2 << 30  # idle bytes kept; past this the oldest idle blocks are let go

    def __init__(self, api):
        self._api = api  # () -> the module with device_array (numba.cuda or its simulator)
        self._free: dict[int, list] = {}
        self._owner: dict[int, tuple] = {}
        self.idle = 0
        self.hits = 0
        self.allocs = 0

    def empty(self, shape, dtype):
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes == 0:
            return self._api().device_array(shape, dtype)
        blocks = self._free.get(nbytes)
        if blocks:
            block = blocks.pop()
            self.idle -= nbytes
            self.hits += 1
        else:
            block = self._api().device_array(nbytes, np.uint8)
            self.allocs += 1
        arr = block.view(dtype).reshape(tuple(shape))
        self._owner[id(arr)] = (block, weakref.ref(arr))
        if len(self._owner) > 4096:  # forget arrays that died unreleased (results, mostly)
            self._owner = {k: v for k, v in self._owner.items() if v[1]() is not None}
        return arr

    def release(self, arr) -> None:
        entry = self._owner.get(id(arr))
        if entry is None or entry[1]() is not arr:
            return
        del self._owner[id(arr)]
        block = entry[0]
        self._free.setdefault(block.size, []).append(block)
        self.idle += block.size
        for size in sorted(self._free, reverse=True):
            while self.idle > self.IDLE_CAP and self._free[size]:
                self._free[size].pop(0)
                self.idle -= size


class Staging:
    """Pinned (page-locked) host buffers that uploads go through: a copy from pinned memory
    is a DMA the stream runs while the host goes on, where one from pageable memory makes the
    driver stage it and the host wait. The host copies a chunk into a free buffer, enqueues
    its upload and records an event; a buffer is free again once its event has passed. Up to
    CAP bytes are kept; past that the host waits for the oldest upload (counted)."""
    CHUNK = 4 << 20
    CAP = 64 << 20

    def __init__(self, api, on_wait, event):
        self._api = api  # () -> numba.cuda or its simulator
        self._on_wait = on_wait  # called when the host blocks on an upload
        self._event = event  # () -> a new event
        self._bufs: list = []  # [pinned uint8 buffer, event or None] in order of last use

    def _free(self):
        for k, entry in enumerate(self._bufs):
            ev = entry[1]
            if ev is None or getattr(ev, "query", lambda: True)():
                return self._bufs.pop(k)
        if len(self._bufs) * self.CHUNK < self.CAP:
            return [self._api().pinned_array(self.CHUNK, np.uint8), None]
        entry = self._bufs.pop(0)  # the budget: wait for the oldest upload
        entry[1].synchronize()
        self._on_wait()
        return entry

    def upload(self, dev_bytes, host_bytes: np.ndarray, stream) -> None:
        """dev_bytes[:] = host_bytes (both flat uint8), enqueued on `stream`."""
        for lo in range(0, host_bytes.size, self.CHUNK):
            hi = min(lo + self.CHUNK, host_bytes.size)
            entry = self._free()
            buf = entry[0][:hi - lo]
            buf[:] = host_bytes[lo:hi]
            dev_bytes[lo:hi].copy_to_device(buf, stream=stream)
            ev = entry[1] or self._event()
            ev.record(stream)
            entry[1] = ev
            self._bufs.append(entry)

    def idle(self) -> None:
        """The stream has been synchronized: every upload is done."""
        for entry in self._bufs:
            entry[1] = None


class Borrowed(Buffer):
    """A leaf's memory that another library owns (DLPack, the CUDA array interface): the
    producer may write it at any time, so no copy of it is kept beside it (a host value is
    uploaded at each evaluation that needs it on the device, a device value copied back at
    each read). `keep` holds what keeps the memory alive (the producer, a DLPack capsule's
    tensor)."""

    __slots__ = ("keep",)

    def __init__(self, value, keep):
        super().__init__(value)
        self.keep = keep
        LIVE.add(self)

    @property
    def host(self):
        v = self.value
        return v if isinstance(v, np.ndarray) else None

    @host.setter
    def host(self, value) -> None:
        pass  # (see the class: nothing is cached)


LIVE: "weakref.WeakSet[Borrowed]" = weakref.WeakSet()  # the Borrowed buffers alive


def overlaps_borrowed(buf: Buffer) -> bool:
    """Whether an evaluation's result lies (in part) in borrowed memory (a copy the optimizer
    dropped, a view): the caller copies it, for a result is the value when it was computed,
    which the producer's later writes must not change."""
    return any(b is not buf and _overlap(buf.value, b.value) for b in list(LIVE))


def _span(arr) -> tuple[int, int]:
    d = interface(arr, None)
    st = d["strides"] or [s * arr.dtype.itemsize for s in cstrides(d["shape"])]
    lo = d["data"][0] + sum((n - 1) * s for n, s in zip(d["shape"], st) if s < 0)
    hi = d["data"][0] + sum((n - 1) * s for n, s in zip(d["shape"], st) if s > 0)
    return lo, hi + arr.dtype.itemsize


def _overlap(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and \
            np.may_share_memory(a, b)
    if not hasattr(a, "copy_to_host") or not a.size or not b.size:
        return False
    (alo, ahi), (blo, bhi) = _span(a), _span(b)
    return alo < bhi and blo < ahi


def interface(arr, stream: int | None) -> dict:
    """The CUDA array interface (v3) of device array `arr`, read-only (tracer's values are
    shared snapshots), to be used after the work queued on `stream`. Under the simulator a
    device array wraps host memory: its address is what the interface gives."""
    core = getattr(arr, "_ary", None)
    if core is not None:  # the simulator's FakeCUDAArray
        ptr, strides = core.__array_interface__["data"][0], core.strides
        contiguous = core.flags.c_contiguous
    else:
        ptr = arr.device_ctypes_pointer.value or 0
        strides, contiguous = arr.strides, arr.is_c_contiguous()
    return {"shape": tuple(arr.shape), "typestr": arr.dtype.str, "version": 3,
            "strides": None if contiguous else tuple(strides), "data": (ptr, True),
            "stream": stream}


def from_interface(desc: dict, owner, api, sim: bool):
    """A device array over the memory a CUDA array interface describes, with no copy. Under
    the simulator the address is host memory (the simulator's device memory is), viewed
    where it lies."""
    if desc.get("mask") is not None:
        raise NotImplementedError("Masked arrays are not supported")
    if not sim:
        return api.from_cuda_array_interface(desc, owner=owner, sync=True)
    dtype = np.dtype(desc["typestr"])
    shape = tuple(desc["shape"])
    strides = desc.get("strides") or tuple(s * dtype.itemsize for s in cstrides(shape))
    span = 0 if 0 in shape else \
        sum((d - 1) * abs(s) for d, s in zip(shape, strides)) + dtype.itemsize
    ptr = desc["data"][0]
    low = ptr + sum((d - 1) * s for d, s in zip(shape, strides) if s < 0)
    mem = np.frombuffer((ctypes.c_char * max(span, 1)).from_address(low), np.uint8)
    host = np.ndarray(shape, dtype, buffer=mem, offset=ptr - low, strides=strides)
    return api.cudadrv.devicearray.FakeCUDAArray(host)
