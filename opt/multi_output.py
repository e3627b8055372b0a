"""Multi-output fusion (as in XLA): fusions reading one value (siblings), and a producer with a
fusion consumer of its value that is also needed elsewhere, become one kernel with a tuple body,
which reads the shared value once (and writes the producer's value as the consumer reads it).
"""
from __future__ import annotations

from tracer.ir.node import Node, make, toposort, users
from tracer.ir.registry import TUPLE_DTYPE, fusion_outputs
from .combine import _ancestors, _combine_bodies, contract, contracted_order
from .fusion import MAX_GROUP, compute_size, is_fusion, is_reduce, row_layout
from .rewrite import order_of


def _kind_of(body: Node) -> str | None:
    """The kernel kind a (merged) body can run as, or None."""
    nodes = toposort([body])
    outs = fusion_outputs(body)
    if not any(is_reduce(n) for n in nodes):
        return "loop" if all(o.shape == outs[0].shape for o in outs) else None
    return "row" if row_layout(nodes, body) is not None else None


def _candidates(order: list[Node], use: dict[int, list[Node]], keep: set[int]):
    """Pairs (a, b, producer) worth one kernel: siblings reading a common value, and a producer
    whose value is also needed elsewhere with a fusion consumer (producer=a). Siblings one of
    which reads the other are left out: merges only add paths, so such a pair never merges
    (a chain of r fusions reading one value made r^2/2 pairs); O(r n/64) for r siblings."""
    for p in order:  # producers first: their consumer then writes them as it reads them
        readers = list({id(u): u for u in use[id(p)]}.values())
        if is_fusion(p) and p.attr("body").op != "tuple" and \
                (len(readers) > 1 or id(p) in keep):
            for c in readers:
                if is_fusion(c):
                    yield p, c, True
    pos = {id(n): k for k, n in enumerate(order)}
    desc: dict[int, int] | None = None  # made at the first siblings
    for x in order:
        readers = list({id(u): u for u in use[id(x)] if is_fusion(u)}.values())
        if x.op != "const" and len(readers) > 1:
            if desc is None:
                desc = _descendants(order, use, pos)
            later = sum(1 << pos[id(b)] for b in readers)  # readers come in order
            for a in readers:
                later &= ~(1 << pos[id(a)])
                free = later & ~desc[id(a)]
                while free:
                    low = free & -free
                    yield a, order[low.bit_length() - 1], False
                    free ^= low


def _descendants(order: list[Node], use: dict[int, list[Node]],
                 pos: dict[int, int]) -> dict[int, int]:
    """Bit set (over positions in order) of everything that depends on each node."""
    desc: dict[int, int] = {}
    for n in reversed(order):
        d = 0
        for u in use[id(n)]:
            d |= desc[id(u)] | (1 << pos[id(u)])
        desc[id(n)] = d
    return desc


class _Groups:
    """Fusions merged so far in one round of multi-output fusion, over that round's graph.
    `anc` is the ancestor relation of the graph with every group contracted, kept for the
    fusions only (as bit sets over positions in order): a path between two fusions that
    passes through a contracted group always enters and leaves it at fusions."""

    def __init__(self, order: list[Node]):
        self.pos = {id(n): k for k, n in enumerate(order)}
        anc = _ancestors(order)
        self.fusions = [n for n in order if is_fusion(n)]
        self.anc = {id(f): anc[id(f)] for f in self.fusions}
        self.group = {id(f): [f] for f in self.fusions}  # member -> its group, in output order
        self.bits = {id(f): 1 << self.pos[id(f)] for f in self.fusions}  # member -> group bits

    def single(self, f: Node) -> bool:
        return len(self.group[id(f)]) == 1

    def depends(self, a: Node, b: Node) -> bool:
        """b's group depends on a's (a path from a member of one to a member of the other)."""
        return bool(self.anc[id(b)] & self.bits[id(a)])

    def reads(self, u: Node, b: Node) -> bool:
        """Node u (any node) is an ancestor of fusion b, groups contracted."""
        return bool(self.anc[id(b)] >> self.pos[id(u)] & 1)

    def merge(self, members: list[Node]) -> None:
        """Contract the groups of `members` (in output order) into one. O(F n/64) for F
        fusions."""
        bits = 0
        anc = 0
        for m in members:
            bits |= 1 << self.pos[id(m)]
            anc |= self.anc[id(m)]
        for f in self.fusions:  # every descendant now depends on the whole group
            if self.anc[id(f)] & bits:
                self.anc[id(f)] |= anc | bits
        for m in members:
            self.group[id(m)] = members
            self.bits[id(m)] = bits
            self.anc[id(m)] = anc


def _plan(order: list[Node], roots: list[Node]) -> list[tuple[list[Node], Node, tuple, str]]:
    """Merges for the graph `order`, grown greedily over the candidates: [(old fusions in
    output order, tuple body, inputs (old nodes), kernel kind)]. A merge is valid when the
    graph with every merge so far contracted stays acyclic (checked on `_Groups.anc`)."""
    use = users(order)
    keep = {id(r) for r in roots}
    gs = _Groups(order)
    bodies: dict[int, tuple[Node, tuple, str]] = {}  # first member -> (body, inputs, kind)
    for a, b, producer in _candidates(order, use, keep):
        ga, gb = gs.group[id(a)], gs.group[id(b)]
        if ga is gb:
            continue
        if producer:  # a (not merged yet) merges into its reader b's group: no other
            # reader of a may feed that group
            if not gs.single(a) or any(id(u) not in {id(m) for m in gb} and gs.reads(u, b)
                                       for u in use[id(a)]):
                continue
            members = gb + [a]
        else:
            if gs.depends(a, b) or gs.depends(b, a):
                continue
            members = ga + gb
        # members read by other members are computed in place (single-output ones only: a
        # merged tuple is never read by a member, as that is a path between the groups)
        inline = {id(m): m for m in members if m.attr("body").op != "tuple"}
        body, ext = _combine_bodies([(m.attr("body"), m.inputs) for m in members], inline)
        kind = _kind_of(body)
        if kind is None or compute_size(toposort([body])) > MAX_GROUP:
            continue
        for m in ga + gb:
            bodies.pop(id(m), None)
        gs.merge(members)
        bodies[id(members[0])] = (body, ext, kind)
    return [(gs.group[k], *v) for k, v in bodies.items()]


def multi_output_fusion(roots: list[Node]) -> list[Node]:
    """Multi-output fusion. A round sorts the graph once, grows groups greedily over the
    candidate pairs (keeping the contracted graph's ancestor bit sets up to date instead of
    rebuilding the graph per merge), and rebuilds the graph once. A round is O(n^2/64) for the
    ancestor bit sets, O(F n/64) per merge for F fusions, and O(s) per candidate for a merged
    body of s <= MAX_GROUP ops; usually one round merges and a second finds nothing. (It was
    one sort, analysis and rebuild of the whole graph per merge: quadratic in the merges.)"""
    while True:
        order = order_of(roots)
        plan = _plan(order, roots)
        if not plan:
            return roots
        groups = [olds for olds, *_ in plan]
        verts = contracted_order(order, groups)
        assert verts is not None, "multi-output fusion made a cycle"

        def build(k: int, new: dict[int, Node], plan=plan) -> Node:
            _olds, body, ext, kind = plan[k]
            return make("fusion", tuple(new[id(e)] for e in ext), (), TUPLE_DTYPE,
                        (("body", body), ("kind", kind)))
        roots = contract(roots, groups, verts, build)
