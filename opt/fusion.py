"""Instruction fusion: elementwise chains (with broadcasts and transposes as index remaps) become
one loop kernel; elementwise producers fuse into the input of a reduction and elementwise
consumers into its store.

The result is XLA-style: each group becomes a `fusion` node whose `body` attribute is the group's
own small graph over `param` nodes, and whose inputs are the values the group reads.
"""
from __future__ import annotations

from ir import Node, make, toposort, users
from ir.registry import OPS, Kind

_REMAPS = ("broadcast_to", "transpose")
MAX_GROUP = 64


def has_kernel(n: Node) -> bool:
    d = OPS.get(n.op)
    if d is None:
        return False
    if d.kind is Kind.ELEMENTWISE:
        return d.template is not None and \
            d.template(tuple(i.dtype for i in n.inputs), n.dtype, "cpu") is not None
    if d.kind is Kind.REDUCE:
        return n.inputs[0].dtype.kind in "biuf" and n.inputs[0].dtype.itemsize != 2
    if n.op in _REMAPS:
        return n.dtype.kind in "biuf" and n.dtype.itemsize != 2
    return False


def is_reduce(n: Node) -> bool:
    return OPS[n.op].kind is Kind.REDUCE if n.op in OPS else False


def _free_remap(n: Node) -> bool:
    """Index remaps of leaves are recomputed per use instead of materialized."""
    while n.op in _REMAPS:
        n = n.inputs[0]
    return n.op in ("input", "const")


def fusion(roots: list[Node]) -> list[Node]:
    order = toposort(roots)
    use = users(order)
    root_ids = {id(r) for r in roots}
    fusible = {id(n): has_kernel(n) for n in order}

    mat: set[int] = set(root_ids)
    for n in order:
        if not n.inputs:
            continue
        us = use[id(n)]
        if not fusible[id(n)]:
            mat.add(id(n))
        elif any(not fusible[id(u)] for u in us):
            mat.add(id(n))
        elif is_reduce(n) and any(OPS[u.op].kind is not Kind.ELEMENTWISE for u in us):
            mat.add(id(n))

    while True:
        # A value read by two groups is materialized (only the topmost shared value: below it
        # the groups no longer overlap). Index remaps are recomputed, never shared. One
        # reduction per group: the deeper ones are materialized.
        extra, owner, shared = set(), {}, set()
        for n in reversed(order):
            if id(n) in mat and fusible[id(n)]:
                members = _group(n, mat)
                reds = [m for m in members if is_reduce(m)]
                extra.update(id(r) for r in reds[:-1])
                if reds:  # the epilogue runs at the reduction's output index: no remaps
                    above = {id(reds[-1])}
                    for m in members:
                        if any(id(i) in above for i in m.inputs):
                            above.add(id(m))
                            if m.op in _REMAPS:
                                extra.add(id(m.inputs[0]))
                compute = [m for m in members if m.op not in _REMAPS and m is not n]
                if len(compute) >= MAX_GROUP:  # bound kernel size and compile time
                    extra.add(id(compute[len(compute) // 2]))
                for m in members:
                    if m is not n and m.op not in _REMAPS:
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
        elif not fusible[id(n)]:
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
                    (i.op in _REMAPS and _free_remap(i)))


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
    kind = "reduce" if any(is_reduce(m) for m in toposort([b])) else "loop"
    return make("fusion", tuple(ext), root.shape, root.dtype, (("body", b), ("kind", kind)))
