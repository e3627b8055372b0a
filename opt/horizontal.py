"""Horizontal fusion (XLA's horizontal loop fusion): independent small loop fusions, with no
path between them, become one `horizontal` fusion: one kernel that runs each part's loop in
turn (cpu) or one launch whose threads stride over each part in turn (cuda). Nothing is
recomputed and no bytes are added; what is saved is the per-kernel cost of a launch, which
dominates small kernels (an optimizer step over many small parameter arrays, say).
"""
from __future__ import annotations

from tracer.ir import Node, make, toposort
from tracer.ir.registry import TUPLE_DTYPE, fusion_outputs
from .fusion import MAX_GROUP, _ancestors, _combine_bodies, is_remap
from .rewrite import with_inputs

# Output elements of a "small" loop fusion: below this a launch costs about as much as the work
# (the cpu backend also runs such kernels on one thread).
SMALL = 1 << 16


def _size(body: Node) -> int:
    return sum(not is_remap(n) and n.op not in ("param", "const", "tuple")
               for n in toposort([body]))


def _small_loop(n: Node) -> bool:
    if n.op != "fusion" or n.attr("kind") not in ("loop", "horizontal"):
        return False
    return all(o.size <= SMALL for o in fusion_outputs(n.attr("body")))


def _groups(order: list[Node]) -> list[list[Node]]:
    """Groups of mutually independent small loop fusions (first fit, in order) with two or
    more members."""
    anc = _ancestors(order)
    pos = {id(n): k for k, n in enumerate(order)}
    groups: list[list] = []  # [members, bits, size]
    for n in order:  # inputs first: a later candidate can only depend on earlier members
        if not _small_loop(n):
            continue
        s = _size(n.attr("body"))
        for g in groups:
            if not anc[id(n)] & g[1] and g[2] + s <= MAX_GROUP:
                g[0].append(n)
                g[1] |= 1 << pos[id(n)]
                g[2] += s
                break
        else:
            groups.append([[n], 1 << pos[id(n)], s])
    return [g[0] for g in groups if len(g[0]) > 1]


def _contracted_order(order: list[Node], groups: list[list[Node]]) -> list | None:
    """A topological order of the graph with each group contracted to one vertex (a group as
    its index, any other node as itself), or None if contracting them all makes a cycle."""
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


def _merge(roots: list[Node], groups: list[list[Node]], verts: list) -> list[Node]:
    """The graph with each group's fusions run as one kernel, built in `verts` order."""
    new: dict[int, Node] = {}
    at: dict[int, tuple[Node, int]] = {}  # member fusion -> (merged fusion, first output)
    for v in verts:
        if isinstance(v, int):
            group = groups[v]
            parts = [(f.attr("body"), tuple(new[id(i)] for i in f.inputs)) for f in group]
            body, ext = _combine_bodies(parts, {})
            outs = fusion_outputs(body)
            kind = "loop" if all(o.shape == outs[0].shape for o in outs) else "horizontal"
            merged = make("fusion", tuple(ext), (), TUPLE_DTYPE, (("body", body), ("kind", kind)))
            k = 0
            for f in group:
                at[id(f)] = (merged, k)
                if f.attr("body").op != "tuple":
                    new[id(f)] = _out(merged, k, f)
                k += len(fusion_outputs(f.attr("body")))
        elif v.op == "output" and id(v.inputs[0]) in at:
            merged, k = at[id(v.inputs[0])]
            new[id(v)] = _out(merged, k + v.attr("index"), v)
        else:
            new[id(v)] = with_inputs(v, tuple(new[id(i)] for i in v.inputs))
    return [new[id(r)] for r in roots]


def _out(merged: Node, index: int, like: Node) -> Node:
    return make("output", (merged,), like.shape, like.dtype, (("index", index),))


def horizontal_fusion(roots: list[Node]) -> list[Node]:
    while True:
        order = toposort(roots)
        groups = _groups(order)
        if not groups:
            return roots
        # every group at once when that makes no cycle (the usual case: one pass); else the
        # first group alone, and look again
        verts = _contracted_order(order, groups)
        if verts is None:
            groups = groups[:1]
            verts = _contracted_order(order, groups)
        roots = _merge(roots, groups, verts)
