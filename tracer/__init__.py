"""tracer: a lazy, NumPy-compatible array runtime that compiles to fused Numba kernels.

    import tracer
    import tracer.numpy as np
"""
from __future__ import annotations

__version__ = "0.1.0"

from tracer.ir.config import CONFIG, context
from tracer.ir.stats import reset_stats, stats
from .array import ndarray
from .fallback import TracerFallbackWarning, coverage_report
from .array import evaluate
from .explain import Plan, explain
from . import numpy  # noqa: F401
from .jit import jit
from .budget import MemoryBudgetError, memory_budget

__all__ = ["__version__", "CONFIG", "context", "stats", "reset_stats", "ndarray", "evaluate", "explain", "Plan",
           "TracerFallbackWarning", "coverage_report", "numpy", "jit", "memory_budget",
           "MemoryBudgetError"]
