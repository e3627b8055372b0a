"""Horizontal fusion (XLA's horizontal loop fusion): independent small loop fusions, with no
path between them, become one `horizontal` fusion: one kernel that runs each part's loop in
turn (cpu) or one launch whose threads stride over each part in turn (cuda). Nothing is
recomputed and no bytes are added; what is saved is the per-kernel cost of a launch, which
dominates small kernels (an optimizer step over many small parameter arrays, say).

On cuda, a fusion that buffer assignment would have write its value straight into the slice a
slice write assigns (opt/liveness.py's `into`) stays apart: merged, it would write a temporary
that one more launch copies into the slice (64 row writes were 1 + 64 launches, now 64). On the
cpu that copy is NumPy's, no launch, and one kernel call for all is cheaper (64 row writes:
5.3 ms merged, 9.0 ms apart).
"""
from __future__ import annotations

from tracer.ir.config import CONFIG
from tracer.ir.node import Node, make, toposort
from tracer.ir.registry import TUPLE_DTYPE, fusion_outputs
from .combine import _combine_bodies, acyclic_groups, contract, contracted_order
from .fusion import MAX_GROUP, compute_size, is_fusion
from .liveness import Storage, writer_of
from .rewrite import order_of

# Output elements of a "small" loop fusion: below this a launch costs about as much as the work
# (the cpu backend also runs such kernels on one thread).
SMALL = 1 << 16


def _small_loop(n: Node) -> bool:
    if not is_fusion(n) or n.attr("kind") not in ("loop", "horizontal"):
        return False
    return all(o.size <= SMALL for o in fusion_outputs(n.attr("body")))


# A small loop fusion joins one of the WINDOW newest groups (first fit, as they were made) or
# starts its own.
WINDOW = 256
MAX_ROUNDS = 4  # a round can merge the kernels the last one made, and what a cycle left out


APART_ON = ("cuda",)  # the backends whose slice write is a launch of its own


def _writers_into(order: list[Node], roots: list[Node]) -> set[int]:
    """The fusions that buffer assignment, as the graph stands, would have compute their value
    into the slice of a slice write. O(n); liveness is built only where a small loop fusion is
    a slice write's value (it is built once per evaluation otherwise)."""
    if CONFIG.backend not in APART_ON or \
            not any(_small_loop(v) for n in order if (v := writer_of(n)) is not None):
        return set()
    st = Storage(order, roots)
    st.walk_updates(lambda n: True, lambda n, k: True, lambda n: True)
    return {id(writer_of(order[st.pos[w]])) for w in st.into}


def _groups(order: list[Node], apart: set[int] = frozenset()) -> list[list[Node]]:
    """Groups of mutually independent small loop fusions (first fit, in order) with two or
    more members. Each node carries the bit set of the groups it depends on among the WINDOW
    newest, so a candidate looks only at the groups it may join (a chain of g fusions does
    not try g^2/2 pairs) and a set costs O(WINDOW/64). A group that cannot take a fusion for
    its size is closed, so each group is passed over for its size once: O(n + e)."""
    groups: list[list] = []  # [members, size]
    of: dict[int, int] = {}  # member -> its group's index
    deps: dict[int, tuple[int, int]] = {}  # node -> (base, bits k - base of its groups k)
    base = 0  # the oldest group in the window
    opened = 0  # bits k - base of the open groups
    for n in order:  # inputs first: a member's group is known before its users ask
        d = 0
        for i in n.inputs:
            b, bits = deps[id(i)]
            k = of.get(id(i), -1)
            d |= bits >> base - b | (1 << k - base if k >= base else 0)
        deps[id(n)] = (base, d)
        if not _small_loop(n) or id(n) in apart:
            continue
        s = compute_size(toposort([n.attr("body")]))
        free = opened & ~d
        while free:
            low = free & -free
            free ^= low
            k = base + low.bit_length() - 1
            if groups[k][1] + s <= MAX_GROUP:
                groups[k][0].append(n)
                groups[k][1] += s
                of[id(n)] = k
                break
            opened &= ~low  # (nearly) full: closed
        else:
            of[id(n)] = len(groups)
            opened |= 1 << len(groups) - base
            groups.append([[n], s])
            if len(groups) - base > WINDOW:
                base += 1
                opened >>= 1
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
    """Horizontal fusion. A round is O(n + e) for n nodes and e edges: the groups (_groups),
    and the graph with them contracted. Members of a group are independent, but a group can
    still reach another through a third and back (contracting both makes a cycle): then of
    the groups on such cycles (the strongly connected components of the contracted graph) the
    first of each is contracted, and the next round groups the rest again, with the paths
    through this round's kernels as plain edges. At most MAX_ROUNDS rounds, while one merges
    (usually one, and one that finds nothing). (A cycle used to leave only the first group of
    all to a round, a round per group: 6.5 s for 400 short independent chains.)"""
    for _round in range(MAX_ROUNDS):
        order = order_of(roots)
        groups = _groups(order, _writers_into(order, roots))
        if not groups:
            break
        verts = contracted_order(order, groups)
        if verts is None:
            groups = acyclic_groups(order, groups)
            verts = contracted_order(order, groups)
        assert verts is not None, "horizontal fusion made a cycle"
        roots = contract(roots, groups, verts, _build(groups))
    return roots
