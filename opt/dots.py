"""Dots (`matmul` nodes): matrix-chain reordering, the dot decomposer and the dot merger.

- matrix_chain: a chain of products whose intermediate results have no other users is evaluated
  in the order of least flops (memory of the intermediates breaks ties), by the classic dynamic
  program. Vector ends, transposes (`(A@B)^T = B^T @ A^T`) and sums over a matrix axis
  (`sum(A@B, 0) = sum(A, 0) @ B`: a row of ones at the chain's end) are part of the chain, as in
  eXLA. Floats are reassociated (allowed for this rewrite); integer products and sums wrap
  around in a ring and bool ones are a semiring, so those stay exact.
- dot_decompose: every dot becomes one canonical [B, M, K] x [B, K, N] dot (each operand's batch
  1 or B) with reshapes around it; transposes of the last two axes of an operand or of the
  result fold into the `ta`/`tb` attributes, so no copy is made.
- dot_merge: independent canonical dots that share an operand become one dot on the other
  operands concatenated, and slices of its result (XLA's DotMerger).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tracer.ir.node import Node, make, users
from tracer.ir.catalogue import matrix_shape
from tracer.ir.registry import OPS
from .combine import Contraction, contracted_order
from .rewrite import order_of, with_inputs


# ---------------------------------------------------------------- builders

def build(op: str, inputs: tuple[Node, ...], attrs: tuple = ()) -> Node:
    """A node typed by its registry rules."""
    d, a = OPS[op], dict(attrs)
    return make(op, inputs, d.shape_rule([i.shape for i in inputs], a),
                d.dtype_rule([i.dtype for i in inputs], a), attrs)


def reshape(x: Node, shape: tuple) -> Node:
    shape = tuple(shape)
    while x.op == "reshape":  # a reshape of a reshape is one reshape
        x = x.inputs[0]
    return x if x.shape == shape else build("reshape", (x,), (("shape", shape),))


def swap_perm(ndim: int) -> tuple:
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


def is_swap(n: Node) -> bool:
    """A transpose of the last two axes only."""
    return n.op == "transpose" and n.ndim >= 2 and n.attr("perm") == swap_perm(n.ndim)


def swap(x: Node) -> Node:
    """x with its last two axes swapped, as a view where one can do it."""
    if 1 in x.shape[-2:]:  # a vector: the same elements in the same order
        return reshape(x, matrix_shape(x.shape, True))
    perm = swap_perm(x.ndim)
    if x.op == "transpose":
        inner = x.attr("perm")
        perm, x = tuple(inner[p] for p in perm), x.inputs[0]
        if perm == tuple(range(x.ndim)):
            return x
    return build("transpose", (x,), (("perm", perm),))


def dot(a: Node, b: Node, ta: bool = False, tb: bool = False) -> Node:
    return build("matmul", (a, b), (("ta", True),) * ta + (("tb", True),) * tb)


def row_sum(x: Node, axis: int) -> Node:
    """Sum over axis -2 or -1 of x, keeping it as a length-1 axis."""
    ax = x.ndim + axis
    s = build("reduce_sum", (x,), (("axes", (ax,)),))
    return reshape(s, x.shape[:ax] + (1,) + x.shape[ax + 1:])


# ---------------------------------------------------------------- matrix chains

MAX_CHAIN = 32  # factors per chain: the dynamic program is cubic in it


@dataclass(frozen=True)
class Factor:
    node: Node | None     # None: a row or column of ones (multiplying by it is a sum)
    swapped: bool
    rows: int
    cols: int
    batch: tuple


def _leaf(x: Node) -> Factor:
    return Factor(x, False, x.shape[-2], x.shape[-1], x.shape[:-2])


def _ones(rows: int, cols: int) -> Factor:
    return Factor(None, False, rows, cols, ())


def _transposed(fs: list[Factor]) -> list[Factor]:
    return [Factor(f.node, not f.swapped, f.cols, f.rows, f.batch) for f in reversed(fs)]


@dataclass
class Chain:
    factors: list[Factor]
    shape: tuple          # the product's [.., rows, cols]; the node is a unit reshape of it
    nodes: list[Node]     # the nodes it stands for, the top one last


def _work(n: Node) -> int:
    """Multiply-adds of a chain node (a sum is a product with ones)."""
    if n.op == "matmul":
        return n.size * matrix_shape(n.inputs[0].shape, n.attr("ta", False))[-1]
    return n.inputs[0].size if n.op == "reduce_sum" else 0


class _Chains:
    def __init__(self, roots: list[Node]):
        self.order = order_of(roots)
        self.use = users(self.order)
        self.roots = {id(r) for r in roots}

    def inner(self, x: Node, dtype, budget: int) -> Chain | None:
        """x as a chain when its only user is the chain being built."""
        if id(x) in self.roots or len(self.use[id(x)]) != 1 or x.dtype != dtype or budget < 2:
            return None
        return self.expand(x, budget)

    def operand(self, x: Node, dtype, budget: int) -> Chain:
        sub = self.inner(x, dtype, budget)
        return sub if sub is not None and sub.shape == x.shape else Chain([_leaf(x)], x.shape, [])

    def expand(self, n: Node, budget: int = MAX_CHAIN) -> Chain | None:
        dt = n.dtype
        if n.op == "matmul" and all(i.dtype == dt for i in n.inputs):
            a = self.operand(n.inputs[0], dt, budget - 1)
            b = self.operand(n.inputs[1], dt, budget - len(a.factors))
            fa = _transposed(a.factors) if n.attr("ta") else a.factors
            fb = _transposed(b.factors) if n.attr("tb") else b.factors
            return Chain(fa + fb, n.shape, a.nodes + b.nodes + [n])
        x = n.inputs[0] if n.inputs else None
        if is_swap(n):
            # (A@B)^T = B^T @ A^T
            sub = self.inner(x, dt, budget)
            if sub is not None and sub.shape == x.shape:
                return Chain(_transposed(sub.factors), n.shape, sub.nodes + [n])
        elif n.op == "reduce_sum" and x.ndim >= 2 and n.attr("axes") and \
                set(n.attr("axes")) <= {x.ndim - 2, x.ndim - 1}:
            # sum(P, -2) = ones^T @ P, sum(P, -1) = P @ ones
            sub = self.inner(x, dt, budget - len(n.attr("axes")))
            if sub is not None and sub.shape == x.shape:
                fs, (r, c) = sub.factors, x.shape[-2:]
                if x.ndim - 2 in n.attr("axes"):
                    fs, r = [_ones(1, r)] + fs, 1
                if x.ndim - 1 in n.attr("axes"):
                    fs, c = fs + [_ones(c, 1)], 1
                return Chain(fs, x.shape[:-2] + (r, c), sub.nodes + [n])
        elif n.op == "reshape":
            sub = self.inner(x, dt, budget)
            if sub is not None and n.shape == sub.shape:
                return Chain(sub.factors, n.shape, sub.nodes + [n])
            if sub is not None and 1 in sub.shape[-2:] and \
                    n.shape == matrix_shape(sub.shape, True):  # a vector's transpose
                return Chain(_transposed(sub.factors), n.shape, sub.nodes + [n])
        return None


def _batch_sizes(fs: list[Factor]) -> list[list[int]]:
    """bs[i][j]: the number of batch elements of the product of factors i..j."""
    n = len(fs)
    if not any(f.batch for f in fs):  # plain matrices (a loop's chain, usually)
        return [[1] * n for _ in range(n)]
    bs = [[0] * n for _ in range(n)]
    for i in range(n):
        shape = ()
        for j in range(i, n):
            shape = np.broadcast_shapes(shape, fs[j].batch)
            bs[i][j] = math.prod(shape)
    return bs


def best_order(fs: list[Factor]) -> tuple[tuple[int, int], dict]:
    """(flops, bytes-free memory of the intermediates) of the best order, and its splits.
    O(k^3) for k factors: the classic dynamic program, the first best split kept."""
    n = len(fs)
    p = [f.rows for f in fs] + [fs[-1].cols]
    bs = _batch_sizes(fs)
    flops = [[0] * n for _ in range(n)]
    mem = [[0] * n for _ in range(n)]
    split = {}
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            b, pi, pj = bs[i][j], p[i], p[j + 1]
            size = b * pi * pj
            fi, mi = flops[i], mem[i]
            best, at = None, i
            for s in range(i, j):
                c = (fi[s] + flops[s + 1][j] + b * pi * p[s + 1] * pj, mi[s] + mem[s + 1][j] + size)
                if best is None or c < best:
                    best, at = c, s
            fi[j], mi[j] = best
            split[i, j] = at
    return (flops[0][n - 1], mem[0][n - 1] - bs[0][n - 1] * p[0] * p[n]), split


def _emit(fs: list[Factor], split: dict, i: int, j: int, new: dict) -> Node:
    if i == j:
        x = new[id(fs[i].node)]
        return swap(x) if fs[i].swapped else x
    s = split[i, j]
    if fs[i].node is None and s == i:
        return row_sum(_emit(fs, split, s + 1, j, new), -2)
    if fs[j].node is None and s + 1 == j:
        return row_sum(_emit(fs, split, i, s, new), -1)
    return dot(_emit(fs, split, i, s, new), _emit(fs, split, s + 1, j, new))


def _old_cost(ch: Chain) -> tuple[int, int]:
    work = sum(_work(m) for m in ch.nodes)
    mem = sum(m.size for m in ch.nodes[:-1] if m.op in ("matmul", "reduce_sum"))
    return work, mem


def matrix_chain(roots: list[Node]) -> list[Node]:
    """Matrix-chain reordering. O(n) to find chains plus O(k^3) per chain of k factors
    (k <= MAX_CHAIN), and one O(n) rebuild when a chain is reordered."""
    cs = _Chains(roots)
    seen: set[int] = set()
    plans: dict[int, tuple[Chain, dict]] = {}
    absorbed: set[int] = set()
    for n in reversed(cs.order):  # outermost chains first
        if id(n) in seen or n.op not in ("matmul", "transpose", "reduce_sum", "reshape"):
            continue
        ch = cs.expand(n)
        if ch is None or sum(f.node is not None for f in ch.factors) < 2:
            continue
        seen.update(id(m) for m in ch.nodes)  # parts of an optimal chain are optimal
        if len(ch.factors) < 3:
            continue
        cost, split = best_order(ch.factors)
        if cost < _old_cost(ch):
            plans[id(n)] = (ch, split)
            absorbed.update(id(m) for m in ch.nodes[:-1])
    if not plans:
        return roots
    new: dict[int, Node] = {}
    for n in cs.order:
        if id(n) in absorbed:
            continue  # its only user was rewritten
        if id(n) in plans:
            ch, split = plans[id(n)]
            prod = _emit(ch.factors, split, 0, len(ch.factors) - 1, new)
            new[id(n)] = reshape(prod, n.shape)
        else:
            new[id(n)] = with_inputs(n, tuple(new[id(i)] for i in n.inputs))
    return [new[id(r)] for r in roots]


# ---------------------------------------------------------------- dot decomposer

def _strided_view(x: Node) -> bool:
    """A value the executor keeps as a strided view, which a batch-folding reshape would copy."""
    while x.op == "reshape":
        x = x.inputs[0]
    return x.op in ("transpose", "broadcast_to", "slice")


def _batched(x: Node, batch: tuple) -> Node:
    """x [.., r, c] as [1, r, c] (shared by the batch) or [B, r, c]."""
    xb, B = x.shape[:-2], math.prod(batch)
    if math.prod(xb) == 1:
        return reshape(x, (1,) + x.shape[-2:])
    if (1,) * (len(batch) - len(xb)) + xb != batch:  # partial broadcast: made explicit
        x = build("broadcast_to", (x,), (("shape", batch + x.shape[-2:]),))
    return reshape(x, (B,) + x.shape[-2:])


def canonical_dot(a: Node, b: Node, ta: bool, tb: bool, shape: tuple) -> Node:
    """a @ b (stored transposed where ta/tb) as one [B, M, K] x [B, K, N] dot, reshaped to
    `shape`."""
    if is_swap(a):
        a, ta = a.inputs[0], not ta
    if is_swap(b):
        b, tb = b.inputs[0], not tb
    m, k = matrix_shape(a.shape, ta)[-2:]
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    B = math.prod(batch)
    if B > 1 and math.prod(b.shape[:-2]) == 1 and not ta and math.prod(a.shape[:-2]) == B \
            and not _strided_view(a):
        # b shared by every batch: the batch folds into a's rows, one GEMM instead of B
        out = dot(reshape(a, (1, B * m, k)), reshape(b, (1,) + b.shape[-2:]), False, tb)
    else:
        out = dot(_batched(a, batch), _batched(b, batch), ta, tb)
    return reshape(out, shape)


def dot_decompose(roots: list[Node]) -> list[Node]:
    """Dot decomposer. O(n): one sweep in order."""
    order = order_of(roots)
    use = users(order)
    keep = {id(r) for r in roots}
    # a transpose of the last two axes of a dot's result is the dot of the swapped operands
    flipped = {id(n.inputs[0]) for n in order if is_swap(n) and n.inputs[0].op == "matmul"
               and len(use[id(n.inputs[0])]) == 1 and id(n.inputs[0]) not in keep}
    new: dict[int, Node] = {}
    for n in order:
        if id(n) in flipped:
            continue  # built by its transpose
        if is_swap(n) and id(n.inputs[0]) in flipped:
            d = n.inputs[0]
            a, b = (new[id(i)] for i in d.inputs)
            new[id(n)] = canonical_dot(b, a, not d.attr("tb", False), not d.attr("ta", False),
                                       n.shape)
            continue
        ins = tuple(new[id(i)] for i in n.inputs)
        if n.op == "matmul":
            m = canonical_dot(*ins, n.attr("ta", False), n.attr("tb", False), n.shape)
        elif n.op == "reshape" and ins[0].op == "reshape":
            m = reshape(ins[0], n.shape)
        else:
            m = with_inputs(n, ins)
        new[id(n)] = m
    return [new[id(r)] for r in roots]


# ---------------------------------------------------------------- dot merger

# XLA merges when at least one dot's inputs+output are under a threshold. Here concatenate is a
# real copy of the operands that differ, so the bound is on those bytes instead: 1 MiB copies in
# tens of microseconds (about what a separate library call costs), and a big operand is never
# copied. The shared operand is read once instead of once per dot, whatever its size.
DOT_MERGE_MAX_BYTES = 1 << 20


def _canonical(n: Node) -> bool:
    return n.op == "matmul" and n.ndim == 3 and all(i.ndim == 3 for i in n.inputs)


def _merge_key(d: Node, side: int) -> tuple:
    """Dots with equal keys share operand `side` and can concatenate the other one."""
    flags = (d.attr("ta", False), d.attr("tb", False))
    other = d.inputs[1 - side]
    ax = _cat_axis(d, side)
    rest = other.shape[:ax] + other.shape[ax + 1:]
    return side, id(d.inputs[side]), flags, rest, other.dtype, d.dtype


def _cat_axis(d: Node, side: int) -> int:
    """The axis of the other operand's storage that becomes the result's rows (side 1) or
    columns (side 0)."""
    t = d.attr("tb" if side == 0 else "ta", False)
    return (1 if t else 2) if side == 0 else (2 if t else 1)


# Groups of its key (newest first) a dot tries to join before it starts one of its own.
DOT_MERGE_TRIES = 4
DOT_MERGE_ROUNDS = 4  # a round merges what the last one made


def _merge_groups(order: list[Node]) -> list[tuple[int, list[Node]]]:
    """Groups (side, dots in order) of dots sharing operand `side`, each joining the newest
    group of its key that it can (trying at most DOT_MERGE_TRIES, and none past one it
    depends on) or starting one, so a loop that reads one weight in two independent dots a
    step merges the two of every step.
    A dot that reads the newest member of a group (known for the DOT_WINDOW dots before it)
    does not try it; else a `Contraction` of the graph keeps the graph with the groups
    contracted acyclic, by a search bounded by SEARCH_BUDGET edges per check (dots of one
    depth: their own edges). O(n + e) plus O(DOT_MERGE_TRIES) checks per dot and key."""
    dots = [n for n in order if _canonical(n)]
    if len(dots) < 2:
        return []
    by_key: dict[tuple, list[Node]] = {}
    for d in dots:
        for side in (0, 1):
            by_key.setdefault(_merge_key(d, side), []).append(d)
    if all(len(c) < 2 for c in by_key.values()):
        return []
    g = None  # made at the first check
    recent = _recent_dots(order, dots)
    taken: set[int] = set()  # dots in a group of two or more
    out: list[tuple[int, list[Node]]] = []
    for (side, *_), cands in by_key.items():
        if len(cands) < 2:
            continue
        groups: list[list] = []  # [members, vertex, bytes copied]
        for d in cands:
            if id(d) in taken:
                continue
            nb = d.inputs[1 - side].nbytes
            for grp in groups[:-DOT_MERGE_TRIES - 1:-1]:
                members, v, copied = grp
                if copied + nb > DOT_MERGE_MAX_BYTES:
                    continue
                if recent(d, members[-1]):
                    plan = None
                else:
                    g = g or Contraction(order, users(order))
                    plan = g.check(v, id(d))
                if plan is None:  # a path (older groups: likely too) or too far to tell
                    groups.append([[d], id(d), nb])
                    break
                grp[1:] = [g.merge(plan), copied + nb]
                members.append(d)
                taken.update((id(members[0]), id(d)))
                break
            else:
                groups.append([[d], id(d), nb])
        out += [(side, members) for members, *_ in groups if len(members) > 1]
    return out


DOT_WINDOW = 64  # the newest dots whose dependents _recent_dots knows


def _recent_dots(order: list[Node], dots: list[Node]):
    """depends(d, e): whether dot d reads dot e in the graph, known (from the bit set of the
    DOT_WINDOW dots before it each node depends on) where e is one of those, else False: a
    test before the Contraction's search, which a loop's chain of dots would otherwise make
    for every step. O(e) for e edges (a bit set is a word or two)."""
    index = {id(d): k for k, d in enumerate(dots)}
    deps: dict[int, tuple[int, int]] = {}  # node -> (base, bits k - base of the dots k)
    seen = 0  # dots so far
    for n in order:
        base = max(0, seen - DOT_WINDOW)
        m = 0
        for i in n.inputs:
            b, bits = deps[id(i)]
            k = index.get(id(i), -1)
            m |= bits >> base - b | (1 << k - base if k >= base else 0)
        deps[id(n)] = (base, m)
        seen += id(n) in index

    def depends(d: Node, e: Node) -> bool:
        base, bits = deps[id(d)]
        k = index[id(e)] - base
        return k >= 0 and bool(bits >> k & 1)
    return depends


def _merged(side: int, group: list[Node], new: dict[int, Node]) -> list[Node]:
    """One dot for the group, on the operands' replacements; a slice of its result for each
    member."""
    d0 = group[0]
    ta, tb = d0.attr("ta", False), d0.attr("tb", False)
    cat = build("concatenate", tuple(new[id(g.inputs[1 - side])] for g in group),
                (("axis", _cat_axis(d0, side)),))
    shared = new[id(d0.inputs[side])]
    m = dot(shared, cat, ta, tb) if side == 0 else dot(cat, shared, ta, tb)
    ax, off, out = 2 - side, 0, []
    for g in group:
        sl = tuple((0, s, 1) for s in m.shape)
        sl = sl[:ax] + ((off, off + g.shape[ax], 1),) + sl[ax + 1:]
        out.append(build("slice", (m,), (("slices", sl),)))
        off += g.shape[ax]
    return out


def dot_merge(roots: list[Node]) -> list[Node]:
    """Dot merger. A round is O(n + e) plus the bounded checks of _merge_groups, and rebuilds
    the graph once with each group contracted to its merged dot (in the contracted graph's
    order, on the new operands). At most DOT_MERGE_ROUNDS rounds, while one merges (usually
    one). (Every node kept the bit set of the dots it depends on, O(n d/64) for d dots, and a
    key made one group a round: a loop's dots past the first step stayed apart.)"""
    for _round in range(DOT_MERGE_ROUNDS):
        order = order_of(roots)
        groups = _merge_groups(order)
        if not groups:
            break
        verts = contracted_order(order, [members for _side, members in groups])
        assert verts is not None, "dot merge made a cycle"
        new: dict[int, Node] = {}
        for v in verts:
            if isinstance(v, int):
                side, members = groups[v]
                for m, sl in zip(members, _merged(side, members, new)):
                    new[id(m)] = sl
            else:
                new[id(v)] = with_inputs(v, tuple(new[id(i)] for i in v.inputs))
        roots = [new[id(r)] for r in roots]
    return roots
