"""tracer: a lazy, NumPy-compatible array runtime that compiles to fused Numba kernels.

    import tracer
    import tracer.numpy as np

It imports nothing of the package at load time: each public name is imported from the module
that defines it on first use (PEP 562, `tracer.ir.exports`), after `tracer.numpy`, whose
import installs the lazy array's operators and methods, so no array is seen without them.
"""
from __future__ import annotations

from tracer.ir.exports import attach

__version__ = "0.1.0"

_EXPORTS = {  # public name -> the module that defines it
    "CONFIG": "tracer.ir.config", "context": "tracer.ir.config", "stats": "tracer.ir.stats",
    "reset_stats": "tracer.ir.stats", "ndarray": "tracer.array", "evaluate": "tracer.array",
    "explain": "tracer.explainer", "Plan": "tracer.explainer",
    "TracerFallbackWarning": "tracer.fallback", "coverage_report": "tracer.fallback",
    "numpy": "tracer",  # the submodule: an attribute of the package once imported
    "jit": "tracer.replay", "memory_budget": "tracer.budget", "MemoryBudgetError": "tracer.budget",
    "cluster": "tracer.dask_cluster",
}
__all__ = ["__version__", *_EXPORTS]

# tracer.numpy first: importing it installs the lazy array's operators and methods
__getattr__, __dir__ = attach(globals(), _EXPORTS, first="tracer.numpy")
