"""Graph rebuilding, a small rule-list rewriter driven to a fixed point, and the topological
order the passes of one `optimize` share.

A pass asks `order_of(roots)` for its graph's order. Inside `shared_order()` (the pipeline
driver's scope) the order of the last graph asked for is kept: a pass that changes nothing
returns the same roots, so the next pass gets the order without sorting again, and the graph is
sorted once per change, not once per pass. Outside that scope `order_of` is `toposort`.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Callable, Iterator

from tracer.ir.node import Node, make, toposort

Rule = Callable[[Node], Node | None]

_local = threading.local()  # .last: (roots, order) of the last graph sorted in this scope


@contextlib.contextmanager
def shared_order(roots: list[Node] = (), order: list[Node] | None = None) -> Iterator[None]:
    """Share one topological order per graph among the passes run inside the block; `order`,
    where the caller has it, is toposort(roots)'s."""
    outer = getattr(_local, "last", None)
    _local.last = (tuple(roots), order) if order is not None else ((), [])
    try:
        yield
    finally:
        _local.last = outer


def order_of(roots: list[Node]) -> list[Node]:
    """toposort(roots) (callers must not modify it); inside `shared_order`, the order already
    computed for the same roots (the same node objects) is reused. O(n) on a miss, O(r) for r
    roots on a hit."""
    last = getattr(_local, "last", None)
    if last is None:
        return toposort(roots)
    got, order = last
    if len(got) == len(roots) and all(a is b for a, b in zip(got, roots)):
        return order
    order = toposort(roots)
    _local.last = (tuple(roots), order)
    return order


def rebuild(roots: list[Node], fn: Callable[[Node, tuple[Node, ...]], Node]) -> list[Node]:
    """Rebuild bottom-up: fn(old_node, new_inputs) -> new node. Returns the new roots, the same
    node objects when fn changed nothing. O(n) calls of fn."""
    new: dict[int, Node] = {}
    for n in order_of(roots):
        ins = tuple(new[id(i)] for i in n.inputs)
        new[id(n)] = fn(n, ins)
    return [new[id(r)] for r in roots]


def with_inputs(n: Node, ins: tuple[Node, ...]) -> Node:
    if all(a is b for a, b in zip(ins, n.inputs)):
        return n
    return make(n.op, ins, n.shape, n.dtype, n.attrs)


def apply_rules(roots: list[Node], rules: list[Rule], max_iters: int = 16) -> list[Node]:
    """Apply local rules bottom-up until nothing changes (or the iteration cap): O(k n) rule
    calls for k sweeps (k <= max_iters; one sweep when nothing matches)."""
    for _ in range(max_iters):
        changed = False

        def step(n: Node, ins: tuple[Node, ...]) -> Node:
            nonlocal changed
            m = with_inputs(n, ins)
            for rule in rules:
                r = rule(m)
                if r is not None and r is not m:
                    changed = True
                    m = r
            return m

        roots = rebuild(roots, step)
        if not changed:
            break
    return roots
