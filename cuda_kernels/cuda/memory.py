"""Device memory: a caching, stream-ordered allocator (DevicePool), pinned staging buffers for
uploads (Staging), and the views of memory other libraries own (Borrowed, interface).

DevicePool keeps blocks of size classes (eight a power of two: at most 1/8 wasted) and hands
them out again. A block comes back when the executor releases an intermediate (it knows from
the plan's storage analysis that nothing refers to it) or when the last array over a block
handed out dies (a result the user dropped, an uploaded input): each hand-out is a lease whose
finalizer returns the block. The backend has one stream and every use of a block is enqueued
on it, so work enqueued after a block came back runs after its last use: reuse needs no wait
and never frees through numba's deferred deallocation (which synchronizes).

While uploads run on a second stream (the budget's chunks: Uploads.overlapped),
that order no longer covers a block the upload stream writes: the pool then records a fence
(an event on the compute stream) for each block it takes back, and `take` hands the fence out
with the block, for the upload stream to wait on before it writes (blocks idle from before get
the fence recorded when the uploads started). It hands out the block idle longest, whose
fence is the likeliest to have passed, so an upload need not wait for the kernels still
reading a block just given back.
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import itertools
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


def size_class(nbytes: int) -> int:
    """The block size that serves a request of nbytes: 512 B at least (the driver's own
    granularity), above that eight classes per power of two, so a block wastes under 1/8."""
    if nbytes <= 512:
        return 512
    step = 1 << (nbytes.bit_length() - 4)
    return -(-nbytes // step) * step


class _SimLease:
    """Under the simulator, the host memory of a block handed out: every NumPy view of the
    array made over it keeps it alive, so its death means no array reads the block."""

    def __init__(self, block: np.ndarray, nbytes: int):
        self.block = block
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "version": 3,
                                    "data": (block.__array_interface__["data"][0], False)}


class DevicePool:
    """See the module docstring. `idle` (bytes of blocks kept for reuse) is at most IDLE_CAP;
    `within(room)` is the pool under a memory budget."""
    IDLE_CAP = 2 << 30  # idle bytes kept; past this the largest idle blocks are let go

    def __init__(self, api):
        self._api = api  # () -> the module with device_array (numba.cuda or its simulator)
        self._free: dict[tuple, list] = {}  # (api, block size) -> idle blocks
        self._out: dict[int, tuple] = {}  # token -> (free-list key, block, id(array), lease)
        self._by_arr: dict[int, tuple] = {}  # id(array handed out) -> (weak ref, token)
        self._back = collections.deque()  # tokens whose lease died (a finalizer appends)
        self._held: dict[int, object] = {}  # token -> the lease of a block released early
        self._tokens = itertools.count()
        self._exact = False  # under a budget: blocks of the bytes asked for (see within)
        self.fence = None  # () -> an event on the compute stream, while uploads have their own
        self._fences: dict[int, object] = {}  # id(idle block) -> its fence
        self._since = None  # the fence of blocks idle since before the fences began
        self._holding: Held | None = None  # (hold) blocks handed out now go back to it
        self._held_by: dict[int, Held] = {}  # token -> the Held its block goes back to
        self.idle = 0
        self.hits = 0
        self.allocs = 0
        self.returned = 0  # blocks that came back when their arrays died

    def empty(self, shape, dtype):
        return self.take(shape, dtype)[0]

    def fences(self, on: bool, fence=None) -> None:
        """Start (with `fence`: () -> an event recorded on the compute stream) or stop
        recording the fences of blocks taken back (module doc)."""
        self.take_back()
        self.fence = fence if on else None
        self._since = fence() if on else None
        self._fences.clear()

    def take(self, shape, dtype) -> tuple:
        """(an array as `empty` gives, the fence its block's last use is behind or None)."""
        self.take_back()
        dtype = np.dtype(dtype)
        shape = tuple(shape)
        nbytes = math.prod(shape) * dtype.itemsize
        api = self._api()
        if nbytes == 0:
            return api.device_array(shape, dtype), None
        key = (api, nbytes if self._exact else size_class(nbytes))
        blocks = self._free.get(key)
        fence = None
        if blocks:
            # with fences, the block idle longest: fences pass in the order they were recorded,
            # so its readers are the likeliest to be done (the upload need not wait)
            block = blocks.pop(0 if self.fence is not None else -1)
            fence = self._fences.pop(id(block), self._since)
            self.idle -= key[1]
            self.hits += 1
        else:
            block = api.device_array(key[1], np.uint8)
            self.allocs += 1
        token = next(self._tokens)
        if self._holding is not None:
            self._held_by[token] = self._holding
        flat, lease = self._lease(block, nbytes, token)
        arr = flat.view(dtype).reshape(shape)
        self._out[token] = (key, block, id(arr), lease)
        self._by_arr[id(arr)] = (weakref.ref(arr), token)
        return arr, fence

    def _lease(self, block, nbytes: int, token: int):
        """(a flat uint8 array over the first nbytes of block, what the pool must hold for
        the lease to stay alive or None): the block comes back once no array over it lives."""
        core = getattr(block, "_ary", None)
        if core is not None:  # the simulator: host memory, NumPy's references tell
            lease = _SimLease(core, nbytes)
            weakref.finalize(lease, self._back.append, token)
            return self._api().cudadrv.devicearray.FakeCUDAArray(np.asarray(lease)), None
        # numba-cuda: views of a device array share its pointer object or take counted
        # references to its owner (driver.OwnedPointer); an AutoFreePointer calls its
        # finalizer when the count drops to zero, as numba's own allocations do
        from numba.cuda.cudadrv import devicearray, driver
        mem = block.gpu_data
        lease = driver.AutoFreePointer(mem.context, mem.device_pointer, nbytes,
                                       finalizer=lambda: self._back.append(token))
        flat = devicearray.DeviceNDArray((nbytes,), (1,), np.dtype(np.uint8),
                                         gpu_data=lease.own())
        return flat, lease

    def release(self, arr) -> None:
        """The executor is done with `arr` (one this pool handed out), before it dies."""
        self.take_back()
        entry = self._by_arr.get(id(arr))
        if entry is not None and entry[0]() is arr:
            lease = self._out[entry[1]][3]
            if lease is not None:  # numba-cuda's views reach it through weak proxies: kept
                self._held[entry[1]] = lease  # until they die, so they stay valid objects
            self._give_back(entry[1])

    def take_back(self) -> None:
        """Take back the blocks whose arrays died (finalizers only queue their tokens: one
        may run in the middle of a pool method)."""
        while self._back:
            token = self._back.popleft()
            self._held.pop(token, None)
            if self._give_back(token):
                self.returned += 1

    def _give_back(self, token: int) -> bool:
        entry = self._out.pop(token, None)
        if entry is None:  # released by the executor before its arrays died
            return False
        key, block, arr_id, _ = entry
        ref = self._by_arr.get(arr_id)
        if ref is not None and ref[1] == token:
            del self._by_arr[arr_id]
        held = self._held_by.pop(token, None)
        if held is not None and held.open:  # work captured in a CUDA graph still uses it
            held.blocks.append((key, block))
            return True
        self._free.setdefault(key, []).append(block)
        if self.fence is not None:  # (work enqueued so far includes the block's last use)
            self._fences[id(block)] = self.fence()
        self.idle += key[1]
        self.trim(self.IDLE_CAP)
        return True

    def trim(self, cap: int) -> None:
        """Let idle blocks go, the largest first, until at most `cap` bytes are idle. Under a
        budget the driver frees them at once: memory numba would free later still counts."""
        if self.idle <= cap:
            return
        dropped = False
        for key in sorted(self._free, key=lambda k: -k[1]):
            blocks = self._free[key]
            while self.idle > cap and blocks:
                self._fences.pop(id(blocks.pop(0)), None)
                self.idle -= key[1]
                dropped = True
        if dropped and self._exact:
            pending = getattr(self._api().current_context(), "deallocations", None)
            if pending is not None:  # (none under the simulator)
                pending.clear()

    @contextlib.contextmanager
    def hold(self):
        """Blocks handed out meanwhile (work a CUDA graph captures: cuda/graphs.py) never go
        back to the pool while the Held this yields is open, whenever their arrays die: the
        graph's launches would write them. `give(held)` returns them."""
        held = self._holding = Held()
        try:
            yield held
        finally:
            self._holding = None
            self.take_back()

    def give(self, held: "Held") -> None:
        """The graph that used these blocks is gone (its launches are enqueued before any
        later use): they, and those of arrays still alive when they die, come back."""
        held.open = False
        self.take_back()
        for key, block in held.blocks:
            self._free.setdefault(key, []).append(block)
            self.idle += key[1]
        held.blocks = []
        self.trim(self.IDLE_CAP)

    @contextlib.contextmanager
    def within(self, room: int):
        """The pool under a memory budget whose plan leaves `room` bytes: its idle blocks count
        as used, so at most `room` are kept (the rest let go now), and blocks are the size
        asked for (the plan counts exact bytes; a size class could waste 1/8 of them)."""
        old = self.IDLE_CAP, self._exact
        self.IDLE_CAP, self._exact = min(self.IDLE_CAP, max(room, 0)), True
        self.take_back()
        self.trim(self.IDLE_CAP)
        try:
            yield self
        finally:
            self.IDLE_CAP, self._exact = old


class Held:
    """Blocks a CUDA graph owns (DevicePool.hold)."""
    __slots__ = ("blocks", "open")

    def __init__(self):
        self.blocks: list[tuple] = []  # (free-list key, block)
        self.open = True


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

    def upload(self, dev_bytes, host_bytes: np.ndarray, stream, after=None) -> None:
        """dev_bytes[:] = host_bytes (both flat uint8), enqueued on `stream`; `after`: an
        event `stream` waits on first (the fence of dev_bytes' last use, DevicePool.take)."""
        if after is not None:
            after.wait(stream)
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


class Uploads:
    """Where uploads go (through Staging): on the compute stream, in its order; or, while
    `overlapped` runs (the budget's chunks: the next chunk's rows go up while this one's
    kernels run), on a second stream: the compute stream waits on each upload's event before
    reading it, and an upload into a pool block waits on the fence of the block's last use
    (DevicePool.take). Under the simulator streams and events do nothing: tests record the
    waits."""

    def __init__(self, api, event, pool: DevicePool, staging: Staging):
        self._api, self._event, self._pool, self._staging = api, event, pool, staging
        self._streams: dict = {}  # api (the device's, the simulator's) -> its upload stream
        self.stream = None  # the upload stream while overlapped

    @contextlib.contextmanager
    def overlapped(self, compute):
        if self.stream is not None:
            yield
            return
        api = self._api()
        if api not in self._streams:
            self._streams[api] = api.stream()
        self.stream = self._streams[api]
        self._pool.fences(True, lambda: self._fence(compute))
        try:
            yield
        finally:
            self._pool.fences(False)
            self.stream = None

    def upload(self, host_bytes: np.ndarray, compute):
        """A pool block holding host_bytes (flat uint8) for work enqueued on `compute` after
        this call."""
        block, fence = self._pool.take(host_bytes.shape, np.uint8)
        if self.stream is None:
            self._staging.upload(block, host_bytes, compute)
        else:
            self._staging.upload(block, host_bytes, self.stream, after=fence)
            self._fence(self.stream).wait(compute)
        return block

    def _fence(self, stream):
        """An event recorded on `stream` now: work enqueued after a wait on it runs after the
        work enqueued there so far."""
        ev = self._event()
        ev.record(stream)
        return ev


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
