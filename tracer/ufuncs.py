"""Recording NumPy ufunc calls: NEP 50 promotion, broadcasting, `out=` and `where=`.

Type resolution is NumPy's own (`ufunc.resolve_dtypes`, with Python scalars passed as weak types),
so promotion and the exceptions raised match NumPy exactly.
"""
from __future__ import annotations

import numbers

import numpy as np

from ir import Node
from ir.registry import OPS
from . import graph as G
from .array import ndarray, asarray_node, shape_str, traced

_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


class Operand:
    """An input of a call: its node, or a weak Python scalar waiting for a dtype."""

    __slots__ = ("node", "weak")

    def __init__(self, x):
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, complex)) \
                or isinstance(x, np.generic):
            self.node, self.weak = asarray_node(x), None
        else:
            self.node, self.weak = None, x

    @property
    def shape(self):
        return () if self.node is None else self.node.shape

    def resolve_key(self):
        if self.node is not None:
            return self.node.dtype
        return type(self.weak) if not isinstance(self.weak, numbers.Integral) else int

    def as_node(self, dtype: np.dtype, ufunc_name: str) -> Node:
        if self.node is not None:
            return G.cast(self.node, dtype)
        v = self.weak
        if dtype.kind in "iu" and isinstance(v, int):
            np.asarray(v, dtype=dtype)  # OverflowError as NumPy raises it
        return G.const(v, dtype)


def broadcast_shapes(shapes) -> tuple[int, ...]:
    full = [s for s in shapes if s]
    if not full:
        return ()
    if all(s == full[0] for s in full):
        return tuple(full[0])
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError("operands could not be broadcast together with shapes "
                         + " ".join(shape_str(s) for s in shapes) + " ") from None


def _int_fits(v: int, dt: np.dtype) -> bool:
    info = np.iinfo(dt)
    return info.min <= v <= info.max


_RESOLVED: dict[tuple, tuple] = {}


def resolve(uf: np.ufunc, ops: list[Operand], dtype=None) -> tuple[np.dtype, ...]:
    keys = [o.resolve_key() for o in ops]
    if uf.__name__ in _COMPARISONS:
        # NumPy compares out-of-range Python ints exactly; a wider loop does the same.
        for i, o in enumerate(ops):
            other = [k for j, k in enumerate(keys) if j != i and isinstance(k, np.dtype)]
            if o.node is None and isinstance(o.weak, int) and other and other[0].kind in "iu" \
                    and not _int_fits(o.weak, other[0]):
                keys = [np.dtype(np.float64) if isinstance(k, np.dtype) and k.kind == "u"
                        and k.itemsize == 8 else np.dtype(np.int64) if isinstance(k, np.dtype)
                        else k for k in keys]
    if dtype is None:
        key = (uf, *keys)
        hit = _RESOLVED.get(key)
        if hit is None:
            hit = _RESOLVED[key] = uf.resolve_dtypes(tuple(keys) + (None,) * uf.nout)
        return hit
    sig = (None,) * uf.nin + (np.dtype(dtype),) * uf.nout
    return uf.resolve_dtypes(tuple(keys) + (None,) * uf.nout, signature=sig)


@traced
def apply_ufunc(uf: np.ufunc, args, out=None, where=True, dtype=None, casting="same_kind"):
    name = uf.__name__
    if name not in OPS or uf.nout != 1:
        return None  # caller falls back
    if len(args) != uf.nin:
        raise TypeError(f"{name}() takes from {uf.nin} to {uf.nin + 1} positional arguments but "
                        f"{len(args)} were given")
    ops = [Operand(a) for a in args]
    # x ** 2 -> square, x ** 0.5 -> sqrt, as NumPy's fast scalar power does
    if name == "power" and ops[1].node is None and ops[0].node is not None and dtype is None:
        p = ops[1].weak
        if p == 2:
            return apply_ufunc(np.square, args[:1], out=out, where=where, casting=casting)
        if p == 1 and ops[0].node.dtype.kind in "fiu":
            return apply_ufunc(np.positive, args[:1], out=out, where=where, casting=casting)
    dts = resolve(uf, ops, dtype)
    shape = broadcast_shapes([o.shape for o in ops])
    inputs = tuple(G.broadcast(o.as_node(dt, name), shape) for o, dt in zip(ops, dts))
    node = G.elementwise(name, inputs, shape, dts[-1])
    if out is None and where is True:
        return ndarray._from_node(node)
    return write_out(uf, node, out, where, casting, [o.node.dtype if o.node is not None
                                                     else o.resolve_key() for o in ops])


def write_out(uf, node: Node, out, where, casting, in_keys):
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError("The 'out' tuple must have exactly one entry per ufunc output")
        out = out[0]
    if out is None:
        out = ndarray._from_node(G.broadcast(G.const(0, node.dtype), node.shape))
    if not isinstance(out, ndarray):
        raise TypeError("return arrays must be of ArrayType")
    if not np.can_cast(node.dtype, out.dtype, casting):
        # let NumPy raise its own UFuncTypeError with its own message
        empties = [np.empty(0, k) if isinstance(k, np.dtype) else k(0) for k in in_keys]
        uf(*empties, out=np.empty(0, out.dtype), casting=casting)
        raise TypeError(f"Cannot cast ufunc {uf.__name__!r} output from {node.dtype!r} to "
                        f"{out.dtype!r} with casting rule {casting!r}")
    if tuple(np.broadcast_shapes(node.shape, out.shape)) != out.shape:
        raise ValueError(f"non-broadcastable output operand with shape {out.shape} doesn't "
                         f"match the broadcast shape {node.shape}")
    value = G.broadcast(G.cast(node, out.dtype), out.shape)
    if where is not True:
        mask = G.broadcast(G.cast(asarray_node(where), np.bool_), out.shape)
        value = G.where(mask, value, out._node)
    from .indexing import assign_full
    assign_full(out, value)
    return out


def call_ufunc(uf: np.ufunc, args, kwargs: dict):
    """A ufunc call as NumPy spells it (out=, where=, dtype=, casting=, ...): lazy when tracer
    supports it, else NumPy on evaluated inputs (warned and counted)."""
    kw = dict(kwargs)
    out = kw.pop("out", None)
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    where = kw.pop("where", True)
    dtype = kw.pop("dtype", None)
    casting = kw.pop("casting", "same_kind")
    if not kw and (out is None or isinstance(out, ndarray)):
        r = apply_ufunc(uf, args, out=out, where=where, dtype=dtype, casting=casting)
        if r is not None:
            return r
    kw.update(where=where, casting=casting)
    if dtype is not None:
        kw["dtype"] = dtype
    if out is not None:
        kw["out"] = out
    from .runtime import fallback_call
    return fallback_call(uf.__name__, uf, args, kw)
