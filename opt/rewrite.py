"""Graph rebuilding and a small rule-list rewriter driven to a fixed point."""
from __future__ import annotations

from typing import Callable

from tracer.ir import Node, make, toposort

Rule = Callable[[Node], Node | None]


def rebuild(roots: list[Node], fn: Callable[[Node, tuple[Node, ...]], Node]) -> list[Node]:
    """Rebuild bottom-up: fn(old_node, new_inputs) -> new node. Returns the new roots."""
    new: dict[int, Node] = {}
    for n in toposort(roots):
        ins = tuple(new[id(i)] for i in n.inputs)
        new[id(n)] = fn(n, ins)
    return [new[id(r)] for r in roots]


def with_inputs(n: Node, ins: tuple[Node, ...]) -> Node:
    if all(a is b for a, b in zip(ins, n.inputs)):
        return n
    return make(n.op, ins, n.shape, n.dtype, n.attrs)


def apply_rules(roots: list[Node], rules: list[Rule], max_iters: int = 16) -> list[Node]:
    """Apply local rules bottom-up until nothing changes (or the iteration cap)."""
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
