"""opt/combine.py's Contraction (the merge check of multi-output fusion and the dot merger) and
acyclic_groups (horizontal fusion's way out of a cycle), against brute force on random graphs."""
from __future__ import annotations

import random

import numpy
import pytest

from tracer import graph as G
from tracer.ir.node import toposort, users
from tracer.opt.combine import Contraction, acyclic_groups, contracted_order

pytestmark = pytest.mark.lazy  # passes rewrite the recorded graph


def _random_graph(rng: random.Random, n: int):
    """n elementwise nodes over two leaves, each reading one or two earlier nodes."""
    nodes = [G.leaf(numpy.full(3, float(k))) for k in range(2)]
    for _ in range(n):
        a, b = rng.choice(nodes), rng.choice(nodes)
        nodes.append(G.elementwise("add", (a, b)) if rng.random() < 0.7 else
                     G.elementwise("exp", (a,)))
    sinks = [m for m in nodes if m.op != "input"]
    return toposort(sinks)


def _path(order, vertex, x: int, y: int) -> bool:
    """A path from vertex x to vertex y in the graph with vertices contracted (brute force)."""
    succ: dict[int, set[int]] = {}
    for n in order:
        for i in n.inputs:
            a, b = vertex(i), vertex(n)
            if a != b:
                succ.setdefault(a, set()).add(b)
    seen, stack = {x}, [x]
    while stack:
        for w in succ.get(stack.pop(), ()):
            if w == y:
                return True
            if w not in seen:
                seen.add(w)
                stack.append(w)
    return False


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("budget", [8, 10 ** 9])
def test_merges_keep_the_contracted_graph_acyclic_and_numbered(seed, budget):
    rng = random.Random(seed)
    order = _random_graph(rng, 60)
    use = users(order)
    g = Contraction(order, use, budget=budget)
    inner = [n for n in order if n.op != "input"]
    merged = 0
    for _ in range(150):
        a, b = rng.sample(inner, 2)
        x, y = g.vertex(a), g.vertex(b)
        if x == y:
            continue
        adjacent = a in b.inputs
        independent = not _path(order, g.vertex, x, y) and not _path(order, g.vertex, y, x)
        # with the direct edges of a producer left out: no other path from the producer
        plan = g.check(x, y, adjacent=adjacent)
        if budget > 10 ** 6 and not adjacent:
            assert (plan is not None) == independent
        if plan is None:
            continue
        if not adjacent:
            assert independent
        g.merge(plan)
        merged += 1
        groups: dict[int, list] = {}
        for n in order:
            groups.setdefault(g.vertex(n), []).append(n)
        assert contracted_order(order, [m for m in groups.values() if len(m) > 1]) is not None
        for n in order:  # every edge between vertices goes up in the numbering
            for i in n.inputs:
                if g.vertex(i) != g.vertex(n):
                    assert g.num[g.vertex(i)] < g.num[g.vertex(n)]
    assert merged > (0 if budget < 100 else 5)


@pytest.mark.parametrize("seed", range(6))
def test_acyclic_groups_keep_what_makes_no_cycle(seed):
    rng = random.Random(seed)
    order = _random_graph(rng, 50)
    inner = [n for n in order if n.op != "input"]
    pos = {id(n): k for k, n in enumerate(order)}
    anc: dict[int, set] = {}
    for n in order:
        anc[id(n)] = set().union(*[anc[id(i)] | {id(i)} for i in n.inputs]) if n.inputs else set()
    groups = []  # random groups of mutually independent nodes
    free = list(inner)
    rng.shuffle(free)
    while free:
        g = [free.pop()]
        for m in list(free):
            if len(g) < 4 and all(id(m) not in anc[id(o)] and id(o) not in anc[id(m)]
                                  for o in g):
                g.append(m)
                free.remove(m)
        if len(g) > 1:
            groups.append(sorted(g, key=lambda m: pos[id(m)]))
    kept = acyclic_groups(order, groups)
    assert contracted_order(order, kept) is not None
    if contracted_order(order, groups) is not None:
        assert kept == groups
