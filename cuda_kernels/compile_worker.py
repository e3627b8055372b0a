"""What a compile worker runs: `warm` once when it starts (Numba's one-off set-up, about 1 s,
done before the first job rather than inside it), then `compile_one` per kernel."""
from __future__ import annotations

import time

from numba import njit, prange


@njit(parallel=True, cache=False)
def _warm(x):
    for i in prange(x.shape[0]):
        x[i] = x[i] * 2.0


def warm() -> None:
    from numba import types
    _warm.compile((types.float64[::1],))


def compile_one(path: str, module: str, name: str, sig: tuple) -> float:
    """Compile kernel `name` of generated module `module` for argument types `sig`; Numba's
    disk cache keeps the result for the parent. Returns the seconds it took."""
    from .compiler import import_module
    t0 = time.perf_counter()
    fn = getattr(import_module(module, path), name)
    fn.compile(sig)
    return time.perf_counter() - t0

