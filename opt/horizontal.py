"""Horizontal fusion (XLA's horizontal loop fusion): independent small loop fusions, with no
path between them, become one `horizontal` fusion: one kernel that runs each part's loop in
turn (cpu) or one launch whose threads stride over each part in turn (cuda). Nothing is
recomputed and no bytes are added; what is saved is the per-kernel cost of a launch, which
dominates small kernels (an optimizer step over many small parameter arrays, say).
"""
from __future__ import annotations

from tracer.ir.node import Node, make, toposort
from tracer.ir.registry import TUPLE_DTYPE, fusion_outputs
from .combine import _combine_bodies, contract, contracted_order
from .fusion import MAX_GROUP, compute_size, is_fusion
from .rewrite import order_of

# Output elements of a "small" loop fusion: below this a launch costs about as much as the work
# (the cpu backend also runs such kernels on one thread).
SMALL = 1 << 16


def _small_loop(n: Node) -> bool:
    if not is_fusion(n) or n.attr("kind") not in ("loop", "horizontal"):
        return False
    return all(o.size <= SMALL for o in fusion_outputs(n.attr("body")))


def _groups(order: list[Node]) -> list[list[Node]]:
    """Groups of mutually independent small loop fusions (first fit, in order) with two or
    more members. Each node carries the bit set of the groups it depends on, so a candidate
    looks only at the groups it may join: a chain of g fusions no longer tries g^2/2 pairs."""
    deps: dict[int, int] = {}  # node -> bits of the groups of its ancestors
    of: dict[int, int] = {}  # member -> its group's index
    groups: list[list] = []  # [members, size]
    for n in order:  # inputs first: a member's group is known before its users ask
        d = 0
        for i in n.inputs:
            d |= deps[id(i)] | (1 << of[id(i)] if id(i) in of else 0)
        deps[id(n)] = d
        if not _small_loop(n):
            continue
        s = compute_size(toposort([n.attr("body")]))
        free = ~d & ((1 << len(groups)) - 1)
        while free:
            k = (free & -free).bit_length() - 1
            if groups[k][1] + s <= MAX_GROUP:
                groups[k][0].append(n)
                groups[k][1] += s
                of[id(n)] = k
                break
            free &= free - 1
        else:
            of[id(n)] = len(groups)
            groups.append([[n], s])
    return [g[0] for g in groups if len(g[0]) > 1]


def _build(groups: list[list[Node]]):
    """Group k's fusions as one kernel over their inputs' replacements."""
    def build(k: int, new: dict[int, Node]) -> Node:
        parts = [(f.attr("body"), tuple(new[id(i)] for i in f.inputs)) for f in groups[k]]
        body, ext = _combine_bodies(parts, {})
        outs = fusion_outputs(body)
        kind = "loop" if all(o.shape == outs[0].shape for o in outs) else "horizontal"
        return make("fusion", tuple(ext), (), TUPLE_DTYPE, (("body", body), ("kind", kind)))
    return build


def horizontal_fusion(roots: list[Node]) -> list[Node]:
    """Horizontal fusion. A round is O(e g/64) for e edges and g groups (bit sets of the
    groups each node depends on), plus the groups tried per candidate; one round in the usual
    case (another only where contracting every group at once would make a cycle)."""
    while True:
        order = order_of(roots)
        groups = _groups(order)
        if not groups:
            return roots
        # every group at once when that makes no cycle (the usual case: one pass); else the
        # first group alone, and look again
        verts = contracted_order(order, groups)
        if verts is None:
            groups = groups[:1]
            verts = contracted_order(order, groups)
        roots = contract(roots, groups, verts, _build(groups))
