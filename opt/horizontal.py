"""Horizontal fusion (XLA's horizontal loop fusion): independent small loop fusions, with no
path between them, become one `horizontal` fusion: one kernel that runs each part's loop in
turn (cpu) or one launch whose threads stride over each part in turn (cuda). Nothing is
recomputed and no bytes are added; what is saved is the per-kernel cost of a launch, which
dominates small kernels (an optimizer step over many small parameter arrays, say).
"""
from __future__ import annotations

from ir import Node, make, toposort
from ir.registry import TUPLE_DTYPE, fusion_outputs
from .fusion import MAX_GROUP, _ancestors, _combine_bodies, _replace, is_remap

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


def _group(roots: list[Node]) -> list[Node] | None:
    """The first of the groups of mutually independent small loop fusions (first fit, in
    order) that has two or more members."""
    order = toposort(roots)
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
    return next((g[0] for g in groups if len(g[0]) > 1), None)


def horizontal_fusion(roots: list[Node]) -> list[Node]:
    while True:
        group = _group(roots)
        if group is None:
            return roots
        body, ext = _combine_bodies([(f.attr("body"), f.inputs) for f in group], {})
        outs = fusion_outputs(body)
        kind = "loop" if all(o.shape == outs[0].shape for o in outs) else "horizontal"
        merged = make("fusion", ext, (), TUPLE_DTYPE, (("body", body), ("kind", kind)))
        roots = _replace(toposort(roots), roots, merged, group)

