"""Tree-reduction rewriter (XLA's GpuTreeReductionRewriter): a long reduction with too few
outputs to keep the machine busy becomes two reductions of about sqrt(n) each, with no atomics,
so both stages are parallel and the result is the same from run to run.

The longest reduced axis (length n) is padded with the op's identity to q*m (m = ceil(sqrt(n)))
and split into (q, m) by one `chunk` node, an index remap that fuses into the first stage. The
first stage reduces m and the other reduced axes; the second reduces q:
  row    f32[A,C] -> f32[A]   becomes  [A,q,m] -reduce m-> [A,q] -reduce q-> [A]
  column f32[B,C] -> f32[C]   becomes  [q,m,C] -reduce m-> [q,C] -reduce q-> [C]
arg-reductions keep one stage (their indices would need rebasing), and so do float sums:
NumPy adds them in an order (pairwise along the inner run, rows in sequence) that a split
would change, and the cpu backend follows it to the bit.

Both backends already run a reduction along the innermost axis in two deterministic stages
inside its kernel (cpu: chunks in parallel, then in order; cuda: G blocks per output, then a
combining pass), so splitting it in the graph only adds a launch: measured on the cpu backend,
sum of 2e7 float32 took 16.9 ms split against 10.5 ms unsplit. The rewrite therefore fires where
the long axis is not innermost (column reductions with few columns: 9.7 against 10.6 ms for
[2e6, 4] over axis 0), unless SPLIT_INNERMOST is set.
"""
from __future__ import annotations

import math

import numpy as np

from tracer.ir.node import Node, make, make_const
from tracer.ir.registry import OPS, Kind, reduce_identity
from .rewrite import rebuild, with_inputs

TREE_MIN = 1 << 15      # shorter reductions gain nothing from a second stage
TREE_MAX_OUT = 64       # with this many outputs or more, one stage already has parallelism
SPLIT_INNERMOST = False


def _split(red: Node) -> Node | None:
    d = OPS[red.op]
    if d.kind is not Kind.REDUCE or d.identity is None:
        return None
    x = red.inputs[0]
    if d.ufunc is np.add and red.dtype.kind == "f":
        return None  # NumPy's order (module docstring)
    axes = red.attr("axes")
    n_red = math.prod(x.shape[a] for a in axes)
    if n_red < TREE_MIN or math.prod(red.shape) >= TREE_MAX_OUT:
        return None
    ax = max(axes, key=lambda a: (x.shape[a], a))
    if ax == x.ndim - 1 and not SPLIT_INNERMOST:
        return None
    n = x.shape[ax]
    m = math.isqrt(n - 1) + 1
    q = -(-n // m)
    if q < 2:
        return None
    fill = reduce_identity(d, x.dtype)
    chunk = make("chunk", (x, make_const(n, np.int64), make_const(m, np.int64)),
                 x.shape[:ax] + (q, m) + x.shape[ax + 1:], x.dtype,
                 (("axis", ax), ("split", (q, m)), ("fill", fill)))
    # in chunk's axes: a reduced axis a > ax moves one right; ax itself becomes (q=ax, m=ax+1)
    inner_axes = tuple(sorted((a + 1 if a > ax else a) for a in axes if a != ax)) + (ax + 1,)
    inner_axes = tuple(sorted(inner_axes))
    inner_shape = tuple(s for i, s in enumerate(chunk.shape) if i not in inner_axes)
    inner = make(red.op, (chunk,), inner_shape, red.dtype, (("axes", inner_axes),))
    q_pos = ax - sum(1 for a in axes if a < ax)  # where q sits among the kept axes
    return make(red.op, (inner,), red.shape, red.dtype, (("axes", (q_pos,)),))


def tree_reduction(roots: list[Node]) -> list[Node]:
    """Tree-reduction rewriter. O(n): one rebuild."""
    def step(n: Node, ins: tuple[Node, ...]) -> Node:
        m = with_inputs(n, ins)
        return _split(m) or m
    return rebuild(roots, step)
