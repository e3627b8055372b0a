"""Node builders used while tracing: each computes the result type from the registry and interns."""
from __future__ import annotations

import numpy as np

from tracer.ir.node import Buffer, Node, make, make_const
from tracer.ir.registry import OPS


def _typed(op: str, inputs: tuple[Node, ...], attrs: tuple = ()) -> Node:
    d = OPS[op]
    a = dict(attrs)
    shape = d.shape_rule([i.shape for i in inputs], a)
    dtype = d.dtype_rule([i.dtype for i in inputs], a)
    return make(op, inputs, shape, dtype, attrs)


def leaf(value) -> Node:
    return make("input", (), value.shape, value.dtype, (("buf", Buffer(value)),))


def leaf_of(buf: Buffer) -> Node:
    """The leaf holding this buffer (a value held elsewhere: tracer.dask_cluster.Remote)."""
    return make("input", (), buf.value.shape, buf.value.dtype, (("buf", buf),))


def const(value, dtype) -> Node:
    return make_const(value, dtype)


def cast(x: Node, dtype) -> Node:
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x
    if x.op == "const":
        with np.errstate(all="ignore"):
            return const(np.asarray(x.attr("value"), x.dtype).astype(dtype), dtype)
    return _typed("cast", (x,), (("dtype", dtype.str),))


def broadcast(x: Node, shape: tuple[int, ...]) -> Node:
    shape = tuple(shape)
    if x.shape == shape:
        return x
    if x.op == "broadcast_to":  # broadcast of a broadcast is one broadcast
        x = x.inputs[0]
    if not x.shape:
        return make("broadcast_to", (x,), shape, x.dtype, (("shape", shape),))
    return _typed("broadcast_to", (x,), (("shape", shape),))


def transpose(x: Node, perm: tuple[int, ...]) -> Node:
    perm = tuple(int(p) for p in perm)
    if x.op == "transpose":  # compose: transpose(transpose(y, p), q) = transpose(y, p[q])
        inner = x.attr("perm")
        perm = tuple(inner[p] for p in perm)
        x = x.inputs[0]
    if perm == tuple(range(x.ndim)):
        return x
    return _typed("transpose", (x,), (("perm", perm),))


def reshape(x: Node, shape: tuple[int, ...]) -> Node:
    shape = tuple(int(s) for s in shape)
    if x.shape == shape:
        return x
    if x.op == "reshape":
        x = x.inputs[0]
        if x.shape == shape:
            return x
    return _typed("reshape", (x,), (("shape", shape),))


def full_slice(shape) -> tuple:
    return tuple((0, d, 1) for d in shape)


def slice_(x: Node, slices: tuple) -> Node:
    slices = tuple(tuple(int(v) for v in s) for s in slices)
    if slices == full_slice(x.shape):
        return x
    return _typed("slice", (x,), (("slices", slices),))


def setslice(base: Node, value: Node, slices: tuple) -> Node:
    slices = tuple(tuple(int(v) for v in s) for s in slices)
    if slices == full_slice(base.shape):
        return value
    return _typed("setslice", (base, value), (("slices", slices),))


def elementwise(op: str, inputs: tuple[Node, ...], shape=None, dtype=None) -> Node:
    """Callers that already resolved the type (the ufunc path) pass it; the verifier checks."""
    if shape is None:
        return _typed(op, tuple(inputs))
    return make(op, tuple(inputs), shape, dtype)


def where(c: Node, a: Node, b: Node) -> Node:
    return _typed("where", (c, a, b))


def reduce(op: str, x: Node, axes: tuple[int, ...]) -> Node:
    return _typed(op, (x,), (("axes", tuple(sorted(axes))),))


def matmul(a: Node, b: Node) -> Node:
    return _typed("matmul", (a, b))


def concatenate(xs: tuple[Node, ...], axis: int) -> Node:
    return _typed("concatenate", tuple(xs), (("axis", axis),))
