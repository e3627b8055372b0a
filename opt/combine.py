"""Fusions combined into one: bodies over a shared list of params, with the bodies of fusions
that other members read computed in place of those params, and a graph rebuilt with groups of
fusions contracted into multi-output fusions. Shared by the fusion merger, multi-output fusion
and horizontal fusion, with what they ask of the graph with groups contracted: whether a merge
keeps it acyclic (`Contraction`, a bounded search instead of every node's ancestor set), which
groups to drop when contracting them all makes a cycle (`acyclic_groups`) and its order
(`contracted_order`). All linear in the graph, or bounded per question.
"""
from __future__ import annotations

from typing import Callable

from tracer.ir.node import Node, make, toposort
from tracer.ir.registry import TUPLE_DTYPE, Kind, fusion_outputs, is_kind
from .rewrite import with_inputs


def _outputs(f: Node) -> list[Node]:
    return fusion_outputs(f.attr("body"))


def _combine_bodies(parts: list[tuple[Node, tuple[Node, ...]]], inline: dict[int, Node]):
    """One tuple body from several (body, inputs) parts; fusions in `inline` (by id of the
    node a param reads) are computed in place of that param. Returns (body, inputs)."""
    bodies, ext = _substitute(parts, inline)
    outs = [o for b in bodies for o in fusion_outputs(b)]
    return make("tuple", tuple(outs), (), TUPLE_DTYPE), ext


def _substitute(parts: list[tuple[Node, tuple[Node, ...]]], inline: dict[int, Node]):
    """The parts' bodies over one shared list of params; a param reading a fusion in `inline`
    (by id) becomes that fusion's body. Returns (bodies, inputs)."""
    ext: list[Node] = []
    index: dict[int, int] = {}

    def param(src: Node) -> Node:
        if id(src) not in index:
            index[id(src)] = len(ext)
            ext.append(src)
        return make("param", (), src.shape, src.dtype, (("index", index[id(src)]),))

    def subst(body: Node, inputs: tuple[Node, ...]) -> Node:
        new: dict[int, Node] = {}
        for n in toposort([body]):
            if is_kind(n, Kind.PARAM):
                src = inputs[n.attr("index")]
                f = inline.get(id(src))
                new[id(n)] = subst(f.attr("body"), f.inputs) if f is not None else param(src)
            else:
                new[id(n)] = with_inputs(n, tuple(new[id(i)] for i in n.inputs))
        return new[id(body)]

    bodies = [subst(body, inputs) for body, inputs in parts]
    return bodies, tuple(ext)


# Edges a merge check may scan (forward from the first vertex, then back from the second):
# past it the merge is refused as if the two were dependent. It bounds each check, so a pass
# that checks O(n) merges stays linear; the pairs it refuses are far apart in a graph with much
# depending on the first between them.
SEARCH_BUDGET = 512


def depths(order: list[Node]) -> dict[int, int]:
    """Each node's depth: the longest path to it from a leaf (leaves 0). O(n + edges)."""
    depth: dict[int, int] = {}
    for n in order:
        depth[id(n)] = 1 + max([depth[id(i)] for i in n.inputs], default=-1)
    return depth


class Contraction:
    """A graph whose vertices are groups of its nodes (at first every node alone), merged a
    pair at a time while it stays acyclic: the question each fusion pass that groups kernels
    asks ("may these two run as one?"), answered without the ancestor sets of every node.

    Every vertex carries a number, each edge going from a smaller to a larger one (a
    topological numbering: initially by depth, then position in `order`). A path between two
    vertices runs through vertices numbered between them, so `check(x, y)` searches only
    there: forward from the smaller (lo) for the larger (hi), and, when lo reaches anything
    there, back from hi. Merging then renumbers those vertices alone (Pearce and Kelly's
    dynamic topological order, for a contraction instead of an edge): hi's ancestors found
    first, then the merged vertex, then lo's descendants found, on the numbers they held.
    Vertices of one depth have no path between them and none numbered between them that
    depends on the first, so merging them costs their edges only. A check scans at most
    `budget` edges and refuses the merge past it. O(n + edges) to build; a check or merge is
    O(b log b) for the b <= budget edges it scans; merging renames the smaller group's
    members, O(n log n) over all merges."""

    def __init__(self, order: list[Node], use: dict[int, list[Node]],
                 budget: int = SEARCH_BUDGET):
        self.depth = depths(order)
        self.use = use
        self.budget = budget
        self.node = {id(n): n for n in order}
        ranked = sorted(order, key=lambda n: self.depth[id(n)])  # stable: order within a depth
        self.num = {id(n): k for k, n in enumerate(ranked)}  # vertex -> its number
        self.rep: dict[int, int] = {}  # node -> its vertex, for nodes of merged vertices
        self.members: dict[int, list[Node]] = {}  # merged vertex -> its nodes

    def vertex(self, n: Node) -> int:
        """n's vertex (the id of the node that names it)."""
        return self.rep.get(id(n), id(n))

    def _nodes(self, v: int) -> list[Node]:
        got = self.members.get(v)
        return got if got is not None else [self.node[v]]

    def check(self, x: int, y: int, adjacent: bool = False):
        """Whether vertices x and y can merge: no path between them (with `adjacent`, none but
        edges from the smaller numbered one straight into the other: a producer and its
        consumer). Returns the plan for `merge`, or None (a path, or the budget spent)."""
        if x == y:
            return None
        num, use, vertex = self.num, self.use, self.vertex
        lo, hi = (x, y) if num[x] < num[y] else (y, x)
        top, work = num[hi], 0
        fwd, stack = {lo}, [lo]
        while stack:
            v = stack.pop()
            for m in self._nodes(v):
                for u in use[id(m)]:
                    w = vertex(u)
                    if w == hi:
                        if adjacent and v == lo:
                            continue
                        return None
                    if w not in fwd and num[w] < top:
                        fwd.add(w)
                        stack.append(w)
                work += len(use[id(m)])
            if work > self.budget:
                return None
        if len(fwd) == 1:  # nothing of lo's numbered below hi: the merged vertex takes hi's
            return lo, hi, fwd, None
        bottom = num[lo]
        bwd, stack = {hi}, [hi]
        while stack:
            v = stack.pop()
            for m in self._nodes(v):
                for i in m.inputs:
                    w = vertex(i)
                    if w not in bwd and w != lo and num[w] > bottom:
                        bwd.add(w)
                        stack.append(w)
                work += len(m.inputs)
            if work > self.budget:
                return None
        return lo, hi, fwd, bwd

    def merge(self, plan) -> int:
        """Merge the two vertices of a plan from `check` (nothing merged since); returns the
        merged vertex."""
        lo, hi, fwd, bwd = plan
        num = self.num
        if bwd is None:
            slot = num[hi]
        elif len(bwd) == 1:
            slot = num[lo]
        else:  # hi's ancestors found, the merged vertex, lo's descendants found
            pool = sorted(num[v] for v in (*fwd, *bwd))
            moved = sorted(bwd - {hi}, key=num.__getitem__)
            after = sorted(fwd - {lo}, key=num.__getitem__)
            for v, k in zip(moved, pool):
                num[v] = k
            slot = pool[len(moved)]
            for v, k in zip(after, pool[len(moved) + 1:]):
                num[v] = k
        a, b = self._nodes(lo), self._nodes(hi)
        keep, gone = (lo, hi) if len(a) >= len(b) else (hi, lo)
        moved_nodes = b if keep == lo else a
        for m in moved_nodes:
            self.rep[id(m)] = keep
        self.members[keep] = a + b
        self.members.pop(gone, None)
        self.rep.setdefault(keep, keep)
        del num[gone]
        num[keep] = slot
        return keep


def contracted_order(order: list[Node], groups: list[list[Node]]) -> list | None:
    """A topological order of the graph with each group contracted to one vertex (a group as
    its index, any other node as itself), or None if contracting them all makes a cycle.
    O(n + edges)."""
    gid = {id(m): k for k, g in enumerate(groups) for m in g}
    key = {id(n): gid.get(id(n), n) for n in order}
    verts = list({id(v): v for v in key.values()}.values())
    succ: dict[int, set[int]] = {id(v): set() for v in verts}
    indeg = {id(v): 0 for v in verts}
    vert = {id(v): v for v in verts}
    for n in order:
        kn = id(key[id(n)])
        for i in n.inputs:
            ki = id(key[id(i)])
            if ki != kn and kn not in succ[ki]:
                succ[ki].add(kn)
                indeg[kn] += 1
    ready = [v for v in verts if indeg[id(v)] == 0]
    out = []
    while ready:
        v = ready.pop()
        out.append(v)
        for w in succ[id(v)]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(vert[w])
    return out if len(out) == len(verts) else None


def acyclic_groups(order: list[Node], groups: list[list[Node]]) -> list[list[Node]]:
    """Of groups of mutually independent nodes whose contraction makes a cycle (through two
    groups or more), the ones to contract: each group on no cycle, and the first of each
    strongly connected component of the contracted graph (Tarjan's algorithm). These make no
    cycle: one would pass through two of them in one component. O(n + edges)."""
    gid = {id(m): k for k, g in enumerate(groups) for m in g}
    key = {id(n): -1 - gid[id(n)] if id(n) in gid else id(n) for n in order}  # group k: -1-k
    succ: dict[int, set[int]] = {}
    for n in order:
        kn = key[id(n)]
        succ.setdefault(kn, set())
        for i in n.inputs:
            ki = key[id(i)]
            if ki != kn:
                succ.setdefault(ki, set()).add(kn)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    comp: dict[int, int] = {}  # vertex -> its component
    size: list[int] = []  # per component: its vertices
    stack: list[int] = []
    for root in succ:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        work = [(root, iter(succ[root]))]
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    work.append((w, iter(succ[w])))
                    break
                if w not in comp:  # on the stack
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    low[u] = min(low[u], low[v])
                if low[v] == index[v]:
                    c = len(size)
                    size.append(0)
                    while True:
                        w = stack.pop()
                        comp[w] = c
                        size[c] += 1
                        if w == v:
                            break
    first: dict[int, int] = {}  # component -> its first group
    for k in range(len(groups)):
        first.setdefault(comp[-1 - k], k)
    return [g for k, g in enumerate(groups) if size[comp[-1 - k]] == 1 or first[comp[-1 - k]] == k]


def contract(roots: list[Node], groups: list[list[Node]], verts: list,
             build: Callable[[int, dict[int, Node]], Node]) -> list[Node]:
    """The graph with each group of fusions run as one multi-output fusion, rebuilt in `verts`
    (contracted_order) order: build(k, new) makes group k's fusion, `new` mapping every node
    before it to its replacement; each member's outputs are read from it in group order."""
    new: dict[int, Node] = {}
    at: dict[int, tuple[Node, int]] = {}  # member fusion -> (merged fusion, first output)
    for v in verts:
        if isinstance(v, int):
            merged = build(v, new)
            k = 0
            for f in groups[v]:
                at[id(f)] = (merged, k)
                if f.attr("body").op != "tuple":
                    new[id(f)] = output_of(merged, k, f)
                k += len(_outputs(f))
        elif v.op == "output" and id(v.inputs[0]) in at:
            merged, k = at[id(v.inputs[0])]
            new[id(v)] = output_of(merged, k + v.attr("index"), v)
        else:
            new[id(v)] = with_inputs(v, tuple(new[id(i)] for i in v.inputs))
    return [new[id(r)] for r in roots]


def output_of(merged: Node, index: int, like: Node) -> Node:
    return make("output", (merged,), like.shape, like.dtype, (("index", index),))
