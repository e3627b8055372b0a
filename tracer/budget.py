"""`tracer.memory_budget`: evaluations that hold at most a given number of bytes of intermediates.

The budget covers the buffers an evaluation allocates for its intermediate values (planned by
buffer assignment's liveness, then measured while it runs). The inputs and the requested
outputs are the user's and are not counted. A program whose plan needs more is split along
the rows of an input that its outputs depend on row by row (opt/splitter.py), in chunks whose
plan fits; a program that cannot be made to fit raises MemoryBudgetError before anything is
allocated.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ir import Buffer, make, toposort
from ir.liveness import VIEW_OPS
from ir.stats import STATS
from cuda_kernels.executor import over_one_element
from opt import splitter
from opt.splitter import row_block

_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*$", re.I)


class MemoryBudgetError(MemoryError):
    """An evaluation's intermediates cannot be made to fit the active memory_budget; raised
    before anything is allocated."""


@dataclass(frozen=True)
class Budget:
    limit: int        # bytes of intermediates an evaluation may hold
    split_size: int   # largest chunk of a split value, in bytes


_STACK: list[Budget] = []


def active() -> Budget | None:
    """The innermost memory_budget in force, or None."""
    return _STACK[-1] if _STACK else None


def free_bytes(backend: str) -> int:
    """Memory free now: the device's for cuda, the host's (psutil) otherwise."""
    if backend == "cuda":
        from numba import cuda
        return int(cuda.current_context().get_memory_info().free)
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
        m = _SIZE.match(limit)
        if m is None or m.group(2).lower() not in _UNITS:
            raise ValueError(f"memory_budget: cannot read {limit!r} as a size (examples: "
                             "1000000, '512 MiB', '2GB', '50%')")
        limit = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if limit <= 0:
        raise ValueError(f"memory_budget: the limit must be positive, not {limit!r}")
    return int(limit)


class memory_budget:
    """`with tracer.memory_budget("1 GiB"):` evaluations inside hold at most this many bytes
    of intermediate buffers (the inputs and the requested outputs are the user's and are not
    counted). `limit`: bytes, a string such as "512 MiB" or "2GB", or "50%" of the memory
    free when the block is entered (the device's on the cuda backend). `split_size`: the
    largest chunk of a split value, in bytes (default: a quarter of the limit). Budgets nest;
    the innermost is in force."""

    def __init__(self, limit, split_size=None):
        from .runtime import backend
        limit = parse_size(limit, backend())
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


# ------------------------------------------------------------------ budgeted evaluation

def _largest(program, k: int = 3) -> str:
    """The biggest intermediates of a program and the ops that make them."""
    roots = {id(r) for r in program.roots}
    made = [n for n in _made(program) if id(n) not in roots and n.nbytes]
    made.sort(key=lambda n: -n.nbytes)
    parts = []
    for n in made[:k]:
        what = n.op
        if n.op == "fusion":
            ops = [m.op for m in toposort([n.attr("body")]) if m.op not in ("param", "const", "tuple")]
            what = f"a fused kernel of {', '.join(dict.fromkeys(ops))}"
        parts.append(f"{n.dtype}{list(n.shape)} ({fmt_bytes(n.nbytes)}) made by {what}")
    return "; ".join(parts) or "none"


def over_budget(program, budget: Budget, why: str, smallest: int) -> MemoryBudgetError:
    return MemoryBudgetError(
        f"tracer.memory_budget: this evaluation plans {fmt_bytes(program.peak_bytes)} of "
        f"intermediate buffers, over the budget of {fmt_bytes(budget.limit)}; {why}. Largest "
        f"buffers: {_largest(program)}. The smallest budget that would work: "
        f"{fmt_bytes(smallest)} ({smallest} bytes).")


def _stand_in(n):
    """A leaf of n's type and C layout over one element of memory: enough to plan a chunk
    (planning reads no values)."""
    return make("input", (), n.shape, n.dtype,
                (("buf", Buffer(over_one_element(n.shape, n.dtype))),))


def _made(program) -> list:
    """The values a program allocates (views and leaves hold no memory of their own)."""
    return [n for n in program.order if n.op not in ("input", "const", "output") + VIEW_OPS]


def _chunk_need(targets, split, rows: int, src_rows, realized, be) -> int:
    """Bytes a chunk of `rows` holds: its planned peak plus its results."""
    from . import plans
    g = splitter.chunk_graph(targets, split, 0, rows, src_rows(0, rows), realized)
    program, _, _ = plans.plan(g, be)
    return program.peak_bytes + sum(n.nbytes for n in g)


def _leaf_of(n, value):
    return make("input", (), n.shape, n.dtype, (("buf", Buffer(value)),))


def run_split(roots, program, budget: Budget, be: str, execute) -> list:
    """Evaluate roots within the budget by splitting (opt/splitter.py), or raise
    MemoryBudgetError before anything is allocated. `execute(roots)` evaluates a graph.

    Stages: the values the chunks read whole (and outputs independent of the split rows);
    the chunks, each writing its rows of the row-wise outputs and adding its partial to each
    reduction over the rows (combined in chunk order); then the outputs computed from those
    combined reductions."""
    from . import plans
    split = splitter.find(roots)
    if split is None:
        raise over_budget(program, budget, "no input or value has rows that every output "
                          "follows, so it cannot be split", program.peak_bytes)
    deps = [(r, a) for r, a in zip(roots, split.root_axes) if isinstance(a, int)]
    cuts = [c for c, _ in split.cuts.values()]
    targets = deps + [(c, None) for c in cuts]
    post = [r for r, a in zip(roots, split.root_axes) if a == splitter.CUT and id(r) not in
            split.cuts]
    pre = ([split.source] if split.source.op != "input" else []) + split.frontier + \
        [r for r, a in zip(roots, split.root_axes) if a is None]
    pre = list({id(n): n for n in pre}.values())
    held = sum(n.nbytes for n in pre) + sum(c.nbytes for c in cuts)  # held through the chunks
    # plan the chunks on stand-ins of the realized values: nothing is allocated yet
    stand = {id(n): _stand_in(n) for n in pre}
    if split.source.op == "input":
        whole = split.source.attr("buf").value
        src_rows = lambda lo, hi: row_block(whole, split.axis, lo, hi)  # noqa: E731
    else:
        src_rows = lambda lo, hi: row_block(stand[id(split.source)].attr("buf").value,  # noqa: E731
                                        split.axis, lo, hi)
    n_rows = split.rows
    # start from chunks whose biggest value is about split_size (the big values grow with the
    # rows), then shrink until the chunk's plan fits beside what is held
    biggest = max([n.nbytes for n in _made(program)] + [1])
    rows = max(1, min(n_rows, int(n_rows * budget.split_size / biggest)))
    need = _chunk_need(targets, split, rows, src_rows, stand, be)
    while held + need > budget.limit:
        if rows == 1:
            raise over_budget(program, budget, f"split into single rows along axis "
                              f"{split.axis} of {split.source.dtype}{list(split.source.shape)}"
                              f" it still needs {fmt_bytes(held + need)}", held + need)
        room = max(budget.limit - held, 1)
        rows = max(1, min(rows - 1, int(rows * room / need * 0.95)))
        need = _chunk_need(targets, split, rows, src_rows, stand, be)
    if post:
        post_program, _, _ = plans.plan(
            splitter.chunk_graph([(r, None) for r in post], split, 0, 0, None,
                                 {**stand, **{id(c): _stand_in(c) for c in cuts}}), be)
        if post_program.peak_bytes + held > budget.limit:
            raise over_budget(post_program, budget, "what follows the split reductions does "
                              "not fit", post_program.peak_bytes + held)
    # run: the values read whole first, then the chunks into the outputs
    realized = {}
    if pre:
        pre_program, _, _ = plans.plan(pre, be)
        if pre_program.peak_bytes + held > budget.limit:
            raise over_budget(pre_program, budget, "the values the chunks read whole do not "
                              "fit beside them", pre_program.peak_bytes + held)
        for n, buf in zip(pre, execute(pre)):
            realized[id(n)] = make("input", (), n.shape, n.dtype, (("buf", buf),))
    measured = STATS.measured_peak_bytes + held if pre else 0
    if split.source.op != "input":
        whole = realized[id(split.source)].attr("buf").value
        src_rows = lambda lo, hi: row_block(whole, split.axis, lo, hi)  # noqa: E731
    outs = [np.empty(r.shape, r.dtype) for r, _ in deps]
    partial: list = [None] * len(cuts)
    for lo in range(0, n_rows, rows):
        hi = min(lo + rows, n_rows)
        g = splitter.chunk_graph(targets, split, lo, hi, src_rows(lo, hi), realized)
        bufs = execute(g)
        for out, (_, ax), buf in zip(outs, deps, bufs):
            row_block(out, ax, lo, hi)[...] = buf.value
        for j, (c, buf) in enumerate(zip(cuts, bufs[len(deps):])):
            part = np.asarray(buf.value)
            partial[j] = part if partial[j] is None else \
                getattr(np, splitter.COMBINE[c.op])(partial[j], part).astype(c.dtype)
        measured = max(measured, held + STATS.measured_peak_bytes + sum(n.nbytes for n in g))
    planned = held + need
    result = {id(r): Buffer(o) for (r, _), o in zip(deps, outs)}
    for c, v in zip(cuts, partial):
        realized[id(c)] = _leaf_of(c, np.asarray(v, c.dtype))
        result[id(c)] = realized[id(c)].attr("buf")
    if post:
        g = splitter.chunk_graph([(r, None) for r in post], split, 0, 0, None, realized)
        for r, buf in zip(post, execute(g)):
            result[id(r)] = buf
        measured = max(measured, held + STATS.measured_peak_bytes)
        planned = max(planned, held + post_program.peak_bytes)
    STATS.measured_peak_bytes = measured
    STATS.planned_peak_bytes = planned
    STATS.split_chunks += -(-n_rows // rows)
    for r in roots:
        if id(r) not in result:
            result[id(r)] = realized[id(r)].attr("buf")
    return [result[id(r)] for r in roots]
