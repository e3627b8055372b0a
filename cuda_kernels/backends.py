"""The backend registry: `get(name)` gives the one instance of a backend, made at first use;
`default_backend` picks one; `to_host` reads a buffer back."""
from __future__ import annotations

import functools

from tracer.ir.node import Buffer
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


@functools.lru_cache(maxsize=None)
def _cuda_available() -> bool:
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
    if buf.host is None:
        buf.host = get("cuda").to_host(buf.value)
    return buf.host
