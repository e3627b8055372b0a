"""The backend registry: `get(name)` gives the one instance of a backend, made at first use;
`default_backend` picks one; `to_host` reads a buffer back."""
from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import TYPE_CHECKING

from tracer.ir.node import Buffer

if TYPE_CHECKING:  # annotations only: base loads with the first backend
    from .base import Backend

_BACKENDS: dict[str, Backend] = {}


def backend_class(name: str) -> type[Backend]:
    """The class of backend `name`, imported at first use: numba loads with the first kernel a
    program needs, not with `import tracer.numpy` (a script whose ops all run eagerly never
    loads it)."""
    if name == "cpu":
        from .cpu.backend import CpuBackend  # lazy: it imports numba
        return CpuBackend
    if name == "cuda":
        from .cuda.backend import CudaBackend  # lazy: it imports numba (numba.cuda on use)
        return CudaBackend
    raise KeyError(name)


def get(name: str) -> Backend:
    if name not in _BACKENDS:
        _BACKENDS[name] = backend_class(name)()
    return _BACKENDS[name]


# the names Numba's CUDA driver tries to load on Linux (numba.cuda.cudadrv.driver), in order
_DRIVER_LIBS = ("libcuda.so", "libcuda.so.1", "/usr/lib/libcuda.so", "/usr/lib/libcuda.so.1",
                "/usr/lib64/libcuda.so", "/usr/lib64/libcuda.so.1")


def _no_driver() -> bool:
    """Whether Numba would find no CUDA driver library, asked without importing Numba (a few
    hundred milliseconds): a machine without a GPU picks the cpu backend at no cost. The
    simulator needs no driver; other systems are left to Numba."""
    if sys.platform != "linux" or os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return False
    for name in _DRIVER_LIBS:
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        return False
    return True


@functools.lru_cache(maxsize=None)
def _cuda_available() -> bool:
    if _no_driver():
        return False
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - no driver, no toolkit: no GPU
        return False


def default_backend(requested: str = "") -> str:
    if requested:
        if requested not in ("cpu", "cuda"):
            raise ValueError(f"TRACER_BACKEND must be cpu or cuda, not {requested!r}")
        return requested
    return "cuda" if _cuda_available() else "cpu"


def to_host(buf: Buffer):
    """The host (NumPy) value of a buffer, copied from the device once and kept."""
    host = buf.host
    if host is None:
        fetch = getattr(buf, "fetch", None)  # a value held elsewhere (tracer.cluster)
        if fetch is not None:
            return fetch()
        host = buf.host = get("cuda").to_host(buf.value)  # (a Borrowed buffer keeps none)
    return host
