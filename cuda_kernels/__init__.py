"""Codegen, kernel cache and launch for the `cpu` (numba.njit) and `cuda` (numba.cuda) backends.

It imports nothing of the package at load time: each public name is imported from the
submodule that defines it on first use (PEP 562, `tracer.ir.exports`), so
`import tracer.cuda_kernels.x` runs no other submodule.
"""
from __future__ import annotations

import os

from tracer.ir.exports import attach

# Numba's OpenMP workers spin about 300000 rounds after each parallel kernel before they sleep;
# on a small machine they then starve OpenBLAS's threads in the matmul that follows, and the
# reverse (min-distance 4000^2: 43 -> 33 ms median, far fewer 4 ms stalls). Read by libgomp
# when Numba first loads it; a value the user set is kept.
os.environ.setdefault("GOMP_SPINCOUNT", "10000")

_EXPORTS = {  # public name -> the submodule that defines it
    "Program": ".executor", "lower": ".executor", "run": ".executor", "Kernel": ".compiler",
    "default_backend": ".backends", "to_host": ".backends", "snapshot": ".threads",
}
__all__ = list(_EXPORTS)

__getattr__, __dir__ = attach(globals(), _EXPORTS)
