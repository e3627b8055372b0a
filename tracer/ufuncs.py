"""Recording NumPy ufunc calls: NEP 50 promotion, broadcasting, `out=` and `where=`.

Type resolution is NumPy's own (`ufunc.resolve_dtypes`, with Python scalars passed as weak types),
so promotion and the exceptions raised match NumPy exactly.
"""
from __future__ import annotations

import numbers
import warnings

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


def _out_of_range_comparison(uf: np.ufunc, ops: list[Operand]):
    """NumPy compares an integer array with a Python int outside its dtype's range exactly:
    the int is above (or below) every value, so the answer is the same everywhere."""
    if uf.__name__ not in _COMPARISONS or len(ops) != 2:
        return None
    for i, o in enumerate(ops):
        other = ops[1 - i]
        if o.node is None and isinstance(o.weak, int) and other.node is not None \
                and other.node.dtype.kind in "iu" and not _int_fits(o.weak, other.node.dtype):
            lo_hi = (0, 1) if o.weak > 0 else (1, 0)  # (array's stand-in, int's stand-in)
            pair = lo_hi if i == 1 else lo_hi[::-1]
            return bool(uf(*pair))
    return None


def resolve(uf: np.ufunc, ops: list[Operand], dtype=None) -> tuple[np.dtype, ...]:
    keys = [o.resolve_key() for o in ops]
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
    if name not in OPS or uf.nout != 1 or uf.signature is not None:
        return None  # caller falls back (generalized ufuncs such as matmul have their own path)
    if len(args) != uf.nin:
        raise TypeError(f"{name}() takes from {uf.nin} to {uf.nin + 1} positional arguments but "
                        f"{len(args)} {'was' if len(args) == 1 else 'were'} given")
    ops = [Operand(a) for a in args]
    if dtype is None:
        const = _out_of_range_comparison(uf, ops)
        if const is not None:
            shape = broadcast_shapes([o.shape for o in ops])
            node = G.broadcast(G.const(const, np.bool_), shape)
            if out is None and where is True:
                return ndarray._from_node(node)
            return write_out(uf, node, out, where, casting, [np.dtype(np.bool_)] * 2)
    # x ** 2 -> square, x ** 0.5 -> sqrt, as NumPy's fast scalar power does
    if name == "power" and ops[1].node is None and ops[0].node is not None and dtype is None:
        p = ops[1].weak
        if p == 2:
            return apply_ufunc(np.square, args[:1], out=out, where=where, casting=casting)
        if p == 1 and ops[0].node.dtype.kind in "fiu":
            return apply_ufunc(np.positive, args[:1], out=out, where=where, casting=casting)
    dts = resolve(uf, ops, dtype)
    if name == "power" and dts[-1].kind in "iu":
        e = ops[1]
        v = e.weak if e.node is None else e.node.attr("value") if e.node.op == "const" else None
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v < 0:
            raise ValueError("Integers to negative integer powers are not allowed.")
    shapes = [o.shape for o in ops]
    if out is not None or where is not True:  # NumPy's message names out and where too
        extra = ([out[0] if isinstance(out, tuple) and out else out] if out is not None else [])
        extra = [x.shape if isinstance(x, ndarray) else np.shape(x) for x in extra]
        broadcast_shapes(shapes + extra + ([np.shape(where)] if where is not True else []))
    if where is not True:
        shapes.append(np.shape(where))
    shape = broadcast_shapes(shapes)
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
    if not out._view.writeable:
        raise ValueError("output array is read-only")
    if not np.can_cast(node.dtype, out.dtype, casting):
        # let NumPy raise its own UFuncTypeError with its own message
        empties = [np.empty(0, k) if isinstance(k, np.dtype) else k(0) for k in in_keys]
        uf(*empties, out=np.empty(0, out.dtype), casting=casting)
        raise TypeError(f"Cannot cast ufunc {uf.__name__!r} output from {node.dtype!r} to "
                        f"{out.dtype!r} with casting rule {casting!r}")
    try:
        fits = tuple(np.broadcast_shapes(node.shape, out.shape)) == out.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"non-broadcastable output operand with shape {shape_str(out.shape)} "
                         f"doesn't match the broadcast shape {shape_str(node.shape)}")
    value = G.broadcast(G.cast(node, out.dtype), out.shape)
    if where is not True:
        mask = G.broadcast(G.cast(asarray_node(where), np.bool_), out.shape)
        value = G.where(mask, value, out._node)
    from .indexing import assign_full
    assign_full(out, value)
    return out


_UFUNC_KWARGS = {"out", "where", "casting", "order", "dtype", "subok", "signature", "axes", "axis",
                 "keepdims"}


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
    for k in kw:
        if k not in _UFUNC_KWARGS:
            raise TypeError(f"{uf.__name__}() got an unexpected keyword argument '{k}'")
    if where is not True and out is None and "out" not in kwargs:
        from .runtime import user_frame
        f = user_frame()
        warnings.warn_explicit("'where' used without 'out', expect unitialized memory in output. "
                               "If this is intentional, use out=None.", UserWarning,
                               f.f_code.co_filename, f.f_lineno,
                               module=f.f_globals.get("__name__", "?"))
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
