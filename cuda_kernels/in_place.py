"""Which views run without copies (executor.lower's plan): the views a backend hands to
kernels as strided views of their operand (on cuda; on the cpu every view is a NumPy view
already), and the fusions that write their value into the slice a slice write assigns (the
memory plan's `into`, opt/liveness.py)."""
from __future__ import annotations

from tracer.ir.node import Node
from .layout import stand_in

# the fusion kinds whose kernels index every param and output with full subscripts, so they
# read and write strided arrays (a flat kernel flattens them)
_SUBSCRIPTED = ("loop", "horizontal", "reduce", "row")


def strided_views(order: list[Node], roots: list[Node], flat: set[int]) -> set[int]:
    """The views to hand over as strided views of their operand: slices and dynamic slices
    with positive steps, transposes that keep the innermost axis innermost (others go through
    the tiled transpose: coalesced), broadcasts; none a result, and every reader a kernel that
    is not flat or another such view. O(n)."""
    readers: dict[int, list[Node]] = {}
    for n in order:
        for i in n.inputs:
            readers.setdefault(id(i), []).append(n)
    out: set[int] = set()
    keep = {id(r) for r in roots}
    for n in reversed(order):  # readers first
        if id(n) in keep or not strided_op(n):
            continue
        if all(id(u) in out or (u.op == "fusion" and id(u) not in flat and
                                u.attr("kind") in _SUBSCRIPTED)
               for u in readers.get(id(n), ())):
            out.add(id(n))
    return out


def strided_op(n: Node) -> bool:
    if n.op == "slice":
        return all(s[2] > 0 for s in n.attr("slices"))
    if n.op == "dynamic_slice":
        return all(s > 0 for s in n.attr("steps"))
    if n.op == "transpose":
        return n.ndim == 0 or n.attr("perm")[-1] == n.ndim - 1
    return n.op == "broadcast_to"


def writer(write: Node) -> Node:
    """The fusion that computes slice write `write`'s value into the slice (the memory plan
    marked it: its value, or the input of a unit reshape of it; opt/liveness.py writer_of)."""
    v = write.inputs[1]
    return v.inputs[0] if v.op == "reshape" else v


def into_stand_in(write: Node | None):
    """The layout of the slice a fusion writes its value into (a stand-in, layout.py), or
    None for a fusion that writes a new array."""
    if write is None:
        return None
    view = stand_in(write.inputs[0])[tuple(slice(*s) for s in write.attr("slices"))]
    return view.reshape(writer(write).shape)  # (a view: only length-1 axes change)
