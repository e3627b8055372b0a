"""The pass pipeline: one visible list. The driver runs the simplification group (the leading
passes named in SIMPLIFICATION) to a fixed point, at most FIXPOINT_ROUNDS rounds, then the rest
once; it times each pass, can switch any off by name (TRACER_DISABLE_PASSES), dumps the graph
after each (TRACER_DUMP), verifies between passes (TRACER_VERIFY=1, always on in tests) and names
the passes already run when one fails.

The passes share one topological order per graph (rewrite.shared_order): a pass that changes
nothing returns the same roots, and the graph is sorted again only after a change. A pass whose
op kinds are absent from the graph (one op histogram per graph, NEEDS) is skipped. The tensor
splitter is a stage that rewrites nothing (UNDER_BUDGET): given a memory budget it records the
split on the result, and tracer/budgeted.py runs the chunks where the plan needs more than the
budget; with none it is skipped.
"""
from __future__ import annotations

import contextlib
import gc
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from tracer.ir.node import Node
from tracer.ir.printer import format_graph
from tracer.ir.verifier import verify
from tracer.ir.config import CONFIG
from tracer.ir.registry import OPS, Kind
from .distance import euclidean_distance
from .buffer_assignment import buffer_assignment
from .dots import dot_decompose, dot_merge, matrix_chain
from .fusion import fusion
from .fusion_merger import fusion_merger
from .horizontal import horizontal_fusion
from .multi_output import multi_output_fusion
from .rewrite import order_of, shared_order
from .scatter_expander import scatter_expander
from .simplify import constant_folding, cse, dce, simplify
from .sinking import sink_movement
from .splitter import Split, find as find_split
from .tree_reduction import tree_reduction

Pass = Callable[[list[Node]], list[Node]]
Analysis = Callable[[list[Node]], object]  # what it finds, kept on the result (UNDER_BUDGET)

PIPELINE: list[tuple[str, Pass | Analysis, str]] = [
    ("tensor_splitter", find_split,
     "under a memory budget: the value whose rows every output follows, to run in chunks "
     "(first: the simplification group's GEMMs and canonical or merged dots hide those rows)"),
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


# The simplification group: run again while a round changes the graph, at most this often.
SIMPLIFICATION = frozenset({"simplify", "constant_folding", "sink_movement", "euclidean_distance",
                            "matrix_chain", "dot_decompose", "dot_merge", "cse", "dce"})
FIXPOINT_ROUNDS = 4

# Entries that rewrite nothing: given a budget, the driver keeps what they find on the result,
# as the OptResult field named here; with none they are skipped.
UNDER_BUDGET: dict[str, str] = {"tensor_splitter": "split"}

# A pass that can only change a graph holding one of these op kinds (or the op `const`): it is
# skipped, without a call, when the graph's op histogram has none. Passes not named always run.
NEEDS: dict[str, frozenset] = {
    "constant_folding": frozenset({"const"}),
    "sink_movement": frozenset({Kind.MOVEMENT}),
    "euclidean_distance": frozenset({Kind.REDUCE}),
    "matrix_chain": frozenset({Kind.CONTRACTION}),
    "dot_decompose": frozenset({Kind.CONTRACTION}),
    "dot_merge": frozenset({Kind.CONTRACTION}),
    "dce": frozenset({Kind.UPDATE}),
    "tree_reduction": frozenset({Kind.REDUCE}),
    "scatter_expander": frozenset({Kind.GATHER, Kind.SCATTER}),
    "fusion_merger": frozenset({Kind.FUSION}),
    "multi_output_fusion": frozenset({Kind.FUSION}),
    "horizontal_fusion": frozenset({Kind.FUSION}),
    "buffer_assignment": frozenset({Kind.UPDATE, Kind.SCATTER, Kind.FUSION}),
}


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
    order: list[Node] = field(default_factory=list)  # toposort(roots) of the result
    split: Split | None = None  # under a budget: the tensor splitter's, of the input graph


_dump_counter = [0]


def op_histogram(roots: list[Node]) -> Counter:
    return Counter(n.op for n in order_of(roots))


def _present(ops: Counter) -> set:
    """The op names and op kinds in a histogram."""
    return set(ops) | {OPS[op].kind for op in ops}


def _segments(pipeline: list[tuple[str, Pass | Analysis, str]]) -> list[tuple[list, bool]]:
    """The pipeline cut into runs of consecutive entries: (entries, repeat to a fixed point)."""
    out: list[tuple[list, bool]] = []
    for entry in pipeline:
        fix = entry[0] in SIMPLIFICATION
        if out and out[-1][1] == fix:
            out[-1][0].append(entry)
        else:
            out.append(([entry], fix))
    return out


def optimize(roots: list[Node], pipeline: list[tuple[str, Pass | Analysis, str]] | None = None,
             record: bool | None = None, order: list[Node] | None = None,
             budget: object | None = None) -> OptResult:
    """Run the pipeline. `record` (default: TRACER_DEBUG>=3) also fills `effects`. `budget`:
    the active memory budget, or None; the split found under one depends on the graph alone,
    not on the budget's size. `passes` and `effects` hold one entry per pipeline entry: a pass
    repeated by the fixed point reports its summed time, whether any run changed the graph, and
    the ops before its first run and after its last. The graph is sorted once (not at all when
    the caller passes its `order`), then once after each change (not once per pass);
    `res.order` is the result's order. The garbage collector is paused meanwhile
    (_gc_paused)."""
    with _gc_paused():
        return _optimize(roots, pipeline, record, order, budget)


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collector off for the block (back on after, where it was on).
    The passes allocate many nodes and tuples and make next to no reference cycles, while
    each full collection walks every live object, the user's arrays and graph included: it
    took a third of the optimizer's time on a 20,000-node graph."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _optimize(roots, pipeline, record, order, budget) -> OptResult:
    pipeline = PIPELINE if pipeline is None else pipeline
    record = CONFIG.debug >= 3 if record is None else record
    res = OptResult(list(roots))
    done: list[str] = []
    t_all = time.perf_counter()
    if CONFIG.dump_dir:
        _dump_counter[0] += 1
        _dump(res.roots, "00_input")
    # pipeline position -> [seconds, changed, ops before, ops after, disabled]
    stats: dict[int, list] = {}
    hist: list = [None, None]    # (roots, op histogram) of the current graph
    step = [0]

    def ops_now() -> Counter:
        if hist[0] is not res.roots:
            hist[:] = [res.roots, op_histogram(res.roots)]
        return hist[1]

    def run(k: int, name: str, fn: Pass | Analysis) -> bool:
        if name in CONFIG.disable_passes or name in UNDER_BUDGET and budget is None or \
                name in NEEDS and not NEEDS[name] & _present(ops_now()):
            ops = ops_now() if record else None
            stats.setdefault(k, [0.0, False, ops, ops, name in CONFIG.disable_passes])
            if name not in CONFIG.disable_passes:
                done.append(name)  # nothing for it to change: it ran, in effect
            return False
        before = ops_now() if record else None
        t0 = time.perf_counter()
        try:
            out = fn(res.roots)
            if name in UNDER_BUDGET:
                setattr(res, UNDER_BUDGET[name], out)
                out = res.roots
            changed = len(out) != len(res.roots) or any(a is not b for a, b in zip(out, res.roots))
            if CONFIG.verify and changed:  # (the same roots: verified already)
                verify(out, order_of(out))
        except Exception as e:
            raise PassError(f"pass {name!r} failed after: {', '.join(done) or '(none)'}: "
                            f"{type(e).__name__}: {e}") from e
        dt = time.perf_counter() - t0
        res.roots = out if changed else res.roots
        st = stats.setdefault(k, [0.0, False, before, None, False])
        st[0] += dt
        st[1] |= changed
        st[3] = ops_now() if record else None
        done.append(name)
        if CONFIG.dump_dir:
            step[0] += 1
            _dump(res.roots, f"{step[0]:02d}_{name}")
        return changed

    with shared_order(roots, order):
        if CONFIG.verify:
            verify(res.roots, order_of(res.roots))
        k0 = 0
        for entries, fixpoint in _segments(pipeline):
            for _round in range(FIXPOINT_ROUNDS if fixpoint else 1):
                changed = False
                for k, (name, fn, _why) in enumerate(entries, k0):
                    changed |= run(k, name, fn)
                if not changed:
                    break
            k0 += len(entries)
        res.order = order_of(res.roots)
    for k, (name, _fn, _why) in enumerate(pipeline):
        dt, changed, before, after, disabled = stats[k]
        res.passes.append((name, dt, changed))
        if record:
            res.effects.append(PassEffect(name, dt, changed, before, after, disabled=disabled))
    res.seconds = time.perf_counter() - t_all
    return res


def _dump(roots: list[Node], tag: str) -> None:
    os.makedirs(CONFIG.dump_dir, exist_ok=True)
    path = os.path.join(CONFIG.dump_dir, f"graph{_dump_counter[0]:04d}_{tag}.txt")
    with open(path, "w") as f:
        f.write(format_graph(roots) + "\n")
