"""Kernel planning both backends share: which node a kernel reduces and how its loops are laid
out (ReduceLayout), the plan of a row kernel (RowPlan), accumulator dtypes and identities, and
the emit steps both code generators use (stores, row values)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tracer.ir.node import Node, toposort
from tracer.ir.registry import (ACC_ARG, ACC_WIDE, CHEAP_OPS, OPS, Kind, fusion_outputs,
                               is_kind, reduce_identity)
from tracer.ir.registry import is_kernel_reduce as is_reduce
from .emit import Emitter, literal


def find_reduce(body: Node) -> Node | None:
    """The reduction of a `reduce` kernel (row kernels have several: see row_plan)."""
    reds = [n for n in toposort([body]) if is_reduce(n)]
    return reds[-1] if reds else None


def is_flat(body: Node) -> bool:
    """Pure elementwise over same-shaped params and outputs: iterate as one flat loop when
    layouts allow."""
    shape = fusion_outputs(body)[0].shape
    nodes = toposort([body])
    return all((n.op not in ("broadcast_to", "transpose", "reshape", "chunk", "gather") or
                (n.op == "broadcast_to" and n.inputs[0].ndim == 0)) and  # (a scalar: flat)
               not is_kind(n, Kind.REDUCE) and  # (inline reductions too: not flat)
               (n.op not in ("param", "tuple") or n.shape == shape)
               for n in nodes if n is not body or n.op != "tuple") and \
        all(o.shape == shape for o in fusion_outputs(body))



def acc_dtype(red: Node) -> np.dtype:
    """The accumulator's dtype by the reduction's rule (registry ACC_*): float sums accumulate
    in float64 (NumPy sums pairwise in the dtype: both are accurate, and neither order is
    NumPy's exactly); products multiply in the dtype, in order, as NumPy does, so they round
    and overflow where NumPy's do; arg-reductions keep the best value in the input's dtype."""
    acc = OPS[red.op].accumulate
    if acc == ACC_ARG:
        return red.inputs[0].dtype
    if acc == ACC_WIDE and red.dtype.kind == "f":
        return np.dtype(np.float64)
    return red.dtype


PAIRWISE_LEAF = 128  # numpy's PW_BLOCKSIZE: a run this long or shorter is one leaf


def run_axes(shape: tuple, axes) -> list[int]:
    """The axes of NumPy's inner loop over a C-ordered operand of `shape`: the reduced axes
    after the last kept axis longer than 1. Sizes of 1 are static (the kernel key tells 1
    from n), so this is known when the kernel is generated."""
    run: list[int] = []
    for k in range(len(shape) - 1, -1, -1):
        if k in axes:
            run.append(k)
        elif shape[k] != 1:
            break
    return run[::-1]


def is_arg(red: Node) -> bool:
    """An arg-reduction (the index of the best value)."""
    return OPS[red.op].accumulate == ACC_ARG



def stores(em: Emitter, outs: list[Node], idx: tuple[str, ...], stmts: list[str],
           memo: dict) -> list[str]:
    """Compute every output in `outs` at idx (all loads first), then store each."""
    vals = [em.emit(o, idx, stmts, memo) for o in outs]
    return [f"{em.sub(em.out_names[em.outputs.index(o)], idx)} = {v}"
            for o, v in zip(outs, vals)]


class ReduceLayout(NamedTuple):
    """A body's reduction: the node, its input, axes, loop variables per input axis, which
    axes are kept and which reduced, and whether it is an arg-reduction."""
    red: Node
    src: Node
    axes: tuple
    j: list
    kept: list
    redax: list
    is_arg: bool


def reduce_layout(body: Node) -> ReduceLayout:
    red = find_reduce(body)
    src = red.inputs[0]
    axes = red.attr("axes")
    return ReduceLayout(red, src, axes, [f"j{k}" for k in range(src.ndim)],
                        [k for k in range(src.ndim) if k not in axes],
                        [k for k in range(src.ndim) if k in axes],
                        is_arg(red))



class RowPlan(NamedTuple):
    """A row kernel: reductions (in dependency order) over the trailing axes of `shape`; `rowvals`
    are values at the kept index computed once per row; `stash` is an expensive row-domain value
    that a reduction's pass stores into output `stash_out` for the final pass to read back."""
    reds: list
    shape: tuple
    nkept: int
    rowvals: list
    stash: Node | None
    stash_out: int


def reach(n: Node, stop) -> list[Node]:
    """Nodes n reads, inputs first; nodes where `stop` holds are included but not entered."""
    order: list[Node] = []
    seen: set[int] = set()
    stack = [(n, False)]
    while stack:
        m, done = stack.pop()
        if done:
            order.append(m)
        elif id(m) not in seen:
            seen.add(id(m))
            stack.append((m, True))
            if m is n or not stop(m):
                stack.extend((i, False) for i in reversed(m.inputs))
    return order


def row_plan(body: Node) -> RowPlan:
    order = toposort([body])
    reds = [n for n in order if is_reduce(n)]
    shape = reds[0].inputs[0].shape
    k = shape and len(shape) - len(reds[0].attr("axes"))
    kept = shape[:k]
    rowshapes = (kept, kept + (1,) * (len(shape) - k))
    rowvals = [n for n in order if n.shape in rowshapes and not is_reduce(n) and
               n.op not in ("param", "const", "broadcast_to", "transpose", "reshape", "tuple")]
    outs = fusion_outputs(body)
    final = {id(n) for o in outs if o.shape == shape for n in reach(o, is_reduce)}
    # a row value (the reduced axes all of length 1) is computed once per row before any
    # reduction, never stashed: a stash chosen among them would never be stored
    hoisted = {id(n) for n in rowvals}
    for red in reds:
        for n in reversed(reach(red.inputs[0], is_reduce)):
            if id(n) not in final or n.shape != shape or id(n) in hoisted or \
                    all(m.op in CHEAP_OPS for m in reach(n, is_reduce)):
                continue
            if n in outs:  # an output computed in a reduction's pass is stored there
                return RowPlan(reds, shape, k, rowvals, n, outs.index(n))
            for t, o in enumerate(outs):
                if o.shape == shape and o.dtype == n.dtype:
                    return RowPlan(reds, shape, k, rowvals, n, t)
    return RowPlan(reds, shape, k, rowvals, None, -1)


def row_ready(em: Emitter, plan: RowPlan, done: set[int]) -> list[Node]:
    """Row values not yet computed whose reductions are all done."""
    out = []
    for n in plan.rowvals:
        if id(n) in em.override:
            continue
        if all(id(r) in done for r in reach(n, is_reduce) if is_reduce(r) and r is not n):
            out.append(n)
    return out


def emit_ready(em: Emitter, plan: RowPlan, done: set[int], kept: tuple[str, ...],
               ind: str) -> list[str]:
    """Statements computing the row group's values that became ready (row_ready), indented
    by `ind`; later statements read them by name (em.override)."""
    lines: list[str] = []
    for n in row_ready(em, plan, done):
        stmts: list[str] = []
        em.override[id(n)] = em.emit(n, row_index(n, kept), stmts, {})
        lines.extend(ind + st for st in stmts)
    return lines


def row_index(n: Node, kept: tuple[str, ...]) -> tuple[str, ...]:
    """The index of a per-row value: the kept index, with zeros for keepdims axes."""
    return kept + ("0",) * (n.ndim - len(kept))


def ident_literal(red: Node) -> str:
    """Source for the reduction's identity (its accumulator's first value)."""
    return literal(reduce_identity(OPS[red.op], red.inputs[0].dtype))


def combine_text(red: Node) -> str:
    """The reduction's combine step in its accumulator's dtype, over `{0}` (acc) and `{1}` (v);
    empty for arg-reductions, which pick by `better`."""
    c = OPS[red.op].combine
    if c is None or isinstance(c, str):
        return c or ""
    dt = acc_dtype(red)
    return c((dt, dt), dt)


def combine_expr(combine: str, acc: str, v: str) -> str:
    """A combine step (combine_text) of acc and v."""
    return combine.format(acc, v)
