"""A stand-in for CuPy (cuda/libs.py's library) for the tests of the cuda backend's library
ops on the simulator: the names libs.py uses, NumPy underneath over the very memory it is
handed, every call recorded. Plus the helpers those tests share."""
from __future__ import annotations

import contextlib
import ctypes
import types

import numpy

import tracer
import tracer.numpy as np
from tracer.cuda_kernels.cuda import libs
from tracer.cuda_kernels.cuda.memory import size_class
from tracer.ir.stats import STATS

from counters import Delta

SCRATCH = 4104  # bytes of scratch the fake argsort asks for (a size nothing else uses)


def idle(pool, nbytes: int) -> bool:
    """The pool holds an idle block of nbytes' size class."""
    return any(k[1] == size_class(nbytes) and v for k, v in pool._free.items())


def fake_cupy(device_count: int = 1):
    """A stand-in for CuPy: the names libs.py uses, NumPy underneath, every call recorded with
    the stream and device current at the time."""
    log: list = []
    state = {"stream": None, "device": None, "allocator": None}

    def rec(name, fn):
        def call(*a, **k):
            log.append((name, state["stream"], state["device"], a, k))
            return fn(*a, **k)
        return call

    @contextlib.contextmanager
    def using(key, value):
        old, state[key] = state[key], value
        try:
            yield
        finally:
            state[key] = old

    class Stream:
        @classmethod
        def from_external(cls, obj):
            s = cls()
            s.obj = obj
            return s

        def __enter__(self):
            self._cm = using("stream", self.obj)
            self._cm.__enter__()

        def __exit__(self, *exc):
            self._cm.__exit__(*exc)

    def unowned(ptr, size, owner, dev):
        return types.SimpleNamespace(ptr=ptr, size=size, owner=owner, device=dev)

    def ndarray(shape, dtype, memptr, strides):
        m = memptr.mem
        log.append(("wrap", state["stream"], state["device"], (m.ptr, m.size, shape, strides),
                    {}))
        buf = (ctypes.c_char * max(m.size, 1)).from_address(m.ptr)
        return numpy.ndarray(shape, dtype, buffer=buf, strides=strides)

    runtime = types.SimpleNamespace(getDeviceCount=lambda: device_count)
    cuda = types.SimpleNamespace(
        runtime=runtime, Stream=Stream, UnownedMemory=unowned,
        MemoryPointer=lambda mem, off: types.SimpleNamespace(mem=mem, off=off),
        Device=lambda dev: using("device", dev),
        using_allocator=lambda fn: using("allocator", fn))

    def argsort(a, axis):
        state["allocator"](SCRATCH)  # (Thrust's temporary storage), let go at once
        return numpy.argsort(a, axis=axis, kind="stable")

    mod = types.SimpleNamespace(
        cuda=cuda, ndarray=ndarray, matmul=rec("matmul", numpy.matmul),
        copyto=rec("copyto", numpy.copyto), isnan=rec("isnan", numpy.isnan),
        argsort=rec("argsort", argsort), searchsorted=rec("searchsorted", numpy.searchsorted),
        count_nonzero=rec("count_nonzero", numpy.count_nonzero),
        cumsum=rec("cumsum", numpy.cumsum), cumprod=rec("cumprod", numpy.cumprod))
    mod.log = log
    return mod


def use_fake(monkeypatch):
    """The fake library, taken as usable (as on a GPU) although the simulator runs (each test
    module's `fake` fixture)."""
    cp = fake_cupy()
    monkeypatch.setattr(libs, "_LOADED", [cp])
    monkeypatch.setattr(libs, "_BROKEN", {})
    monkeypatch.setattr(libs, "_STREAMS", {})
    monkeypatch.setattr(libs, "usable", lambda: True)
    return cp


def calls(cp, name):
    return [e for e in cp.log if e[0] == name]


def rand(shape, dtype=numpy.float32, seed=0):
    rng = numpy.random.default_rng(seed)
    if numpy.dtype(dtype).kind in "iu":
        return rng.integers(-9, 10, shape).astype(dtype)
    h = rng.standard_normal(shape)
    if numpy.dtype(dtype).kind == "c":
        h = h + 1j * rng.standard_normal(shape)
    return h.astype(dtype)


def run(fn, *hs):
    """fn of lazy copies of hs, evaluated; (its value on the host, the counters' changes)."""
    xs = [np.asarray(h) for h in hs]
    tracer.reset_stats()
    with Delta() as d:
        out = fn(*xs)
        got = numpy.asarray(out)
    d.library_calls, d.library_fallbacks = STATS.library_calls, STATS.library_fallbacks
    return got, d
