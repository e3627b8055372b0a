"""`tracer.memory_budget`: evaluations that allocate at most a given number of bytes.

The budget covers the memory an evaluation allocates: its intermediate values (planned by
buffer assignment's liveness, then measured while it runs) and its results, which are new
memory too. The inputs (and results that are inputs or views of them) are the user's, already
held, and are not counted. The planned need, peak of intermediates plus results, bounds what
the run holds; the tiered path (cuda_kernels/tiled.py) keeps within what the plan leaves. A
program whose plan needs more is split along the rows of a value that its outputs depend on
row by row (opt/splitter.py), in chunks whose need fits beside what the split holds; a program
that cannot be made to fit raises MemoryBudgetError before anything is allocated, naming the
smallest budget that works.

This module is the budget itself (the active budget, sizes, the error), which the eager paths
ask about at every op; running a program within it is tracer/budgeted.py, loaded with the
engine on the first lazy evaluation.
"""
from __future__ import annotations

import contextlib
import re
from typing import NamedTuple

from tracer.ir.config import CONFIG
from tracer.cuda_kernels import backends

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = r"^\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*$"  # compiled at first use (re caches it)


class MemoryBudgetError(MemoryError):
    """An evaluation cannot be made to fit the active memory_budget; raised before anything
    is allocated."""


class Budget(NamedTuple):  # (a frozen dataclass would cost a millisecond at import)
    limit: int        # bytes an evaluation may allocate: intermediates and results
    split_size: int   # largest chunk of a split value, in bytes


_STACK: list[Budget] = []


def active() -> Budget | None:
    """The innermost memory_budget in force, or None."""
    return _STACK[-1] if _STACK else None


def free_bytes(backend: str) -> int:
    """Memory free now: the device's for cuda (with the pool's idle blocks, which are this
    process's to use), the host's (psutil) otherwise."""
    if backend == "cuda":
        from numba import cuda
        return int(cuda.current_context().get_memory_info().free) + \
            backends.get("cuda").pool.idle
    import psutil
    return int(psutil.virtual_memory().available)


def parse_size(limit, backend: str = "cpu") -> int:
    """Bytes from an int, "512 MiB", "2GB", "1.5 GiB" or "50%" (of the memory free now)."""
    if isinstance(limit, bool) or not isinstance(limit, (int, float, str)):
        raise TypeError(f"memory_budget: limit must be bytes or a string such as '512 MiB', "
                        f"not {type(limit).__name__}")
    if isinstance(limit, str) and limit.strip().endswith("%"):
        try:
            pct = float(limit.strip()[:-1])
        except ValueError:
            raise ValueError(f"memory_budget: cannot read {limit!r} as a percentage") from None
        if not 0 < pct <= 100:
            raise ValueError(f"memory_budget: a percentage must be in (0, 100], not {limit!r}")
        return int(free_bytes(backend) * pct / 100)
    if isinstance(limit, str):
        m = re.match(_SIZE, limit, re.I)
        if m is None or m.group(2).lower() not in _UNITS:
            raise ValueError(f"memory_budget: cannot read {limit!r} as a size (examples: "
                             "1000000, '512 MiB', '2GB', '50%')")
        limit = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if limit <= 0:
        raise ValueError(f"memory_budget: the limit must be positive, not {limit!r}")
    return int(limit)


class memory_budget:
    """`with tracer.memory_budget("1 GiB"):` evaluations inside allocate at most this many
    bytes, intermediates and results (the inputs are the user's and are not counted).
    `limit`: bytes, a string such as "512 MiB" or "2GB", or "50%" of the memory free when the
    block is entered (the device's on the cuda backend). `split_size`: the largest chunk of a
    split value, in bytes (default: a quarter of the limit). Budgets nest; the innermost is in
    force."""

    def __init__(self, limit, split_size=None):
        limit = parse_size(limit, backends.default_backend(CONFIG.backend))
        split = limit // 4 if split_size is None else parse_size(split_size)
        self.budget = Budget(limit, max(1, split))

    @property
    def limit(self) -> int:
        return self.budget.limit

    def __enter__(self):
        _STACK.append(self.budget)
        return self

    def __exit__(self, *exc):
        _STACK.pop()
        return False


def fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


@contextlib.contextmanager
def beside(budget: Budget, held: int):
    """Evaluations inside run within what `held` bytes leave of the budget."""
    _STACK.append(Budget(max(1, budget.limit - held), budget.split_size))
    try:
        yield
    finally:
        _STACK.pop()
