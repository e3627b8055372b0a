"""`tracer.explain`: what an evaluation would do (graphs, passes, kernels and their source,
the roots run by NumPy), as the engine decides it; nothing is compiled, written or run."""
from __future__ import annotations

from tracer.ir.node import Node, toposort
from tracer.ir.printer import format_graph
from tracer.ir.config import CONFIG
from tracer.cuda_kernels.executor import format_counters
from . import engine, plans, store
from .drawing import save, to_dot


class Plan:
    """What evaluating some arrays would do: graphs, passes, kernels and their source."""

    def __init__(self, before: list[Node], res, program, small: list[bool]):
        self.graph_before = _Graph(before)
        # the roots that run by NumPy op by op, unoptimized (small graphs)
        self.interpreted = [r for r, s in zip(before, small) if s]
        self.graph_after = _Graph(res.roots if res is not None else [])
        self.passes = res.passes if res is not None else []
        self.pass_effects = res.effects if res is not None else []  # [PassEffect]: nodes and
        # op histogram around each pass
        self.kernels = program.kernels if program is not None else []
        # the fusion node each kernel runs (lowering's order, as program.kernels)
        self._fusions = [n for n in program.order if id(n) in program.kernel_of] \
            if program is not None else []
        self.peak_bytes = program.peak_bytes if program is not None else 0
        self.bytes_copied = program.bytes_copied if program is not None else 0
        self.backend = program.backend if program is not None else engine.backend()
        self._kernel_of = program.kernel_of if program is not None else {}
        # the device counters of the last evaluation of this graph's cached plan (cuda)
        self.last_run = _last_run([r for r, s in zip(before, small) if not s], self.backend)

    def to_dot(self, before: bool = False) -> str:
        """The graph after optimization (or `before` it) as Graphviz DOT text; each fused
        kernel is a cluster."""
        if before:
            return to_dot(self.graph_before.roots, title="tracer: before")
        return to_dot(self.graph_after.roots, self._kernel_of, title="tracer: after")

    def save(self, path: str, before: bool = False) -> str:
        """Draw the graph to `path` (svg, png, pdf... by Graphviz; the DOT text when Graphviz
        is not installed or the path ends in .dot). Returns the path written."""
        return save(self.to_dot(before), path)

    def __str__(self) -> str:
        out = [f"== graph before ({len(toposort(self.graph_before.roots))} nodes)",
               str(self.graph_before)]
        if self.interpreted:
            out += [f"== run by NumPy op by op, unoptimized (small graph, at most "
                    f"{CONFIG.small_graph} elements a value): {len(self.interpreted)} of "
                    f"{len(self.graph_before.roots)} outputs"]
            if len(self.interpreted) == len(self.graph_before.roots):
                return "\n".join(out)  # no optimizer, no kernels
        out += ["== passes"]
        out += [f"  {e}" for e in self.pass_effects]
        out += [f"== graph after ({len(self.kernels)} kernels, backend {self.backend})",
                str(self.graph_after), f"== peak_bytes {self.peak_bytes}, "
                f"bytes_copied {self.bytes_copied}"]
        if self.last_run is not None:
            out += [f"== last evaluation of this plan: {format_counters(self.last_run)}"]
        for n, k in zip(self._fusions, self.kernels):
            # the source's `# node i:` comments count the body's nodes in order
            nodes = ", ".join(f"{i} %{m.uid}" for i, m in enumerate(toposort([n.attr("body")])))
            out += [f"== kernel {k.name} ({k.kind}, {k.backend}) of %{n.uid}; its nodes: {nodes}",
                    k.source]
        return "\n".join(out)

    __repr__ = __str__


class _Graph:
    def __init__(self, roots):
        self.roots = list(roots)

    def __str__(self) -> str:
        return format_graph(self.roots)

    __repr__ = __str__


def _last_run(roots: list[Node], backend: str) -> dict | None:
    """Program.last_run of the plan cached for these roots (looked up, nothing made)."""
    if not roots:
        return None
    key, values = plans.signature(roots, backend)[:2]
    try:
        found = plans.find(key, values)
    except TypeError:  # an unhashable attribute: no plan
        return None
    return found[0].program.last_run if found is not None else None


def explain(*arrays) -> Plan:
    """What evaluating these arrays together would do; nothing is compiled or run."""
    roots = [a._node for a in arrays]
    with store.LOCK:  # the leaves an evaluation of these arrays would update in place
        return Plan(roots, *engine.explain(roots, store.writable_leaves([a._var for a in arrays])))
