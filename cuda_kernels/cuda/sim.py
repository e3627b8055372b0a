"""Fixes for kernels run by Numba's CUDA simulator: a `math` that gives NaN and +-inf where
Python's raises (sqrt(-1), log(0), exp(1000)) as the device does, and shared arrays made
atomically (`shared_arrays_once`)."""
from __future__ import annotations

import sys
import threading

import numpy as np

_NP_MATH = {"sqrt": np.sqrt, "log": np.log, "log2": np.log2, "log10": np.log10,
            "log1p": np.log1p, "exp": np.exp, "expm1": np.expm1, "pow": np.power,
            "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
            "sinh": np.sinh, "cosh": np.cosh, "acosh": np.arccosh, "atanh": np.arctanh,
            "hypot": np.hypot, "fmod": np.fmod}


def _ieee(f, uf):
    def g(*args):
        try:
            return f(*args)
        except (ValueError, OverflowError, ZeroDivisionError):
            with np.errstate(all="ignore"):
                return uf(*(np.float64(a) for a in args))
    return g


class _SimMath:
    """`math` for kernels run by the simulator. Python's math raises on a domain error or an
    overflow (sqrt(-1), log(0), exp(1000)) where the device returns NaN or +-inf; those cases
    fall back to NumPy's ufunc, which gives the IEEE result. `trunc` also takes NumPy float32
    scalars (which have no __trunc__). Other calls are Python's."""

    def __init__(self):
        import math
        self.__dict__.update({k: getattr(math, k) for k in dir(math) if not k.startswith("_")})
        self.__dict__.update({k: _ieee(getattr(math, k), uf) for k, uf in _NP_MATH.items()})
        self.trunc = lambda a: math.trunc(float(a) if isinstance(a, np.floating) else a)


_SIM_MATH = None


def sim_math(*kernels) -> None:
    """Give simulated kernels (and the device helpers in their module) the IEEE `math`."""
    global _SIM_MATH
    if _SIM_MATH is None:
        _SIM_MATH = _SimMath()
    for k in kernels:
        g = getattr(getattr(k, "fn", None), "__globals__", None)
        if g is not None and g.get("math") is not _SIM_MATH:
            g["math"] = _SIM_MATH


_SHARED_LOCK = threading.Lock()


def shared_arrays_once() -> None:
    """Make the simulator's `cuda.shared.array` atomic. numba-cuda's simulator gives a block
    one array per calling line, made by the first thread that asks, but its check-then-store is
    not atomic: two threads of a block that both find no array yet each make their own, and
    each then sees only its own writes (a tile of the transpose kernel came back half
    uninitialized). The same lookup, under a lock."""
    from numba.cuda import types
    from numba.cuda.np import numpy_support
    from numba.cuda.simulator import kernelapi
    cls = kernelapi.FakeCUDAShared
    if getattr(cls, "_tracer_atomic", False):
        return
    unlocked = cls.array

    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None:  # dynamic shared memory: no lookup
            return unlocked(self, shape, dtype, alignment)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        f = sys._getframe(1)
        caller = (f.f_code.co_filename, f.f_lineno)
        with _SHARED_LOCK:
            res = self._allocations.get(caller)
            if res is None:
                res = self._allocations[caller] = np.empty(shape, dtype)
        return res
    cls.array = array
    cls._tracer_atomic = True


def warp_shuffles() -> None:
    """Give the simulator `cuda.shfl_down_sync`, which it lacks. Each thread posts its value,
    the block meets at its barrier, each reads the value of the thread `delta` lanes down (its
    own past the warp or the block), and the block meets again before the posts are reused. So
    every thread of a block must shuffle together: the reduction kernels that shuffle
    (cuda/reduce.py, the warp form) keep their warps in step for this, and the device needs
    whole warps anyway."""
    from numba.cuda.simulator import kernelapi
    cls = kernelapi.FakeCUDAModule
    if hasattr(cls, "shfl_down_sync"):
        return

    def shfl_down_sync(self, mask, value, delta):
        t = threading.current_thread()
        d = self.blockDim
        tid = t.threadIdx.x + d.x * (t.threadIdx.y + d.y * t.threadIdx.z)
        with _SHARED_LOCK:
            posts = self.__dict__.setdefault("_tracer_shfl", {}).setdefault(
                (t.blockIdx.x, t.blockIdx.y, t.blockIdx.z), {})
        posts[tid] = value
        self.syncthreads()
        src = tid + delta
        got = posts[src] if tid % 32 + delta < 32 and src < d.x * d.y * d.z else value
        self.syncthreads()
        return got
    cls.shfl_down_sync = shfl_down_sync


def sim_ldcg(a, i):
    """`ld.global.cg` (a load past L1, cuda/reduce.py's block form) for simulated kernels."""
    return a[i]


def sim_vector(w: int) -> tuple:
    """(_vld, _vst) of w lanes (cuda/vector.py) for simulated kernels: the lanes as a tuple,
    a tuple stored element by element."""
    def vld(a, b):
        return tuple(a[b + k] for k in range(w))

    def vst(a, b, vals):
        for k in range(w):
            a[b + k] = vals[k]
    return vld, vst
