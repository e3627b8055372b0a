"""Recompute every node's shape and dtype from the registry and check them."""
from __future__ import annotations

from .node import Node, toposort
from .registry import OPS, Kind


class VerifyError(AssertionError):
    pass


def verify(roots: list[Node] | tuple[Node, ...], order: list[Node] | None = None) -> None:
    """Check every node of the graph (`order`: its topological order, when the caller has it)."""
    for n in toposort(list(roots)) if order is None else order:
        op = OPS.get(n.op)
        if op is None:
            raise VerifyError(f"%{n.uid}: unknown op {n.op!r}")
        if op.kind is Kind.FUSION:
            body = n.attr("body")
            verify([body])
            if body.shape != n.shape or body.dtype != n.dtype:
                raise VerifyError(f"%{n.uid}: fusion type differs from its body")
            continue
        if n.op == "output":  # its type is the tuple element's, which rules cannot see
            want = n.inputs[0].attr("body").inputs[n.attr("index")]
            if want.shape != n.shape or want.dtype != n.dtype:
                raise VerifyError(f"%{n.uid}: output type differs from its tuple element")
            continue
        if op.kind in (Kind.LEAF, Kind.PARAM):
            continue
        if op.nin >= 0 and len(n.inputs) != op.nin:
            raise VerifyError(f"%{n.uid} {n.op}: {len(n.inputs)} inputs, wants {op.nin}")
        attrs = dict(n.attrs)
        try:
            shape = op.shape_rule([i.shape for i in n.inputs], attrs)
            dtype = op.dtype_rule([i.dtype for i in n.inputs], attrs)
        except Exception as e:  # noqa: BLE001 - report any rule failure as a verify error
            raise VerifyError(f"%{n.uid} {n.op}: rule failed: {e}") from e
        if tuple(shape) != n.shape:
            raise VerifyError(f"%{n.uid} {n.op}: shape {n.shape}, rule says {tuple(shape)}")
        if dtype != n.dtype:
            raise VerifyError(f"%{n.uid} {n.op}: dtype {n.dtype}, rule says {dtype}")
