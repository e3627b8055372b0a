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

from tracer.ir import Node, make, toposort, users
from tracer.ir.registry import CHEAP_OPS, OPS, TUPLE_DTYPE, Kind, fusion_outputs, unit_reshape
from .rewrite import with_inputs

MAX_GROUP = 64
# A row kernel runs each row in one thread (one block on cuda): worth it with enough rows to
# spread, or rows short enough that one worker finishes them quickly.
ROW_MIN_ROWS = 16
ROW_MAX_LEN = 1 << 14


def is_remap(n: Node) -> bool:
    return n.op in ("broadcast_to", "transpose", "chunk") or \
        (n.op == "reshape" and unit_reshape(n.inputs[0].shape, n.shape))


def has_kernel(n: Node) -> bool:
    d = OPS.get(n.op)
    if d is None:
        return False
    if d.kind is Kind.ELEMENTWISE:
        return d.template is not None and \
            d.template(tuple(i.dtype for i in n.inputs), n.dtype, "cpu") is not None
    if d.kind is Kind.REDUCE:
        return n.inputs[0].dtype.kind in "biuf" and n.inputs[0].dtype.itemsize != 2
    if is_remap(n):
        return n.dtype.kind in "biuf" and n.dtype.itemsize != 2
    return False


def is_reduce(n: Node) -> bool:
    return OPS[n.op].kind is Kind.REDUCE if n.op in OPS else False


def _free_remap(n: Node) -> bool:
    """Index remaps of leaves are recomputed per use instead of materialized."""
    while is_remap(n):
        n = n.inputs[0]
    return n.op in ("input", "const")


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
    if not reds or any(r.op in ("argmax", "argmin") for r in reds):
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
    order = toposort(roots)
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
        for n in reversed(order):
            if id(n) in mat and n.op == "reshape":
                extra.add(id(n.inputs[0]))
            elif id(n) in mat and fusible[id(n)]:
                members = _group(n, mat)
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
        if n.op in ("input", "const"):
            new[id(n)] = n
        elif id(n) not in mat:
            continue
        elif not fusible[id(n)] or n.op == "reshape":
            ins = tuple(_external(i, new) for i in n.inputs)
            new[id(n)] = n if all(a is b for a, b in zip(ins, n.inputs)) else \
                make(n.op, ins, n.shape, n.dtype, n.attrs)
        else:
            new[id(n)] = _make_fusion(n, mat, new)
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
    return toposort([root], lambda i: (id(i) not in mat and i.op not in ("input", "const")) or
                    (is_remap(i) and _free_remap(i)))


def _make_fusion(root: Node, mat: set[int], new: dict[int, Node]) -> Node:
    params: dict[int, Node] = {}
    ext: list[Node] = []
    body: dict[int, Node] = {}
    members = {id(m) for m in _group(root, mat)}

    def param_for(i: Node) -> Node:
        if id(i) not in params:
            params[id(i)] = make("param", (), i.shape, i.dtype, (("index", len(ext)),))
            ext.append(_external(i, new))
        return params[id(i)]

    for m in _group(root, mat):
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
    group = toposort([b])
    kind = "loop"
    if any(is_reduce(m) for m in group):
        kind = "row" if needs_row(group) else "reduce"
    return make("fusion", tuple(ext), root.shape, root.dtype, (("body", b), ("kind", kind)))


# ---------------------------------------------------------------- fusion merger

def _body_nodes(f: Node) -> list[Node]:
    return toposort([f.attr("body")])


def _mergeable(f: Node, consumers: list[Node]) -> bool:
    """A cheap loop fusion read only by other fusions merges into them when that moves no more
    bytes: k consumers re-reading its inputs against writing it once and reading it k times."""
    if f.attr("kind") != "loop" or not consumers or any(c.op != "fusion" for c in consumers):
        return False
    body = _body_nodes(f)
    if any(n.op not in CHEAP_OPS for n in body):
        return False
    k = len({id(c) for c in consumers})
    b_in = sum(i.nbytes for i in {id(i): i for i in f.inputs}.values())
    if k * b_in > b_in + (k + 1) * f.nbytes:
        return False
    size = sum(not is_remap(n) and n.op not in ("param", "const") for n in body)
    return all(size + sum(not is_remap(n) and n.op not in ("param", "const")
                          for n in _body_nodes(c)) <= MAX_GROUP for c in consumers)


def _inline(c: Node, merged: dict[int, Node]) -> Node:
    """Consumer fusion c with every merged producer's body substituted for its param."""
    (body,), ext = _substitute([(c.attr("body"), c.inputs)], merged)
    return make("fusion", ext, c.shape, c.dtype, (("body", body), ("kind", c.attr("kind"))))


def _compute_size(f: Node) -> int:
    return sum(not is_remap(n) and n.op not in ("param", "const", "tuple")
               for n in _body_nodes(f))


def _cap_chains(order: list[Node], merge: set[int]) -> None:
    """Keep merged kernels within MAX_GROUP ops: a producer merged into a consumer that is
    itself merged onward adds up along a chain (a scalar updated in a loop), so a consumer that
    would pass the cap keeps its biggest merged producers materialized instead. Dropping a
    merge only shrinks what earlier nodes counted, so one pass in order suffices."""
    eff: dict[int, int] = {}
    for n in order:
        if n.op != "fusion":
            continue
        prods = [i for i in {id(i): i for i in n.inputs}.values() if id(i) in merge]
        e = _compute_size(n) + sum(eff[id(p)] for p in prods)
        for p in sorted(prods, key=lambda p: -eff[id(p)]):
            if e <= MAX_GROUP:
                break
            merge.discard(id(p))
            e -= eff[id(p)]
        eff[id(n)] = e


def fusion_merger(roots: list[Node]) -> list[Node]:
    order = toposort(roots)
    use = users(order)
    keep = {id(r) for r in roots}
    merge = {id(f) for f in order if f.op == "fusion" and id(f) not in keep and
             _mergeable(f, use[id(f)])}
    if not merge:
        return roots
    _cap_chains(order, merge)
    new: dict[int, Node] = {}
    merged: dict[int, Node] = {}
    for n in order:
        ins = tuple(new[id(i)] for i in n.inputs)
        m = with_inputs(n, ins)
        if m.op == "fusion" and any(id(i) in merged for i in m.inputs):
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
            if n.op == "param":
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
        if p.op == "fusion" and p.attr("body").op != "tuple" and \
                (len(readers) > 1 or id(p) in keep):
            for c in readers:
                if c.op == "fusion":
                    yield p, c, True
    for x in order:
        readers = list({id(u): u for u in use[id(x)] if u.op == "fusion"}.values())
        if x.op != "const" and len(readers) > 1:
            for k, a in enumerate(readers):
                for b in readers[k + 1:]:
                    yield a, b, False


def _merge_one(roots: list[Node]) -> list[Node] | None:
    order = toposort(roots)
    use = users(order)
    keep = {id(r) for r in roots}
    anc = _ancestors(order)
    pos = {id(n): k for k, n in enumerate(order)}
    for a, b, producer in _candidates(order, use, keep):
        if producer:  # no other reader of a may feed b (b would then read itself)
            if any(u is not b and anc[id(b)] >> pos[id(u)] & 1 for u in use[id(a)]):
                continue
        elif anc[id(a)] >> pos[id(b)] & 1 or anc[id(b)] >> pos[id(a)] & 1:
            continue
        inline = {id(a): a} if producer else {}
        parts = [(b.attr("body"), b.inputs), (a.attr("body"), a.inputs)] if producer else \
            [(a.attr("body"), a.inputs), (b.attr("body"), b.inputs)]
        body, ext = _combine_bodies(parts, inline)
        size = sum(not is_remap(n) and n.op not in ("param", "const", "tuple")
                   for n in toposort([body]))
        kind = _kind_of(body)
        if kind is None or size > MAX_GROUP:
            continue
        merged = make("fusion", ext, (), TUPLE_DTYPE, (("body", body), ("kind", kind)))
        first, second = (b, a) if producer else (a, b)
        return _replace(order, roots, merged, [first, second])
    return None


def _replace(order: list[Node], roots: list[Node], merged: Node, olds: list[Node]) -> list[Node]:
    """The graph with each old fusion's outputs read from `merged` (offsets in olds order)."""
    offset: dict[int, int] = {}
    k = 0
    for f in olds:
        offset[id(f)] = k
        k += len(_outputs(f))

    def out(i: int, like: Node) -> Node:
        return make("output", (merged,), like.shape, like.dtype, (("index", i),))

    new: dict[int, Node] = {}
    for n in order:
        if id(n) in offset:
            if n.attr("body").op != "tuple":
                new[id(n)] = out(offset[id(n)], n)
        elif n.op == "output" and id(n.inputs[0]) in offset:
            new[id(n)] = out(offset[id(n.inputs[0])] + n.attr("index"), n)
        else:
            new[id(n)] = with_inputs(n, tuple(new[id(i)] for i in n.inputs))
    return [new[id(r)] for r in roots]


def multi_output_fusion(roots: list[Node]) -> list[Node]:
    while True:
        merged = _merge_one(roots)
        if merged is None:
            return roots
        roots = merged
