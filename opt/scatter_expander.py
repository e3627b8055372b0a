"""Scatter expander: scatters (and gathers) of one constant index position become slice
writes (XLA's dynamic-update-slice) and slices, as XLA's ScatterExpander does for scatters of
one index. A slice write runs in place, and on the device on every backend; a slice is a view
that fusion reads through. `a[[3], 2] = v` or `np.add.at(a, [3], v)` in a loop then costs no
scatter and no copy.

Scatters of many indices stay scatters: the cpu backend runs them natively (NumPy's indexing,
a compiled add.at); the cuda backend runs them through the host for now.
"""
from __future__ import annotations

import math

from tracer.ir.node import Node
from tracer.ir.registry import OPS, Kind, is_kind
from .dots import build, reshape
from .rewrite import apply_rules


def _const_index(i: Node, size: int) -> int | None:
    """The index held by a (broadcast) constant, from 0, or None."""
    while i.op == "broadcast_to":
        i = i.inputs[0]
    if i.op != "const":
        return None
    v = int(i.attr("value"))
    return v + size if v < 0 else v


def _point(n: Node) -> tuple[tuple, tuple] | None:
    """(slices, region shape) when n gathers or scatters one constant position."""
    x, axes = n.inputs[0], n.attr("axes")
    idx = n.inputs[1:1 + len(axes)]
    if math.prod(idx[0].shape) != 1:
        return None
    at = [_const_index(i, x.shape[d]) for i, d in zip(idx, axes)]
    if any(v is None for v in at):
        return None
    slices = [(0, d, 1) for d in x.shape]
    for d, v in zip(axes, at):
        slices[d] = (v, v + 1, 1)
    return tuple(slices), tuple(1 if k in axes else d for k, d in enumerate(x.shape))


def expand_one_index(n: Node) -> Node | None:
    # gather of one position -> slice; scatter of one position -> setslice (of the combined
    # value for ufunc.at)
    if not is_kind(n, Kind.GATHER, Kind.SCATTER):
        return None
    p = _point(n)
    if p is None:
        return None
    slices, region = p
    x = n.inputs[0]
    part = build("slice", (x,), (("slices", slices),))
    if is_kind(n, Kind.GATHER):
        return reshape(part, n.shape)
    v = reshape(n.inputs[-1], region)
    mode = n.attr("mode")
    if mode != "set":
        d = OPS.get(mode)
        if d is None or d.kind is not Kind.ELEMENTWISE or d.nin != 2:
            return None
        v = build(mode, (part, v))
    if v.dtype != x.dtype:  # NumPy casts the written values unsafely, as astype does
        v = build("cast", (v,), (("dtype", x.dtype.str),))
    return build("setslice", (x, v), (("slices", slices),))


def scatter_expander(roots: list[Node]) -> list[Node]:
    """Scatter expander. O(k n) for k sweeps (one when nothing expands, two otherwise)."""
    return apply_rules(roots, [expand_one_index])

