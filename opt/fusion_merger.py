"""Fusion merger (XLA's FusionMerger): a cheap loop fusion read only by other fusions is
recomputed inside them, its body in place of their params, when that moves no more bytes.
"""
from __future__ import annotations

from tracer.ir.node import Node, make, toposort, users
from tracer.ir.registry import OPS
from .combine import _substitute
from .fusion import MAX_GROUP, compute_size, is_fusion
from .rewrite import order_of, with_inputs


def _body_nodes(f: Node) -> list[Node]:
    return toposort([f.attr("body")])


def _mergeable(f: Node, consumers: list[Node]) -> bool:
    """A cheap loop fusion read only by other fusions merges into them when that moves no more
    bytes: k consumers re-reading its inputs against writing it once and reading it k times."""
    if f.attr("kind") != "loop" or not consumers or not all(map(is_fusion, consumers)):
        return False
    body = _body_nodes(f)
    if not all(OPS[n.op].props.cheap for n in body):
        return False
    k = len({id(c) for c in consumers})
    b_in = sum(i.nbytes for i in {id(i): i for i in f.inputs}.values())
    if k * b_in > b_in + (k + 1) * f.nbytes:
        return False
    size = compute_size(body)
    return all(size + compute_size(_body_nodes(c)) <= MAX_GROUP for c in consumers)


def _inline(c: Node, merged: dict[int, Node]) -> Node:
    """Consumer fusion c with every merged producer's body substituted for its param."""
    (body,), ext = _substitute([(c.attr("body"), c.inputs)], merged)
    return make("fusion", ext, c.shape, c.dtype, (("body", body), ("kind", c.attr("kind"))))


def _cap_chains(order: list[Node], merge: set[int]) -> None:
    """Keep merged kernels within MAX_GROUP ops: a producer merged into a consumer that is
    itself merged onward adds up along a chain (a scalar updated in a loop), so a consumer that
    would pass the cap keeps its biggest merged producers materialized instead. Dropping a
    merge only shrinks what earlier nodes counted, so one pass in order suffices."""
    eff: dict[int, int] = {}
    for n in order:
        if not is_fusion(n):
            continue
        prods = [i for i in {id(i): i for i in n.inputs}.values() if id(i) in merge]
        e = compute_size(_body_nodes(n)) + sum(eff[id(p)] for p in prods)
        for p in sorted(prods, key=lambda p: -eff[id(p)]):
            if e <= MAX_GROUP:
                break
            merge.discard(id(p))
            e -= eff[id(p)]
        eff[id(n)] = e


def fusion_merger(roots: list[Node]) -> list[Node]:
    """Fusion merger. O(n + e s) for e edges and bodies of s ops (s about MAX_GROUP): each
    fusion's body is walked once per consumer (the byte and size tests, the substitution),
    and a fusion's merged producers are sorted by size (_cap_chains)."""
    order = order_of(roots)
    use = users(order)
    keep = {id(r) for r in roots}
    merge = {id(f) for f in order if is_fusion(f) and id(f) not in keep and
             _mergeable(f, use[id(f)])}
    if not merge:
        return roots
    _cap_chains(order, merge)
    new: dict[int, Node] = {}
    merged: dict[int, Node] = {}
    for n in order:
        ins = tuple(new[id(i)] for i in n.inputs)
        m = with_inputs(n, ins)
        if is_fusion(m) and any(id(i) in merged for i in m.inputs):
            m = _inline(m, merged)
        new[id(n)] = m
        if id(n) in merge:
            merged[id(m)] = m
    return [new[id(r)] for r in roots]
