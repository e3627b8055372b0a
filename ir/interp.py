"""Run any graph op by op with NumPy: the test oracle and the fallback for ops with no kernel."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .node import Node, toposort
from .catalogue import scatter_into, set_slice
from .registry import OPS, TUPLE_DTYPE, Kind


def eval_node(n: Node, args: list[Any]) -> np.ndarray:
    with np.errstate(all="ignore"):
        return _eval(n, args)


def _eval(n: Node, args: list[Any]) -> np.ndarray:
    d = OPS[n.op]
    if d.kind is Kind.FUSION:
        return run_graph([n.attr("body")], params=args)[0]
    if n.dtype == TUPLE_DTYPE:  # a multi-output body's tuple of values
        return d.ref(*args)
    out = apply_ref(n, args)
    assert out.shape == n.shape, (n.op, out.shape, n.shape)
    return out


def apply_ref(n: Node, args: list[Any]) -> np.ndarray:
    """NumPy's result of op n on `args`, in n's dtype (any shape: the tiled path feeds tiles)."""
    kw = {k: v for k, v in n.attrs if k != "inline"}  # (a kernel's unrolling, not NumPy's)
    out = np.asarray(OPS[n.op].ref(*args, **kw))
    return out if out.dtype == n.dtype else out.astype(n.dtype)


def run_graph(roots: list[Node], params: list[Any] | None = None,
              leaf: Callable[[Node], Any] | None = None,
              writable: Callable[[Node], bool] | None = None) -> list[np.ndarray]:
    """Values of roots. `params` feeds `param` nodes (fusion bodies); `leaf` may map leaves.
    `writable`: whether the caller lets this run overwrite an input leaf's array (see
    inplace_updates)."""
    vals: dict[int, Any] = {}
    order = toposort(roots)
    inplace = inplace_updates(order, roots, writable) if writable is not None else ()
    with np.errstate(all="ignore"):  # once: per op, it costs as much as a small op
        for n in order:
            kind = OPS[n.op].kind
            if kind is Kind.PARAM:
                vals[id(n)] = np.asarray(params[n.attr("index")])
            elif leaf is not None and kind is Kind.LEAF and n.op == "input":
                vals[id(n)] = leaf(n)
            elif id(n) in inplace and vals[id(n.inputs[0])].flags.writeable:
                vals[id(n)] = write_into(n, [vals[id(i)] for i in n.inputs])
            else:
                vals[id(n)] = _eval(n, [vals[id(i)] for i in n.inputs])
    return [vals[id(r)] for r in roots]


# the kinds whose result is a new array, never a view of an input (the others may alias
# their inputs: views, and NumPy routines that may hand back an operand)
_FRESH = frozenset({Kind.ELEMENTWISE, Kind.CONTRACTION, Kind.GATHER, Kind.UPDATE, Kind.SCATTER,
                    Kind.LEAF})


_UPDATES = ("setslice", "scatter")  # the interpreter's updates in place (write_into)


def _may_raise(n: Node) -> bool:
    """Whether op n may raise while it runs (its shapes and keys were checked as it was
    recorded): an integer power of a lazy negative exponent, an argmax of nothing, a
    library routine. A run that may raise writes nothing in place: the graph is run again,
    from its leaves, to find the op and for the values that did not fail."""
    kind = OPS[n.op].kind
    if kind is Kind.ELEMENTWISE:
        return n.op == "power" and n.dtype.kind in "iu"
    if kind is Kind.REDUCE:
        return n.op in ("argmax", "argmin")
    return kind not in (Kind.LEAF, Kind.MOVEMENT, Kind.CONTRACTION, Kind.UPDATE) and \
        n.op != "concatenate"


def inplace_updates(order: list[Node], roots: list[Node],
                    writable: Callable[[Node], bool]) -> set[int]:
    """The slice writes and scatters of `order` (a toposort) that may write into their base's
    array instead of a copy: the base is a leaf `writable` allows or an update's result (a
    copy, or such a leaf written in place), it is no root, and no later node reads it or any
    value that may alias it (a view of it). O(n)."""
    if any(map(_may_raise, order)):
        return set()
    cls: dict[int, int] = {}  # node -> its storage class (union-find over possible aliases)

    def find(i: int) -> int:
        while cls[i] != i:
            cls[i] = cls[cls[i]]
            i = cls[i]
        return i

    for n in order:
        cls[id(n)] = id(n)
        if OPS[n.op].kind not in _FRESH:
            for i in n.inputs:
                a, b = find(id(i)), find(id(n))
                if a != b:
                    cls[b] = a
    last: dict[int, int] = {}  # class -> position of its last reader
    for pos, n in enumerate(order):
        for i in n.inputs:
            last[find(id(i))] = pos
    keep = {find(id(r)) for r in roots}
    out = set()
    for pos, n in enumerate(order):
        if n.op not in _UPDATES:
            continue
        base = n.inputs[0]
        s = find(id(base))
        if s != id(base) or s in keep or last.get(s) != pos:
            continue
        if not (base.op in _UPDATES or base.op == "input" and writable(base)):
            continue
        if n.op == "scatter" and any(find(id(i)) == s for i in n.inputs[1:]):
            continue  # ufunc.at over an operand that aliases the target
        out.add(id(n))
    return out


def write_into(n: Node, args: list[Any]) -> np.ndarray:
    """Update n (setslice or scatter) written into its base's array, which it returns."""
    if n.op == "setslice":  # NumPy's assignment copies a value that overlaps the target first
        return set_slice(args[0], args[1], n.attr("slices"))
    return scatter_into(args[0], args[1:], **{k: v for k, v in n.attrs if k != "inplace"})
