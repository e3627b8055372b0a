"""tracer: a lazy, NumPy-compatible array runtime that compiles to fused Numba kernels.

    import tracer
    import tracer.numpy as np
"""
from __future__ import annotations

__version__ = "0.1.0"

from tracer.ir.config import CONFIG, context
from tracer.ir.stats import reset_stats, stats
from .array import evaluate, ndarray
from .budget import MemoryBudgetError, memory_budget
from .explain import Plan, explain
from .fallback import TracerFallbackWarning, coverage_report
from .jit import jit
from . import methods, numpy  # noqa: F401

methods.install()  # the lazy array's operators and methods, now that all they call is loaded

__all__ = ["__version__", "CONFIG", "context", "stats", "reset_stats", "ndarray", "evaluate", "explain", "Plan",
           "TracerFallbackWarning", "coverage_report", "numpy", "jit", "memory_budget",
           "MemoryBudgetError"]
