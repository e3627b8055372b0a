"""Recording NumPy ufunc calls: NEP 50 promotion, broadcasting, `out=` and `where=`.

Type resolution is NumPy's own (`ufunc.resolve_dtypes`, with Python scalars passed as weak types),
so promotion and the exceptions raised match NumPy exactly.
"""
from __future__ import annotations

import numbers
import warnings
from sys import _getframe
from time import perf_counter

import numpy as np

from tracer.ir.node import Node, make_binary, make_canonical
from tracer.ir.registry import OPS
from tracer.ir.stats import STATS
from . import eager
from . import graph as G
from .array import fresh, ndarray, asarray_node
from .recording import _INTERNAL, _depth, shape_str, traced, trim_numpy_tail
from .debug import CURRENT, internal, user_frame
from .fallback import fallback_call
from .write import assign_full, known_values

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
        if isinstance(v, int):
            _check_int(v, dtype)
        return G.const(v, dtype)


def _check_int(v: int, dt: np.dtype) -> None:
    """NumPy's OverflowError for a Python int that the loop's dtype cannot take (a bool loop
    reads it through a C long, a float loop through a Python float)."""
    if dt.kind in "iu":
        np.asarray(v, dtype=dt)
    elif dt.kind == "b" and not -2**63 <= v < 2**63:
        raise OverflowError("Python int too large to convert to C long")
    elif dt.kind in "fc":
        float(v)


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


# ---- the common call, quickly: one or two operands, each a lazy array or a Python float or
# small int, arrays of one shape, no out/where/dtype. What it depends on besides the values
# (the loop's dtypes) is worked out once per (ufunc, operand types) by the general path's
# own functions; anything else takes the general path.

_internal_get = _INTERNAL.get  # (a method of an imported name is looked up at every call)
_QUICK: dict[tuple, tuple | None] = {}  # (ufunc, operand kinds) -> (op name, loop dtypes)
_WEAK: dict[tuple, Node] = {}  # (value, dtype, shape) -> the constant, broadcast


def _quick_entry(uf: np.ufunc, kinds: tuple):
    """(op name, loop dtypes) for these operand kinds, None where the call is not quick."""
    name = uf.__name__
    if name not in OPS or uf.nout != 1 or uf.signature is not None or uf is np.power or \
            len(kinds) != uf.nin or all(k is int or k is float for k in kinds):
        return None
    try:  # resolve()'s own, from the kinds it keys on
        dts = uf.resolve_dtypes(tuple(kinds) + (None,) * uf.nout)
    except Exception:  # the general path raises it
        return None
    return name, dts


def _weak_node(v, dt: np.dtype, shape: tuple) -> Node:
    """The constant v of a loop of dtype dt, broadcast to shape (G.const, G.broadcast),
    kept for the next call (not for a float zero: -0.0 == 0.0 as a key)."""
    if v == 0 and type(v) is float:
        return G.broadcast(G.const(v, dt), shape)
    key = (v, dt, shape)  # (an int and the float equal to it make the same constant)
    got = _WEAK.get(key)
    if got is None:
        if len(_WEAK) > 4096:
            _WEAK.clear()
        got = _WEAK[key] = G.broadcast(G.const(v, dt), shape)
    return got


def _binary(uf: np.ufunc, a, b) -> ndarray | None:
    """The quick path's uf(a, b) as a fresh array, None for any other call (the general
    path): each operand a lazy array, or a weak Python scalar (a float, or an int any
    integer dtype holds) whose value decides nothing but the constant."""
    t = type(a)
    if t is ndarray:
        na = a._var.node if not a._view.steps else a._node
        ka = na.dtype
    elif t is float or t is int and 0 <= a < 128:
        na, ka = None, t
    else:
        return None
    t = type(b)
    if t is ndarray:
        nb = b._var.node if not b._view.steps else b._node
        kb = nb.dtype
    elif t is float or t is int and 0 <= b < 128:
        nb, kb = None, t
    else:
        return None
    key = (uf, ka, kb)
    hit = _QUICK.get(key, False)
    if hit is False:
        hit = _QUICK[key] = _quick_entry(uf, (ka, kb))
    if hit is None:
        return None  # no loop
    name, (da, db, dout) = hit
    if na is None:  # (b is an array: two weak scalars have no quick entry)
        shape = nb.shape
        na = _weak_node(a, da, shape)
        if kb is not db and kb != db:
            nb = G.cast(nb, db)
    else:
        shape = na.shape
        if nb is None:
            nb = _weak_node(b, db, shape)
        else:
            if nb.shape != shape:
                return None  # broadcasting: the general path
            if kb is not db and kb != db:
                nb = G.cast(nb, db)
        if ka is not da and ka != da:
            na = G.cast(na, da)
    return fresh(make_binary(name, na, nb, shape, dout))


def _quick(uf: np.ufunc, args) -> ndarray | None:
    """apply_ufunc(uf, args) for the common unary call (see above), else None (nothing
    recorded); a binary one is _binary's."""
    if len(args) == 1 and type(args[0]) is ndarray:
        a = args[0]
        na = a._var.node if not a._view.steps else a._node
        key = (uf, na.dtype)
        hit = _QUICK.get(key, False)
        if hit is False:
            hit = _QUICK[key] = _quick_entry(uf, key[1:])
        if hit is None:
            return None
        name, (da, dout) = hit
        if na.dtype is not da and na.dtype != da:
            na = G.cast(na, da)
        return fresh(make_canonical(name, (na,), na.shape, dout))
    return None


def apply_ufunc(uf: np.ufunc, args, out=None, where=True, dtype=None, casting="same_kind"):
    """Record uf(*args) (out=, where=, dtype=, casting= as NumPy's); None where tracer does not
    record this ufunc (the caller falls back). The common call takes the quick path: a binary
    one is record_binary's."""
    if out is not None or where is not True or dtype is not None:
        return _apply_ufunc(uf, args, out, where, dtype, casting)
    if len(args) == 2:
        return record_binary(uf, *args)
    r = _quick(uf, args) if _depth[0] else _quick_traced(uf, args)
    return r if r is not None else _apply_ufunc(uf, args, out, where, dtype, casting)


def record_binary(uf: np.ufunc, a, b):
    """apply_ufunc(uf, (a, b)), no keyword (a binary operator's recording, eager.operator):
    _binary's quick path, else the general path; outside a traced call, under traced's steps
    inline."""
    if _depth[0]:  # inside a traced call (its site, its time)
        r = _binary(uf, a, b)
        return r if r is not None else _general(uf, (a, b))
    t0 = perf_counter()
    _depth[0] = 1
    # the user's frame (recording.call_site, inline)
    f = start = _getframe(1)
    while f is not None:
        code = f.f_code
        inside = _internal_get(code.co_filename)
        if inside is None:
            inside = internal(code.co_filename)
        if not inside:
            break
        f = f.f_back
    if f is None:
        f = start
    CURRENT[0] = (f.f_code, f.f_lasti, "apply_ufunc", f.f_globals.get("__name__"))
    del f, start
    try:
        r = _binary(uf, a, b)
        return r if r is not None else _general(uf, (a, b))
    except Exception as e:
        trim_numpy_tail(e.__traceback__)
        raise
    finally:
        _depth[0] = 0
        CURRENT[0] = None
        STATS.trace_s += perf_counter() - t0


def _apply_ufunc(uf: np.ufunc, args, out=None, where=True, dtype=None, casting="same_kind"):
    """apply_ufunc's general path."""
    name = uf.__name__
    if name not in OPS or uf.nout != 1 or uf.signature is not None:
        return None  # caller falls back (generalized ufuncs such as matmul have their own path)
    if out is not None:
        out = _out_array(out)
    ops = [Operand(a) for a in args]
    if dtype is None:
        const = _out_of_range_comparison(uf, ops)
        if const is not None:
            shape = broadcast_shapes([o.shape for o in ops])
            node = G.broadcast(G.const(const, np.bool_), shape)
            if out is None and where is True:
                return ndarray._from_node(node)
            if out is not None:
                _check_cast(uf, node.dtype, out.dtype, casting, ops)
            return write_out(node, out, where)
    dts = resolve(uf, ops, dtype)
    fast = _fast_power(uf, ops, dts, dtype)
    if fast is not None:
        return apply_ufunc(fast, args[:1], out=out, where=where, casting=casting)
    # NumPy's order: scalars converted, then the output's casting, then shapes, then data
    nodes = [o.as_node(dt, name) for o, dt in zip(ops, dts)]
    if out is not None:
        _check_cast(uf, dts[-1], out.dtype, casting, ops)
    shapes = [o.shape for o in ops]
    if out is not None or where is not True:  # NumPy's message names out and where too
        broadcast_shapes(shapes + ([out.shape] if out is not None else []) +
                         ([np.shape(where)] if where is not True else []))
    if where is not True:
        shapes.append(np.shape(where))
    shape = broadcast_shapes(shapes)
    if name == "power" and dts[-1].kind in "iu" and where is True and 0 not in shape:
        _check_exponent(ops[1])
    inputs = tuple(G.broadcast(n, shape) for n in nodes)
    node = G.elementwise(name, inputs, shape, dts[-1])
    if out is None and where is True:
        return ndarray._from_node(node)
    return write_out(node, out, where)


_general = _apply_ufunc  # (untraced: for record_binary, which traces it)
_apply_ufunc = traced(_apply_ufunc, "apply_ufunc")
_quick_traced = traced(_quick, "apply_ufunc")


def _fast_power(uf, ops, dts, dtype):
    """x ** 2 -> square, x ** 1 -> positive (as NumPy's fast scalar power), where the power's
    loop is x's own dtype, so the result's dtype and values are the same."""
    if uf is not np.power or dtype is not None or ops[1].node is not None \
            or ops[0].node is None or dts[0] != ops[0].node.dtype or dts[-1] != dts[0]:
        return None
    p = ops[1].weak
    if p == 2:
        return np.square
    if p == 1 and dts[0].kind in "fiu":
        return np.positive
    return None


def _check_exponent(e: Operand) -> None:
    """NumPy's error for an integer power with a negative exponent, raised now when the
    exponent is known (a lazy one raises when the power runs)."""
    vals = np.asarray(e.weak) if e.node is None else known_values(e.node)
    if vals is not None and vals.dtype.kind == "i" and (vals < 0).any():
        raise ValueError("Integers to negative integer powers are not allowed.")


def _out_array(out) -> ndarray:
    """The `out` argument as one lazy array, with NumPy's errors for anything else."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError("The 'out' tuple must have exactly one entry per ufunc output")
        out = out[0]
    if not isinstance(out, ndarray):
        raise TypeError("return arrays must be of ArrayType")
    if not out._view.writeable:
        raise ValueError("output array is read-only")
    return out


def _check_cast(uf, res_dtype: np.dtype, out_dtype: np.dtype, casting, ops) -> None:
    if np.can_cast(res_dtype, out_dtype, casting):
        return
    # let NumPy raise its own UFuncTypeError with its own message
    empties = [np.empty(0, o.node.dtype) if o.node is not None else o.weak for o in ops]
    uf(*empties, out=np.empty(0, out_dtype), casting=casting)
    raise TypeError(f"Cannot cast ufunc {uf.__name__!r} output from {res_dtype!r} to "
                    f"{out_dtype!r} with casting rule {casting!r}")


def write_out(node: Node, out, where):
    if out is None:
        out = ndarray._from_node(G.broadcast(G.const(0, node.dtype), node.shape))
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
    assign_full(out, value)
    return out


_UFUNC_KWARGS = {"out", "where", "casting", "order", "dtype", "subok", "signature", "axes", "axis",
                 "keepdims"}


def _positional_out(uf: np.ufunc, args, kwargs: dict) -> tuple[tuple, dict]:
    """NumPy's positional outputs, f(a, b, out), moved into the keywords (as a tuple where
    the ufunc has several outputs)."""
    n = uf.nin + uf.nout
    if not uf.nin <= len(args) <= n:
        raise TypeError(f"{uf.__name__}() takes from {uf.nin} to {n} positional arguments but "
                        f"{len(args)} {'was' if len(args) == 1 else 'were'} given")
    kw = dict(kwargs)
    outs = tuple(args[uf.nin:])
    if not outs:
        return tuple(args), kw
    if "out" in kw:
        raise TypeError("cannot specify 'out' as both a positional and keyword argument")
    if uf.nout == 1:
        if isinstance(outs[0], (tuple, list)):
            raise TypeError("return arrays must be of ArrayType")
        kw["out"] = outs[0]
    else:
        kw["out"] = outs + (None,) * (uf.nout - len(outs))
    return tuple(args[:uf.nin]), kw


def call_ufunc(uf: np.ufunc, args, kwargs: dict):
    """A ufunc call as NumPy spells it (out=, where=, dtype=, casting=, ...): lazy when tracer
    supports it, else NumPy on evaluated inputs (warned and counted)."""
    r = eager.ufunc(uf, args, kwargs)
    if r is not eager.NO:
        return r
    args, kw = _positional_out(uf, args, kwargs)
    out_given = "out" in kw
    out = kw.pop("out", None)
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    where = kw.pop("where", True)
    dtype = kw.pop("dtype", None)
    casting = kw.pop("casting", "same_kind")
    for k in kw:
        if k not in _UFUNC_KWARGS:
            raise TypeError(f"{uf.__name__}() got an unexpected keyword argument '{k}'")
    if where is not True and out is None and not out_given:
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
    return fallback_call(uf.__name__, uf, args, kw)
