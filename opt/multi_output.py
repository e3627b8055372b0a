"""Multi-output fusion (as in XLA): fusions reading one value (siblings), and a producer with a
fusion consumer of its value that is also needed elsewhere, become one kernel with a tuple body,
which reads the shared value once (and writes the producer's value as the consumer reads it).
"""
from __future__ import annotations

from tracer.ir.node import Node, make, toposort, users
from tracer.ir.registry import TUPLE_DTYPE, fusion_outputs
from .combine import Contraction, _combine_bodies, contract, contracted_order
from .fusion import MAX_GROUP, compute_size, is_fusion, is_reduce, row_layout
from .rewrite import order_of


def _kind_of(body: Node) -> str | None:
    """The kernel kind a (merged) body can run as, or None."""
    nodes = toposort([body])
    outs = fusion_outputs(body)
    if not any(is_reduce(n) for n in nodes):
        return "loop" if all(o.shape == outs[0].shape for o in outs) else None
    return "row" if row_layout(nodes, body) is not None else None


# Groups of earlier readers of one value that a reader tries to join (newest first), and
# after how many refusals it stops: a value read by r fusions makes O(r) tries, not r^2/2
# pairs (a weight read by every step of a loop, a leaf read by a thousand small kernels).
SIBLING_TRIES = 4
MAX_ROUNDS = 4  # a round merges what the last one made; each is linear


def _readers(n: Node, use: dict[int, list[Node]]) -> list[Node]:
    return list({id(u): u for u in use[id(n)]}.values())


def _plan(order: list[Node], roots: list[Node]) -> list[tuple[list[Node], Node, tuple, str]]:
    """Merges for the graph `order`, grown greedily: [(old fusions in output order, tuple body,
    inputs (old nodes), kernel kind)]. First each producer whose value is also needed
    elsewhere (producers first: their consumer then writes them as it reads them) with a
    fusion consumer, then the readers of each value, each reader trying the groups of the
    earlier ones. A merge is valid when the graph with every merge so far contracted stays
    acyclic: `Contraction` checks it by a bounded search between the two."""
    use = users(order)
    keep = {id(r) for r in roots}
    g = Contraction(order, use)
    group: dict[int, list[Node]] = {}  # merged vertex -> its fusions, in output order
    bodies: dict[int, tuple[Node, tuple, str, int]] = {}  # ... -> (body, inputs, kind, size)

    sizes: dict[int, int] = {}  # unmerged fusion -> its body's compute size

    def size(v: int, f: Node) -> int:
        got = bodies.get(v)
        if got is not None:
            return got[3]
        if id(f) not in sizes:
            sizes[id(f)] = compute_size(toposort([f.attr("body")]))
        return sizes[id(f)]

    def attempt(a: Node, b: Node, producer: bool) -> bool | None:
        """Merge a's group and b's (a, not merged yet, into its reader b's where `producer`):
        True if merged, False if not, None if the search refused it (a path, or too far)."""
        va, vb = g.vertex(a), g.vertex(b)
        if va == vb or producer and va in group:
            return False
        ga, gb = group.get(va, [a]), group.get(vb, [b])
        if max(size(va, a), size(vb, b)) > MAX_GROUP:
            return False
        plan = g.check(va, vb, adjacent=producer)
        if plan is None:
            return None
        members = gb + [a] if producer else ga + gb
        # members read by other members are computed in place (single-output ones only: a
        # merged tuple is never read by a member, as that is a path between the groups)
        inline = {id(m): m for m in members if m.attr("body").op != "tuple"}
        body, ext = _combine_bodies([(m.attr("body"), m.inputs) for m in members], inline)
        kind = _kind_of(body)
        s = compute_size(toposort([body]))
        if kind is None or s > MAX_GROUP:
            return False
        v = g.merge(plan)
        for old in (va, vb):
            group.pop(old, None)
            bodies.pop(old, None)
        group[v], bodies[v] = members, (body, ext, kind, s)
        return True

    for p in order:
        if is_fusion(p) and p.attr("body").op != "tuple":
            readers = _readers(p, use)
            if len(readers) > 1 or id(p) in keep:
                for c in readers:
                    if is_fusion(c) and attempt(p, c, True):
                        break
    for x in order:
        readers = [u for u in _readers(x, use) if is_fusion(u)]
        if x.op == "const" or len(readers) < 2:
            continue
        recent: dict[int, Node] = {}  # groups of the earlier readers (vertex -> a member)
        for b in readers:
            vb, tries, stale = g.vertex(b), 0, []
            for va in reversed(recent):  # (left at once after a change)
                if va not in g.num:  # merged into another group since
                    stale.append(va)
                    continue
                if va == vb:
                    continue
                tries += 1
                got = attempt(recent[va], b, False)
                if got:
                    stale.append(va)
                if got or got is None or tries >= SIBLING_TRIES:
                    break
            for v in (*stale, vb):
                recent.pop(v, None)
            recent[g.vertex(b)] = b  # the newest
    return [(group[v], body, ext, kind) for v, (body, ext, kind, _s) in bodies.items()]


def multi_output_fusion(roots: list[Node]) -> list[Node]:
    """Multi-output fusion. A round sorts the graph once, grows groups greedily over the
    candidates (a `Contraction` of the graph answers whether a merge keeps it acyclic, by a
    search bounded by SEARCH_BUDGET edges between the two groups), and rebuilds the graph
    once. A round is O(n + e) for n nodes and e edges, plus per candidate the bounded search
    and O(s) for a merged body of s <= MAX_GROUP ops; the candidates are the e edges of the
    producers, and at most SIBLING_TRIES per reader of a shared value. At most MAX_ROUNDS
    rounds; usually one merges and a second finds nothing. (The contracted graph's ancestor
    bit sets made a round O(n^2/64), and every pair of readers of one value was tried: a leaf
    read by 1000 independent small kernels took minutes.)"""
    for _round in range(MAX_ROUNDS):
        order = order_of(roots)
        plan = _plan(order, roots)
        if not plan:
            break
        groups = [olds for olds, *_ in plan]
        verts = contracted_order(order, groups)
        assert verts is not None, "multi-output fusion made a cycle"

        def build(k: int, new: dict[int, Node], plan=plan) -> Node:
            _olds, body, ext, kind = plan[k]
            return make("fusion", tuple(new[id(e)] for e in ext), (), TUPLE_DTYPE,
                        (("body", body), ("kind", kind)))
        roots = contract(roots, groups, verts, build)
    return roots
