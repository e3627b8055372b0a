"""The pass pipeline: one visible list. The driver times each pass, can switch any off by name
(TRACER_DISABLE_PASSES), dumps the graph after each (TRACER_DUMP), verifies between passes
(TRACER_VERIFY=1, always on in tests) and names the passes already run when one fails."""
from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from tracer.ir import Node, format_graph, toposort, verify
from tracer.ir.config import CONFIG
from .distance import euclidean_distance
from .buffer_assignment import buffer_assignment
from .dots import dot_decompose, dot_merge, matrix_chain
from .fusion import fusion, fusion_merger, multi_output_fusion
from .horizontal import horizontal_fusion
from .scatter_expander import scatter_expander
from .simplify import constant_folding, cse, dce, simplify
from .sinking import sink_movement
from .tree_reduction import tree_reduction

Pass = Callable[[list[Node]], list[Node]]

PIPELINE: list[tuple[str, Pass, str]] = [
    ("simplify", simplify, "algebraic identities (x*1, -(-x), transpose pairs) shrink the graph"),
    ("constant_folding", constant_folding, "ops on constants become one constant"),
    ("sink_movement", sink_movement,
     "transposes and reshapes move past elementwise ops and into reductions: longer chains"),
    ("euclidean_distance", euclidean_distance,
     "sum((a-b)**2, -1) over point pairs becomes norms and one GEMM (first: it makes a dot)"),
    ("matrix_chain", matrix_chain,
     "products in their cheapest order, while vector ends, transposes and sums still show"),
    ("dot_decompose", dot_decompose,
     "canonical [B,M,K]x[B,K,N] dots with transposes folded into flags (after the reordering)"),
    ("dot_merge", dot_merge, "independent small dots sharing an operand become one (on canonical "
     "dots, as in XLA)"),
    ("cse", cse, "one node per distinct computation, also for what rewrites created"),
    ("dce", dce, "a slice write overwritten by a later write of the same slice is dead"),
    ("tree_reduction", tree_reduction,
     "long reductions with few outputs become two parallel stages of ~sqrt(n), no atomics"),
    ("scatter_expander", scatter_expander,
     "scatters and gathers of one constant position become slice writes and slices"),
    ("fusion", fusion, "elementwise chains and reduction prologues/epilogues become one kernel"),
    ("fusion_merger", fusion_merger,
     "a cheap fusion read by other fusions is recomputed in them when that moves fewer bytes"),
    ("multi_output_fusion", multi_output_fusion,
     "siblings reading one value, and a producer with its consumer, share one kernel and one read"),
    ("horizontal_fusion", horizontal_fusion,
     "independent small loop kernels become one launch: launch overhead dominates them"),
    ("buffer_assignment", buffer_assignment,
     "slice writes and scatters into a buffer nothing reads afterwards update it in place"),
]


class PassError(RuntimeError):
    pass


@dataclass(frozen=True)
class PassEffect:
    """What one pass run did to the graph: its time and the op histogram before and after."""
    name: str
    seconds: float
    changed: bool
    ops_before: Counter
    ops_after: Counter
    disabled: bool = False

    @property
    def nodes_before(self) -> int:
        return sum(self.ops_before.values())

    @property
    def nodes_after(self) -> int:
        return sum(self.ops_after.values())

    def op_delta(self) -> list[tuple[str, int]]:
        """Ops whose count changed, biggest change first: [("multiply", -3), ("fusion", 1)]."""
        ops = set(self.ops_before) | set(self.ops_after)
        delta = [(op, self.ops_after[op] - self.ops_before[op]) for op in ops]
        return sorted([d for d in delta if d[1]], key=lambda d: (-abs(d[1]), d[0]))

    def __str__(self) -> str:
        if self.disabled:
            return f"{self.name:<20} disabled"
        delta = " ".join(f"{'+' if d > 0 else '-'}{op} x{abs(d)}" for op, d in self.op_delta())
        size = f"{self.nodes_before} -> {self.nodes_after} nodes"
        return (f"{self.name:<20} {self.seconds * 1e3:7.2f} ms  {size:<18} "
                f"{delta or ('changed' if self.changed else '-')}")


@dataclass
class OptResult:
    roots: list[Node]
    passes: list[tuple[str, float, bool]] = field(default_factory=list)
    seconds: float = 0.0
    effects: list[PassEffect] = field(default_factory=list)  # filled only when recording


_dump_counter = [0]


def op_histogram(roots: list[Node]) -> Counter:
    return Counter(n.op for n in toposort(roots))


def optimize(roots: list[Node], pipeline: list[tuple[str, Pass, str]] | None = None,
             record: bool | None = None) -> OptResult:
    """Run the pipeline. `record` (default: TRACER_DEBUG>=3) also fills `effects`, which costs
    one toposort per pass, so plain evaluation does not pay for it."""
    pipeline = PIPELINE if pipeline is None else pipeline
    record = CONFIG.debug >= 3 if record is None else record
    res = OptResult(list(roots))
    done: list[str] = []
    t_all = time.perf_counter()
    ops = op_histogram(res.roots) if record else Counter()
    if CONFIG.dump_dir:
        _dump_counter[0] += 1
        _dump(res.roots, "00_input")
    for k, (name, fn, _why) in enumerate(pipeline, 1):
        if name in CONFIG.disable_passes:
            res.passes.append((name, 0.0, False))
            if record:
                res.effects.append(PassEffect(name, 0.0, False, ops, ops, disabled=True))
            continue
        t0 = time.perf_counter()
        try:
            out = fn(res.roots)
            if CONFIG.verify:
                verify(out)
        except Exception as e:
            raise PassError(f"pass {name!r} failed after: {', '.join(done) or '(none)'}: "
                            f"{type(e).__name__}: {e}") from e
        dt = time.perf_counter() - t0
        changed = any(a is not b for a, b in zip(out, res.roots))
        res.passes.append((name, dt, changed))
        if record:
            after = op_histogram(out) if changed else ops
            res.effects.append(PassEffect(name, dt, changed, ops, after))
            ops = after
        res.roots = out
        done.append(name)
        if CONFIG.dump_dir:
            _dump(out, f"{k:02d}_{name}")
    res.seconds = time.perf_counter() - t_all
    return res


def _dump(roots: list[Node], tag: str) -> None:
    os.makedirs(CONFIG.dump_dir, exist_ok=True)
    path = os.path.join(CONFIG.dump_dir, f"graph{_dump_counter[0]:04d}_{tag}.txt")
    with open(path, "w") as f:
        f.write(format_graph(roots) + "\n")
