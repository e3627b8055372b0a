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
    """The first set of two or more mutually independent small loop fusions, greedily."""
    order = toposort(roots)
    anc = _ancestors(order)
    pos = {id(n): k for k, n in enumerate(order)}
    group: list[Node] = []
    bits, size = 0, 0
    for n in order:  # inputs first: a later candidate can only depend on earlier members
        if not _small_loop(n) or anc[id(n)] & bits:
            continue
        s = _size(n.attr("body"))
        if group and size + s > MAX_GROUP:
            continue
        group.append(n)
        bits |= 1 << pos[id(n)]
        size += s
    return group if len(group) > 1 else None


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

