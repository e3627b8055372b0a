"""Instruction fusion: elementwise chains (with broadcasts, transposes, unit-axis reshapes and
gathers of materialized values as index remaps) become one loop kernel; elementwise producers
fuse into the input of a reduction and elementwise consumers into its store. Reductions over
the trailing axes whose results come back to the rows through keepdims broadcasts (softmax,
normalization) fuse with their producers and consumers into one row kernel. A short reduction (at most INLINE_MAX values per output, no
arg-reduction) read by its group's other members at its own index, never through a remap,
computes inline: its kernel unrolls it at each index that reads it (the naive min-distance's
sum over D = 3 inside the min over M: one kernel, no N x M buffer).

The result is XLA-style: each group becomes a `fusion` node whose `body` attribute is the group's
own small graph over `param` nodes, and whose inputs are the values the group reads. The later
fusion passes (fusion_merger, multi_output, horizontal) combine these fusions and ask the kernel
properties defined here (has_kernel, compute_size, row_layout, MAX_GROUP).
"""
from __future__ import annotations

import math

from tracer.ir.node import Node, make, users
from tracer.ir.catalogue import unit_reshape
from tracer.ir.registry import OPS, Kind, fusion_outputs, is_kind, is_leaf
from tracer.ir.registry import is_kernel_reduce as is_reduce
from .rewrite import order_of

MAX_GROUP = 64
# A row kernel runs each row in one thread (one block on cuda): worth it with enough rows to
# spread, or rows short enough that one worker finishes them quickly.
ROW_MIN_ROWS = 16
ROW_MAX_LEN = 1 << 14
INLINE_MAX = 16  # values per output of a reduction computed inline (unrolled)


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
    if d.kind is Kind.GATHER:  # an index remap of its materialized source (_gather_sources)
        return n.dtype.kind in "biuf" and n.dtype.itemsize != 2 and \
            all(i.dtype.kind == "i" or i.dtype.kind == "u" and i.dtype.itemsize < 8
                for i in n.inputs[1:])  # (a uint64 index past 2**63 would wrap to negative)
    return False


def _gather_sources(n: Node) -> list[Node]:
    """What a fused gather reads through index remaps: its source and its index arrays'
    values, each materialized (a param of the kernel) unless a leaf: an index is read once
    per element, and the source at data-dependent positions, so neither is recomputed."""
    out = []
    for i in n.inputs:
        while is_remap(i):
            i = i.inputs[0]
        if not is_leaf(i):
            out.append(i)
    return out


def _short(n: Node) -> bool:
    """A reduction that may compute inline: a ufunc's, of at most INLINE_MAX values."""
    if not is_reduce(n) or OPS[n.op].ufunc is None or n.inputs[0].op == "chunk":
        return False  # (a tree reduction's first stage is split to run in parallel)
    src = n.inputs[0].shape
    return math.prod(src[a] for a in n.attr("axes")) <= INLINE_MAX


def inline_set(members: list[Node], root: Node) -> set[int]:
    """The group's reductions that compute inline: short ones (not the root), in a group
    with another reduction, that no remap of the group reads, directly or through other
    members (a remap would recompute them at every index it spreads them to)."""
    cands = {id(m) for m in members if m is not root and _short(m)}
    if not any(is_reduce(m) and id(m) not in cands for m in members):
        return set()  # no reduction to inline into: the reduce kernel's own form serves
    spread: set[int] = set()  # candidates some member reads through a remap
    reads: dict[int, set[int]] = {}  # member -> the candidates it reads
    for m in members:
        got: set[int] = set()
        for i in m.inputs:
            got |= reads.get(id(i), set())
            if id(i) in cands:
                got.add(id(i))
        reads[id(m)] = got
        if is_remap(m):
            spread |= got
    return cands - spread


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


def _above(members: list[Node], inline: set[int] = frozenset()) -> set[int]:
    """Members that read a reduction of the group (directly or through other members), but
    the inline ones."""
    above: set[int] = set()
    for m in members:
        if any((is_reduce(i) and id(i) not in inline) or id(i) in above for i in m.inputs):
            above.add(id(m))
    return above


def row_layout(members: list[Node], root: Node,
               inline: set[int] = frozenset()) -> tuple[tuple, tuple] | None:
    """(row domain shape, reduced axes) when the group can run as one row kernel: every
    reduction (but the inline ones) reduces the same trailing axes of the same shape, and
    reduced values come back to the rows only through keepdims broadcasts."""
    reds = [m for m in members if is_reduce(m) and id(m) not in inline]
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
    above = _above(members, inline)
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


def needs_row(members: list[Node], inline: set[int] = frozenset()) -> bool:
    """Several reductions (but the inline ones), or a reduced value read back at row
    positions."""
    if sum(is_reduce(m) and id(m) not in inline for m in members) > 1:
        return True
    above = _above(members, inline)
    return any(is_remap(m) for m in members if id(m) in above)


def fusion(roots: list[Node]) -> list[Node]:
    """Instruction fusion. O(k (n + e + sum of group sizes x inputs per member)) for k rounds
    of materialization decisions over n nodes and e edges; the groups are disjoint but for
    recomputed remaps, and k is a handful (a round materializes the rows' deeper
    reductions, the inputs of materialized reshapes and the cuts of oversized groups, each
    found whole in one round; usually 1 or 2)."""
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
        elif n.op == "gather":
            mat.update(id(i) for i in _gather_sources(n))
        elif any(not fusible[id(u)] for u in us):
            mat.add(id(n))
        elif is_reduce(n) and any(OPS[u.op].kind is not Kind.ELEMENTWISE and not is_remap(u)
                                  and not (is_reduce(u) and _short(n)) for u in us):
            mat.add(id(n))

    while True:
        # A value read by two groups is materialized (_groups: the topmost shared value, and
        # below it the groups no longer overlap). Index remaps are recomputed, never shared.
        # One reduction per group, unless the group is a row kernel: the deeper ones are
        # materialized. A materialized reshape is a view of its materialized input.
        extra = set()
        # of this round's mat: the last round's are final
        groups = _groups(order, use, [n for n in order if id(n) in mat and fusible[id(n)] and
                                      n.op != "reshape"], mat)
        inlines: dict[int, set[int]] = {}  # group head -> its inline reductions
        for n in reversed(order):
            if id(n) in mat and n.op == "reshape":
                extra.add(id(n.inputs[0]))
            elif id(n) in groups:
                members = groups[id(n)]
                inline = inlines[id(n)] = inline_set(members, n)
                reds = [m for m in members if is_reduce(m) and id(m) not in inline]
                if reds and needs_row(members, inline) and \
                        row_layout(members, n, inline) is None:
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
                    # in pieces under the cap at once: halving took log n rounds on a chain
                    parts = -(-len(compute) // (MAX_GROUP - 1))
                    extra.update(id(compute[len(compute) * k // parts]) for k in range(1, parts))
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
            new[id(n)] = _make_fusion(n, groups[id(n)], inlines[id(n)], new)
    return [new[id(r)] for r in roots]


def _external(i: Node, new: dict[int, Node]) -> Node:
    got = new.get(id(i))
    if got is None:  # a free remap of a leaf used by an unfusible op
        ins = tuple(_external(j, new) for j in i.inputs)
        got = make(i.op, ins, i.shape, i.dtype, i.attrs)
        new[id(i)] = got
    return got


def _groups(order: list[Node], use: dict[int, list[Node]], heads: list[Node],
            mat: set[int]) -> dict[int, list[Node]]:
    """Each head's group: the nodes it reaches through unmaterialized non-leaves and free
    remaps, in `order`'s order filtered to the group (so no group is sorted on its own). One
    pass back over the order gives each node the groups of its users that read through it,
    one pass forward lists the members. A value that two groups would read through (but an
    index remap, which each recomputes) is materialized instead: added to `mat`, the head of
    a group of its own. Going back over the order its users have decided already, so it is
    the topmost shared value, and below it those groups no longer overlap. The groups are
    disjoint but for remaps: O(n + e + remap memberships). (Shared values were found after
    the groups were listed whole, one topmost value a round: a loop reading a statistic of
    its state every step made groups of quadratic total size.) The sets are never changed
    once stored: a node in its users' one group shares their set."""
    of: dict[int, frozenset[int]] = {id(h): frozenset((id(h),)) for h in heads}
    made = []  # the values materialized here
    for n in reversed(order):
        sets = {}  # the distinct sets of n's users (by identity)
        for u in use[id(n)]:
            g = of.get(id(u))
            if g is not None:
                sets[id(g)] = g
        if not sets:
            continue
        if id(n) not in mat and not is_leaf(n):
            if not is_remap(n) and (len(sets) > 1 or len(next(iter(sets.values()))) > 1):
                mat.add(id(n))
                made.append(n)
                of[id(n)] = frozenset((id(n),))
                continue
        elif not (is_remap(n) and _free_remap(n)):
            continue
        own = of.get(id(n))
        if own is not None:
            sets[id(own)] = own
        # one union of them all (pairwise unions: quadratic in a leaf's readers)
        of[id(n)] = next(iter(sets.values())) if len(sets) == 1 else \
            frozenset().union(*sets.values())
    groups: dict[int, list[Node]] = {id(h): [] for h in (*heads, *made)}
    for n in order:
        for g in of.get(id(n), ()):
            groups[g].append(n)
    return groups


def _make_fusion(root: Node, group: list[Node], inline: set[int],
                 new: dict[int, Node]) -> Node:
    """The fusion node of root's group (its members in order, root last; `inline`: its
    reductions computed inline, inline_set's)."""
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
        attrs = m.attrs
        if id(m) in inline:  # its sizes: the kernel unrolls them (and its key says so)
            attrs += (("inline", tuple(m.inputs[0].shape[a] for a in m.attr("axes"))),)
        body[id(m)] = make(m.op, tuple(ins), m.shape, m.dtype, attrs)
    b = body[id(root)]
    members_in_body = [body[id(m)] for m in group]  # in order: what needs_row reads
    kind = "loop"
    if any(is_reduce(m) for m in members_in_body):
        kind = "row" if needs_row(members_in_body) else "reduce"
    return make("fusion", tuple(ext), root.shape, root.dtype, (("body", b), ("kind", kind)))
