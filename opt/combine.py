"""Fusions combined into one: bodies over a shared list of params, with the bodies of fusions
that other members read computed in place of those params, and a graph rebuilt with groups of
fusions contracted into multi-output fusions. Shared by the fusion merger, multi-output fusion
and horizontal fusion.
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


def _ancestors(order: list[Node]) -> dict[int, int]:
    """Bit set (over positions in order) of everything each node depends on."""
    pos = {id(n): k for k, n in enumerate(order)}
    anc: dict[int, int] = {}
    for n in order:
        a = 0
        for i in n.inputs:
            a |= anc[id(i)] | (1 << pos[id(i)])
        anc[id(n)] = a
    return anc


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
