"""Tensor splitter: run a program in chunks of the rows of one value, when its plan needs more
memory than the active budget (eXLA's splitting, seeds/004).

A split is a source value S and one of its axes. Every output must depend on S row by row
along that axis: each op on the way acts independently along it (elementwise ops, broadcasts,
transposes, reshapes that keep it, reductions over other axes, the row side of a matmul).
Then row block [lo, hi) of the outputs needs only row block [lo, hi) of S, and the values the
program reads besides S in full.

The budget runner (tracer/budgeted.py) realizes S and the values the chunks read in full
(`frontier`) first, then for each chunk evaluates `chunk_graph(...)` and copies its results into
the outputs. The big tensors of the paths (the N x M x D difference, the N x M score matrix) then
only ever exist one chunk of rows at a time.

S is sought among the graph's leaves, their reshapes (views: a flat input seen as rows, its
rows read from the input chunk by chunk) and computed values (self-attention: Q, K and V all come
from X, so X's rows are not independent, but Q's are once K and V are realized); of those that
cover every output, the one that leaves the fewest bytes to hold whole wins. The pipeline's
tensor_splitter stage seeks it under a budget, on the graph as recorded (the simplification
group's rewrites hide the rows: a distance's GEMM, canonical 3-D dots, merged dots), and keeps
it on the optimizer's result; each chunk graph is optimized in full when it runs.
"""
from __future__ import annotations

from dataclasses import dataclass

from tracer.ir.node import Buffer, Node, make, toposort
from tracer.ir.registry import OPS, Kind, is_leaf

FAIL = "fail"  # a value that depends on S across rows: no split through it
CUT = "cut"    # a value that depends on S only through reductions over its rows (combined)
MAX_NODES = 400  # graphs past this are not searched (candidates x nodes)


@dataclass
class Split:
    source: Node            # S
    axis: int               # the split axis of S
    root_axes: list         # per root: its axis that follows S's rows, None (independent of
                            # S) or CUT (computed from the combined reductions)
    frontier: list          # values the chunks read in full: realized before the chunks
    cuts: dict              # id -> (reduction over S's rows, its input's row axis): each chunk
                            # reduces its rows, the partials combine in order (by the
                            # reduction's ufunc)
    roots: list             # the graph split

    @property
    def rows(self) -> int:
        return self.source.shape[self.axis]

    def on(self, roots: list[Node]) -> Split:
        """This split of a graph of the same structure (a cached plan's split, of this
        evaluation's graph): nodes matched by their place in the topological order."""
        new = dict(zip(map(id, toposort(self.roots)), toposort(roots)))
        at = lambda n: new[id(n)]  # noqa: E731
        return Split(at(self.source), self.axis, self.root_axes,
                     [at(n) for n in self.frontier],
                     {id(at(n)): (at(n), ax) for n, ax in self.cuts.values()}, roots)


def _kind(n: Node) -> Kind:
    return OPS[n.op].kind


def reshaped_input(n: Node) -> bool:
    """Whether n is a reshape of an input leaf: a view of the user's memory, which a split
    reads row block by row block as it reads a leaf."""
    return n.op == "reshape" and n.inputs[0].op == "input"


def _full_slice(n: Node, ax: int) -> bool:
    start, stop, step = n.attr("slices")[ax]
    return start == 0 and step == 1 and stop in (-1, n.inputs[0].shape[ax])


def _matmul_axes(n: Node) -> tuple[int, int, int, int]:
    """(M axis of a, K axis of a, K axis of b, N axis of b) as stored (ta/tb swap them)."""
    a, b = n.inputs
    m_a, k_a = (a.ndim - 1, a.ndim - 2) if n.attr("ta") else (a.ndim - 2, a.ndim - 1)
    k_b, n_b = (b.ndim - 1, b.ndim - 2) if n.attr("tb") else (b.ndim - 2, b.ndim - 1)
    return m_a, k_a, k_b, n_b


def _forward(n: Node, ins: list) -> int | str | None:
    """n's axis that follows S's rows, from its inputs' (None: n does not depend on S; CUT: it
    depends on S only through combined reductions)."""
    if FAIL in ins:
        return FAIL
    if all(i is None for i in ins):
        return None
    if CUT in ins:  # after the chunks: it must not meet values that still have rows
        return CUT if all(i in (None, CUT) for i in ins) else FAIL
    kind = _kind(n)
    if kind is Kind.ELEMENTWISE:
        axes = {i for i in ins if i is not None}
        return axes.pop() if len(axes) == 1 else FAIL
    (x,), (k,) = n.inputs[:1], ins[:1]
    if n.op == "broadcast_to":
        return k + n.ndim - x.ndim
    if n.op == "transpose":
        return n.attr("perm").index(k)
    if n.op == "reshape":
        return k if x.shape[:k + 1] == n.shape[:k + 1] else FAIL
    if n.op == "slice":
        return k if _full_slice(n, k) else FAIL
    if kind is Kind.REDUCE:
        axes = n.attr("axes")
        if k in axes:  # partials combine by the ufunc (not arg-reductions: indices)
            return CUT if OPS[n.op].ufunc is not None else FAIL
        return [i for i in range(x.ndim) if i not in axes].index(k)
    if n.op == "matmul":
        (a, b), (ka, kb) = n.inputs, ins
        m_a, k_a, k_b, n_b = _matmul_axes(n)
        r = n.ndim
        outs = set()
        for opnd, kk, row, inner, out_ax in ((a, ka, m_a, k_a, r - 2), (b, kb, n_b, k_b, r - 1)):
            if kk is None:
                continue
            if kk == inner:
                return FAIL
            outs.add(out_ax if kk == row else r - opnd.ndim + kk)
        return outs.pop() if len(outs) == 1 else FAIL
    return FAIL


def _trace(roots: list[Node], order: list[Node], source: Node, axis: int) -> dict[int, object]:
    ax: dict[int, object] = {}
    for n in order:
        ax[id(n)] = axis if n is source else _forward(n, [ax[id(i)] for i in n.inputs])
    return ax


def find(roots: list[Node], sources: dict | None = None) -> Split | None:
    """The (source, axis) every root follows row by row that leaves the least to hold whole
    (the source, when computed, and the values the chunks read in full); None when there is
    none. `sources`: {id: axes} of the only leaves to split, each along one of its axes (values
    held in blocks of rows elsewhere: the axes that walk their rows, the best first). O(c n)
    for c candidate (source, axis) pairs, each traced over the graph, on graphs of at most
    MAX_NODES nodes; a larger graph is only sorted, O(n)."""
    order = toposort(roots)
    if len(order) > MAX_NODES:
        return None
    root_ids = {id(r) for r in roots}
    leaves = [n for n in order if n.op == "input" and n.ndim]
    computed = [n for n in order if not is_leaf(n) and n.ndim and id(n) not in root_ids and
                (_kind(n) is not Kind.MOVEMENT or reshaped_input(n))]
    if sources is not None:
        leaves, computed = [n for n in leaves if id(n) in sources], []
    best, held = None, 0
    for source in leaves + computed:
        for axis in range(source.ndim) if sources is None else sources[id(source)]:
            if source.shape[axis] < 2:
                continue
            ax = _trace(roots, order, source, axis)
            root_axes = [ax[id(r)] for r in roots]
            if FAIL in root_axes or all(a is None for a in root_axes):
                continue
            frontier = _frontier(order, ax, source)
            cuts = {id(n): (n, ax[id(n.inputs[0])]) for n in order
                    if ax[id(n)] == CUT and _kind(n) is Kind.REDUCE and
                    isinstance(ax[id(n.inputs[0])], int)}
            cost = sum(n.nbytes for n in frontier) + \
                (source.nbytes if source.op != "input" and not reshaped_input(source) else 0)
            if best is None or cost < held:
                best, held = Split(source, axis, root_axes, frontier, cuts, roots), cost
    return best


def first_cuts(roots: list[Node], sources: dict) -> list[Node]:
    """Reductions over the rows of a source in `sources` ({id of a leaf: axes}: the first)
    whose results meet that source's rows again (`x - x.mean(0)`): no split runs them in one
    pass, but once they are computed (by a split of their own) and made leaves, one may."""
    order = toposort(roots)
    if len(order) > MAX_NODES:
        return []
    found: dict[int, Node] = {}
    for source in order:
        if id(source) not in sources or not source.ndim:
            continue
        ax = _trace(roots, order, source, sources[id(source)][0])
        for n in order:
            ins = [ax[id(i)] for i in n.inputs]
            if ax[id(n)] == FAIL and FAIL not in ins and CUT in ins:
                stack = [i for i, a in zip(n.inputs, ins) if a == CUT]
                while stack:  # down to the reductions over the rows (not their broadcasts)
                    c = stack.pop()
                    if _kind(c) is Kind.REDUCE and isinstance(ax[id(c.inputs[0])], int):
                        found[id(c)] = c
                    else:
                        stack.extend(i for i in c.inputs if ax[id(i)] == CUT)
    return list(found.values())


def _frontier(order: list[Node], ax: dict[int, object], source: Node) -> list[Node]:
    """Values independent of S that chunks read whole (a matmul's other operand, a row
    statistic of another input): realized once before the chunks. Leaves, constants and
    movements of them stay in the chunk graphs (a broadcast is rebuilt per chunk, never
    materialized)."""
    out: dict[int, Node] = {}
    for n in order:
        if ax[id(n)] is None or n is source:
            continue
        for i in n.inputs:
            if ax[id(i)] is None:
                _collect(i, out)
    return list(out.values())


def _collect(n: Node, out: dict[int, Node]) -> None:
    if is_leaf(n):
        return
    if _kind(n) is Kind.MOVEMENT:
        for i in n.inputs:
            _collect(i, out)
        return
    out[id(n)] = n


def row_block(value, axis: int, lo: int, hi: int):
    """value[..., lo:hi, ...] along `axis` (a view)."""
    idx = [slice(None)] * value.ndim
    idx[axis] = slice(lo, hi)
    return value[tuple(idx)]


def _leaf(value, n: Node) -> Node:
    return make("input", (), tuple(value.shape), n.dtype, (("buf", Buffer(value)),))


def chunk_graph(targets: list[tuple[Node, int | None]], split: Split, lo: int, hi: int,
                source_rows, realized: dict[int, Node]) -> list[Node]:
    """Rows [lo, hi) of each (node, axis) target as a graph (a target with no axis is whole:
    a cut's partial over these rows, or a value after the cuts): `source_rows` is the realized
    rows of S, `realized` maps frontier values (and combined cuts) to their leaves."""
    memo: dict[tuple[int, object], Node] = {}

    def go(n: Node, k: int | None) -> Node:
        key = (id(n), k)
        if key not in memo:
            memo[key] = _rebuild(n, k)
        return memo[key]

    def _rebuild(n: Node, k: int | None) -> Node:
        if n is split.source and k is not None:
            return _leaf(source_rows, n)
        if id(n) in realized:
            whole = realized[id(n)]
            return whole if k is None else _leaf(row_block(whole.attr("buf").value, k, lo, hi), n)
        if n.op == "input":
            return n if k is None else _leaf(row_block(n.attr("buf").value, k, lo, hi), n)
        if k is None and n.op == "const":
            return n
        shape = list(n.shape)
        if k is not None:
            shape[k] = hi - lo
        kind = _kind(n)
        attrs = dict(n.attrs)
        if kind is Kind.ELEMENTWISE:
            ins = [go(i, k) for i in n.inputs]
        elif n.op == "broadcast_to":
            x = n.inputs[0]
            kin = None if k is None else k - (n.ndim - x.ndim)
            kin = kin if kin is not None and kin >= 0 and x.shape[kin] != 1 else None
            ins = [go(x, kin)]
            attrs["shape"] = tuple(shape)
        elif n.op == "transpose":
            ins = [go(n.inputs[0], None if k is None else n.attr("perm")[k])]
        elif n.op == "reshape" and (kin := _reshape_axis(n, k)) != FAIL:
            ins = [go(n.inputs[0], kin)]
            attrs["shape"] = tuple(shape)
        elif n.op == "slice" and (k is None or _full_slice(n, k)):
            ins = [go(n.inputs[0], k)]  # (whole along k: the chunk's rows, whole)
            if k is not None:
                attrs["slices"] = tuple((0, hi - lo, 1) if i == k else s
                                        for i, s in enumerate(n.attr("slices")))
        elif id(n) in split.cuts:  # this chunk's partial
            ins = [go(n.inputs[0], split.cuts[id(n)][1])]
        elif kind is Kind.REDUCE:
            x = n.inputs[0]
            kept = [i for i in range(x.ndim) if i not in n.attr("axes")]
            ins = [go(x, None if k is None else kept[k])]
        elif n.op == "matmul":
            ins = _matmul_inputs(n, k, go)
        elif k is None:
            ins = [go(i, None) for i in n.inputs]
        else:  # a value independent of S read beside its rows: these rows of the whole
            return _rows_of(go(n, None), k, lo, hi)
        return make(n.op, tuple(ins), tuple(shape), n.dtype, tuple(attrs.items()))

    return [go(r, k) for r, k in targets]


def _reshape_axis(n: Node, k: int | None) -> int | str | None:
    """The axis of a reshape's input that holds its axis k's rows (FAIL: none does)."""
    x = n.inputs[0]
    if k is None or x.shape[:k + 1] == n.shape[:k + 1]:
        return k
    if [d for d in x.shape if d != 1] != [d for d in n.shape if d != 1]:
        return FAIL  # (axes merged or split: not an index remap)
    nth = sum(d != 1 for d in n.shape[:k])  # k is a non-unit axis: it was chunked
    return [i for i, d in enumerate(x.shape) if d != 1][nth]


def _rows_of(whole: Node, k: int, lo: int, hi: int) -> Node:
    sl = tuple((lo, hi, 1) if a == k else (0, d, 1) for a, d in enumerate(whole.shape))
    shape = tuple(hi - lo if a == k else d for a, d in enumerate(whole.shape))
    return make("slice", (whole,), shape, whole.dtype, (("slices", sl),))


def _matmul_inputs(n: Node, k: int | None, go) -> list[Node]:
    a, b = n.inputs
    if k is None:
        return [go(a, None), go(b, None)]
    m_a, _, _, n_b = _matmul_axes(n)
    r = n.ndim
    if k == r - 2:
        return [go(a, m_a), go(b, None)]
    if k == r - 1:
        return [go(a, None), go(b, n_b)]

    def batch(x: Node) -> int | None:  # the operand's own batch axis, unless broadcast
        i = k - (r - x.ndim)
        return i if i >= 0 and x.shape[i] != 1 else None
    return [go(a, batch(a)), go(b, batch(b))]
