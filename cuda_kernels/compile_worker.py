"""What a compile worker runs: `compile_one` per kernel. A worker's first job also pays
Numba's one-off set-up in that process (about a second); no warm-up job runs before it, as
one would only add its own compile to that."""
from __future__ import annotations

import time


def compile_one(path: str, module: str, name: str, sig: tuple) -> float:
    """Compile kernel `name` of generated module `module` for argument types `sig`; Numba's
    disk cache keeps the result for the parent. Returns the seconds it took."""
    from .compiler import import_module
    t0 = time.perf_counter()
    fn = getattr(import_module(module, path), name)
    fn.compile(sig)
    return time.perf_counter() - t0
