"""bench/gpu.py's interchange section (issue 22, item 5): device arrays handed between tracer
and the GPU libraries at hand with no host copy, both ways, checked by tracer's copy counters
and against NumPy, with the time of one handoff.

In: a producer's device array becomes a tracer leaf (`np.asarray` of a CUDA array interface
object, `np.from_dlpack` of a CUDA DLPack producer), then `x * 2 + 1` is evaluated: no copy of
the data from the host (`x * 2` is computed when recorded, as values read from borrowed memory
are: two launches, the second taking its scalar as a plan parameter of a few bytes). Out: a
tracer result on the device goes to the consumer (`__cuda_array_interface__`, `__dlpack__`):
no copy to the host, and the interface names tracer's stream. Producers and consumers:
numba.cuda always; CuPy and torch where they import and see a GPU. Under --sim the simulator's
device arrays (given the CUDA array interface, which they lack) and tracer's own CUDA DLPack
export stand in for them: no library runs on the simulator."""
from __future__ import annotations

import ctypes
import statistics
import time

import numpy

N = 1 << 20  # elements handed over (4 MiB of float32); 64 under --sim


def _counters() -> tuple:
    from tracer.ir.stats import STATS
    return (STATS.h2d_copies, STATS.h2d_bytes, STATS.d2h_copies, STATS.d2h_bytes)


def _copies(c0: tuple, c1: tuple) -> dict:
    return dict(zip(("h2d_copies", "h2d_bytes", "d2h_copies", "d2h_bytes"),
                    (b - a for a, b in zip(c0, c1))))


def _timed_us(fn, repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


class _SimDevice:
    """A simulator device array with the CUDA array interface a GPU library's has."""

    def __init__(self, h):
        from numba.cuda import simulator
        self.dev = simulator.to_device(h)

    @property
    def __cuda_array_interface__(self):
        a = self.dev._ary
        return {"shape": a.shape, "typestr": a.dtype.str, "version": 3, "strides": None,
                "data": (a.ctypes.data, False), "stream": None}


class _Handed:
    """A CUDA DLPack producer that hands on tracer's own export (--sim)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kw):
        return self.t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def _producers(sim: bool, h: numpy.ndarray) -> dict:
    """name -> (device array, how tracer takes it: "asarray" or "from_dlpack")."""
    if sim:
        import tracer
        import tracer.numpy as tnp
        return {"sim_cai": (_SimDevice(h), "asarray"),
                "tracer_dlpack": (_Handed(tracer.evaluate(tnp.asarray(h) + 0)), "from_dlpack")}
    from numba import cuda
    out = {"numba": (cuda.to_device(h), "asarray")}
    try:
        import cupy
        x = cupy.asarray(h)
        out["cupy_cai"], out["cupy_dlpack"] = (x, "asarray"), (x, "from_dlpack")
    except Exception:  # noqa: BLE001 - no CuPy here: its rows are left out
        pass
    try:
        import torch
        if torch.cuda.is_available():
            out["torch_dlpack"] = (torch.from_numpy(h).cuda(), "from_dlpack")
    except Exception:  # noqa: BLE001 - no torch, or no CUDA build of it
        pass
    return out


def _consumers(sim: bool) -> dict:
    """name -> a function taking a tracer result on the device and returning NumPy values
    (the values are read apart: the handoff alone is timed and counted)."""
    from tracer import dlpack
    if sim:
        def read(ptr, shape, dtype):
            n = int(numpy.prod(shape)) * numpy.dtype(dtype).itemsize
            return numpy.frombuffer((ctypes.c_char * n).from_address(ptr), dtype).reshape(shape)

        def cai(t):
            d = t.__cuda_array_interface__
            return lambda: read(d["data"][0], d["shape"], d["typestr"])

        def dl(t):
            k = dlpack.Taken(t.__dlpack__(max_version=(1, 0)))
            return lambda: read(k.data, k.shape, k.dtype)
        return {"cai": cai, "dlpack": dl}
    from numba import cuda
    out = {"numba_cai": lambda t: (lambda d=cuda.as_cuda_array(t): d.copy_to_host())}
    try:
        import cupy
        out["cupy_cai"] = lambda t: (lambda x=cupy.asarray(t): x.get())
        out["cupy_dlpack"] = lambda t: (lambda x=cupy.from_dlpack(t): x.get())
    except Exception:  # noqa: BLE001 - no CuPy here
        pass
    try:
        import torch
        if torch.cuda.is_available():
            out["torch_dlpack"] = lambda t: (lambda x=torch.from_dlpack(t): x.cpu().numpy())
    except Exception:  # noqa: BLE001 - no torch with CUDA here
        pass
    return out


def run(sim: bool) -> dict:
    import tracer
    import tracer.numpy as tnp
    from tracer.cuda_kernels import backends
    n = 64 if sim else N
    repeat = 3 if sim else 50
    h = numpy.arange(n, dtype=numpy.float32) % 97
    rows, ok = [], True
    for name, (x, how) in _producers(sim, h).items():
        take = tnp.asarray if how == "asarray" else tnp.from_dlpack
        row = {"way": "in", "who": name, "by": how}
        try:
            c0 = _counters()
            t = take(x)
            r = tracer.evaluate(t * 2 + 1)
            row.update(_copies(c0, _counters()))
            row["correct"] = bool(numpy.array_equal(numpy.asarray(r), h * 2 + 1))
            row["handoff_us"] = _timed_us(lambda: take(x), repeat)
            # (a few bytes may go up: a scalar a cached plan takes as a parameter)
            row["ok"] = row["correct"] and row["h2d_bytes"] < h.nbytes
        except Exception as e:  # noqa: BLE001 - recorded; the other rows still run
            row.update(ok=False, error=f"{type(e).__name__}: {e}")
        ok = ok and row["ok"]
        rows.append(row)
    stream = backends.get("cuda").stream_handle()
    for name, give in _consumers(sim).items():
        row = {"way": "out", "who": name}
        try:
            t = tracer.evaluate(tnp.asarray(h) * 3)
            c0 = _counters()
            values = give(t)
            row.update(_copies(c0, _counters()))
            row["correct"] = bool(numpy.array_equal(values(), h * 3))
            row["cai_stream"] = t.__cuda_array_interface__["stream"]
            row["stream_is_tracers"] = row["cai_stream"] == stream
            row["handoff_us"] = _timed_us(lambda: give(t), repeat)
            row["ok"] = row["correct"] and row["d2h_copies"] == 0 and row["stream_is_tracers"]
        except Exception as e:  # noqa: BLE001 - recorded; the other rows still run
            row.update(ok=False, error=f"{type(e).__name__}: {e}")
        ok = ok and row["ok"]
        rows.append(row)
    return {"elements": n, "dtype": "float32", "rows": rows, "ok": ok}
