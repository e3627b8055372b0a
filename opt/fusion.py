"""Instruction fusion: elementwise chains (with broadcasts, transposes and unit-axis reshapes as
index remaps) become one loop kernel; elementwise producers fuse into the input of a reduction and
elementwise consumers into its store. Reductions over the trailing axes whose results come back to
the rows through keepdims broadcasts (softmax, normalization) fuse with their producers and
consumers into one row kernel.

The result is XLA-style: each group becomes a `fusion` node whose `body` attribute is the group's
own small graph over `param` nodes, and whose inputs are the values the group reads.
"""
from __future__ import annotations

import math
from typing import Callable

from tracer.ir import Node, make, toposort, users
from tracer.ir.catalogue import unit_reshape
from tracer.ir.registry import OPS, TUPLE_DTYPE, Kind, fusion_outputs, is_kind, is_leaf
from .rewrite import order_of, with_inputs

MAX_GROUP = 64
# A row kernel runs each row in one thread (one block on cuda): worth it with enough rows to
# spread, or rows short enough that one worker finishes them quickly.
ROW_MIN_ROWS = 16
ROW_MAX_LEN = 1 << 14


def is_remap(n: Node) -> bool:
    """An index remap a kernel reads through: a cheap movement op (broadcast_to, transpose,
    chunk; a reshape only where it inserts or drops unit axes)."""
    d = OPS[n.op]
    return d.kind is Kind.MOVEMENT and d.props.cheap and \
        (n.op != "reshape" or unit_reshape(n.inputs[0].shape, n.shape))


def has_kernel(n: Node) -> bool:
    d = OPS.get(n.op)
    if d is None:
        return False
    if d.kind is Kind.ELEMENTWISE:
        return d.template is not None and \
            d.template(tuple(i.dtype for i in n.inputs), n.dtype) is not None
    if d.kind is Kind.REDUCE:
        return n.inputs[0].dtype.kind in "biuf" and n.inputs[0].dtype.itemsize != 2
    if is_remap(n):
        return n.dtype.kind in "biuf" and n.dtype.itemsize != 2
    return False


def is_reduce(n: Node) -> bool:
    return is_kind(n, Kind.REDUCE)


def is_fusion(n: Node) -> bool:
    return is_kind(n, Kind.FUSION)


def compute_size(body_nodes: list[Node]) -> int:
    """Ops a kernel computes: its body's nodes but remaps, leaves, params and the tuple."""
    return sum(not is_remap(n) and n.op != "tuple" and
               OPS[n.op].kind not in (Kind.LEAF, Kind.PARAM) for n in body_nodes)


def _free_remap(n: Node) -> bool:
    """Index remaps of leaves are recomputed per use instead of materialized."""
    while is_remap(n):
        n = n.inputs[0]
    return is_leaf(n)


def _above(members: list[Node]) -> set[int]:
    """Members that read a reduction of the group (directly or through other members)."""
    above: set[int] = set()
    for m in members:
        if any(is_reduce(i) or id(i) in above for i in m.inputs):
            above.add(id(m))
    return above


def row_layout(members: list[Node], root: Node) -> tuple[tuple, tuple] | None:
    """(row domain shape, reduced axes) when the group can run as one row kernel: every
    reduction reduces the same trailing axes of the same shape, and reduced values come back
    to the rows only through keepdims broadcasts."""
    reds = [m for m in members if is_reduce(m)]
    if not reds or any(OPS[r.op].ufunc is None for r in reds):  # arg-reductions
        return None
    shape, axes = reds[0].inputs[0].shape, reds[0].attr("axes")
    k = len(shape) - len(axes)
    if k == 0 or axes != tuple(range(k, len(shape))) or \
            any(r.inputs[0].shape != shape or r.attr("axes") != axes for r in reds):
        return None
    kept, ones = shape[:k], (1,) * len(axes)
    if math.prod(kept) < ROW_MIN_ROWS and math.prod(shape[k:]) > ROW_MAX_LEN:
        return None
    rowshapes = (kept, kept + ones)  # values computed once per row
    if any(o.shape != shape and o.shape not in rowshapes for o in fusion_outputs(root)):
        return None
    above = _above(members)
    for m in members:
        if id(m) not in above or is_reduce(m) or m.op == "tuple":
            continue
        if m.op == "reshape":
            ok = m.inputs[0].shape in rowshapes and m.shape in rowshapes
        elif m.op == "broadcast_to":
            ok = m.inputs[0].shape in rowshapes and m.shape == shape
        else:
            ok = m.op != "transpose" and (m.shape == shape or m.shape in rowshapes)
        if not ok:
            return None
    return shape, axes


def needs_row(members: list[Node]) -> bool:
    """Several reductions, or a reduced value read back at row positions."""
    if sum(is_reduce(m) for m in members) > 1:
        return True
    above = _above(members)
    return any(is_remap(m) for m in members if id(m) in above)


def fusion(roots: list[Node]) -> list[Node]:
    """Instruction fusion. O(k (n + sum of group sizes)) for k rounds of materialization
    decisions (usually 1 or 2); the groups are disjoint but for recomputed remaps."""
    order = order_of(roots)
    use = users(order)
    fusible = {id(n): has_kernel(n) for n in order}

    mat: set[int] = {id(r) for r in roots}
    for n in order:
        if not n.inputs:
            continue
        us = use[id(n)]
        if not fusible[id(n)]:
            mat.add(id(n))
        elif any(not fusible[id(u)] for u in us):
            mat.add(id(n))
        elif is_reduce(n) and any(OPS[u.op].kind is not Kind.ELEMENTWISE and not is_remap(u)
                                  for u in us):
            mat.add(id(n))

    while True:
        # A value read by two groups is materialized (only the topmost shared value: below it
        # the groups no longer overlap). Index remaps are recomputed, never shared. One
        # reduction per group, unless the group is a row kernel: the deeper ones are
        # materialized. A materialized reshape is a view of its materialized input.
        extra, owner, shared = set(), {}, set()
        groups: dict[int, list[Node]] = {}  # of this round's mat: the last round's are final
        for n in reversed(order):
            if id(n) in mat and n.op == "reshape":
                extra.add(id(n.inputs[0]))
            elif id(n) in mat and fusible[id(n)]:
                members = groups[id(n)] = _group(n, mat)
                reds = [m for m in members if is_reduce(m)]
                if reds and needs_row(members) and row_layout(members, n) is None:
                    extra.update(id(r) for r in reds[:-1])
                    # the epilogue runs at the reduction's output index: no remaps
                    above = {id(reds[-1])}
                    for m in members:
                        if any(id(i) in above for i in m.inputs):
                            above.add(id(m))
                            if is_remap(m):
                                extra.add(id(m.inputs[0]))
                compute = [m for m in members if not is_remap(m) and m is not n]
                if len(compute) >= MAX_GROUP:  # bound kernel size and compile time
                    extra.add(id(compute[len(compute) // 2]))
                for m in members:
                    if m is not n and not is_remap(m):
                        if owner.setdefault(id(m), id(n)) != id(n):
                            shared.add(id(m))
        for n in order:
            if id(n) in shared and not any(id(u) in shared for u in use[id(n)]):
                extra.add(id(n))
        if not extra - mat:
            break
        mat |= extra

    new: dict[int, Node] = {}
    for n in order:
        if is_leaf(n):
            new[id(n)] = n
        elif id(n) not in mat:
            continue
        elif not fusible[id(n)] or n.op == "reshape":
            ins = tuple(_external(i, new) for i in n.inputs)
            new[id(n)] = n if all(a is b for a, b in zip(ins, n.inputs)) else \
                make(n.op, ins, n.shape, n.dtype, n.attrs)
        else:
            new[id(n)] = _make_fusion(n, groups[id(n)], new)
    return [new[id(r)] for r in roots]


def _external(i: Node, new: dict[int, Node]) -> Node:
    got = new.get(id(i))
    if got is None:  # a free remap of a leaf used by an unfusible op
        ins = tuple(_external(j, new) for j in i.inputs)
        got = make(i.op, ins, i.shape, i.dtype, i.attrs)
        new[id(i)] = got
    return got


def _group(root: Node, mat: set[int]) -> list[Node]:
    """Nodes of root's group, inputs before users (the reduce nearest the root comes last)."""
    return toposort([root], lambda i: (id(i) not in mat and not is_leaf(i)) or
                    (is_remap(i) and _free_remap(i)))


def _make_fusion(root: Node, group: list[Node], new: dict[int, Node]) -> Node:
    """The fusion node of root's group (its members in order, root last)."""
    params: dict[int, Node] = {}
    ext: list[Node] = []
    body: dict[int, Node] = {}
    members = {id(m) for m in group}

    def param_for(i: Node) -> Node:
        if id(i) not in params:
            params[id(i)] = make("param", (), i.shape, i.dtype, (("index", len(ext)),))
            ext.append(_external(i, new))
        return params[id(i)]

    for m in group:
        ins = []
        for i in m.inputs:
            if id(i) in members:
                ins.append(body[id(i)])
            elif i.op == "const":
                ins.append(i)
            else:
                ins.append(param_for(i))
        body[id(m)] = make(m.op, tuple(ins), m.shape, m.dtype, m.attrs)
    b = body[id(root)]
    members_in_body = [body[id(m)] for m in group]  # in order: what needs_row reads
    kind = "loop"
    if any(is_reduce(m) for m in members_in_body):
        kind = "row" if needs_row(members_in_body) else "reduce"
    return make("fusion", tuple(ext), root.shape, root.dtype, (("body", b), ("kind", kind)))


# ---------------------------------------------------------------- fusion merger

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
    """Fusion merger. O(n + sum over fusions of body size x consumers)."""
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


# ---------------------------------------------------------------- multi-output fusion

def _outputs(f: Node) -> list[Node]:
    return fusion_outputs(f.attr("body"))


def _kind_of(body: Node) -> str | None:
    """The kernel kind a (merged) body can run as, or None."""
    nodes = toposort([body])
    outs = fusion_outputs(body)
    if not any(is_reduce(n) for n in nodes):
        return "loop" if all(o.shape == outs[0].shape for o in outs) else None
    return "row" if row_layout(nodes, body) is not None else None


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


def _candidates(order: list[Node], use: dict[int, list[Node]], keep: set[int]):
    """Pairs (a, b, producer) worth one kernel: siblings reading a common value, and a producer
    whose value is also needed elsewhere with a fusion consumer (producer=a)."""
    for p in order:  # producers first: their consumer then writes them as it reads them
        readers = list({id(u): u for u in use[id(p)]}.values())
        if is_fusion(p) and p.attr("body").op != "tuple" and \
                (len(readers) > 1 or id(p) in keep):
            for c in readers:
                if is_fusion(c):
                    yield p, c, True
    for x in order:
        readers = list({id(u): u for u in use[id(x)] if is_fusion(u)}.values())
        if x.op != "const" and len(readers) > 1:
            for k, a in enumerate(readers):
                for b in readers[k + 1:]:
                    yield a, b, False


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
