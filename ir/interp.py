"""Run any graph op by op with NumPy: the test oracle and the fallback for ops with no kernel."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .node import Node, toposort
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
    out = np.asarray(OPS[n.op].ref(*args, **dict(n.attrs)))
    return out if out.dtype == n.dtype else out.astype(n.dtype)


def run_graph(roots: list[Node], params: list[Any] | None = None,
              leaf: Callable[[Node], Any] | None = None) -> list[np.ndarray]:
    """Values of roots. `params` feeds `param` nodes (fusion bodies); `leaf` may map leaves."""
    vals: dict[int, Any] = {}
    with np.errstate(all="ignore"):  # once: per op, it costs as much as a small op
        for n in toposort(roots):
            kind = OPS[n.op].kind
            if kind is Kind.PARAM:
                vals[id(n)] = np.asarray(params[n.attr("index")])
            elif leaf is not None and kind is Kind.LEAF and n.op == "input":
                vals[id(n)] = leaf(n)
            else:
                vals[id(n)] = _eval(n, [vals[id(i)] for i in n.inputs])
    return [vals[id(r)] for r in roots]
