"""Lazy versions of NumPy's where, nonzero, argwhere, clip and astype."""
from __future__ import annotations

import math

import numpy as np

from . import graph as G
from .array import lazy, ndarray
from .fallback import fallback_call
from .recording import traced
from .reductions import _finish
from .store import to_numpy
from .ufuncs import Operand, apply_ufunc, broadcast_shapes, resolve
from .write import host_values, known_values


@traced
def nonzero(a):
    """The indices of nonzero elements. How many there are depends on the data: `a` is
    evaluated, and the index arrays come back as realized lazy arrays that later work reads
    lazily."""
    host = to_numpy(a) if isinstance(a, ndarray) else np.asarray(host_values(a))
    if host.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar)"
                         ".nonzero() instead. If the context of this error is of the form "
                         "`arr.nonzero()`, this error is actually caused by code calling it "
                         "outside of a ufunc.")
    return tuple(ndarray._from_node(G.leaf(i)) for i in np.nonzero(host))


def argwhere(a):
    """np.argwhere: like nonzero, evaluates `a` (its result's length depends on the data)."""
    host = to_numpy(a) if isinstance(a, ndarray) else np.asarray(host_values(a))
    return ndarray._from_node(G.leaf(np.argwhere(host)))


def where(condition, x=None, y=None):
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    ops = [Operand(condition), Operand(x), Operand(y)]
    keys = [o.resolve_key() for o in ops[1:]]
    dt = np.result_type(*[k if isinstance(k, np.dtype) else o.weak for k, o in zip(keys, ops[1:])])
    shape = broadcast_shapes([o.shape for o in ops])
    c = G.broadcast(G.cast(ops[0].node if ops[0].node is not None else
                           G.const(ops[0].weak, np.bool_), np.bool_), shape)
    a = G.broadcast(_where_operand(ops[1], dt), shape)
    b = G.broadcast(_where_operand(ops[2], dt), shape)
    out = ndarray._from_node(G.where(c, a, b))
    out._arr0 = True  # np.where returns an array, 0-d too (not a scalar)
    return out


def _where_operand(o, dt):
    """np.where casts a Python int the way a C long cast does: an out-of-range value wraps
    (np.where(c, int8_array, 1000) holds -24), and only one past int64/uint64 overflows."""
    if o.node is None and isinstance(o.weak, int) and not isinstance(o.weak, bool) \
            and dt.kind in "iu":
        v = o.weak
        if not -2**63 <= v < 2**64:
            raise OverflowError("Python int too large to convert to C long")
        with np.errstate(all="ignore"):
            return G.const(np.array(v).astype(dt)[()], dt)
    return o.as_node(dt, "where")


def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,
         max=np._NoValue, **kw):
    lo = a_min if a_min is not np._NoValue else min
    hi = a_max if a_max is not np._NoValue else max
    lo = None if lo is np._NoValue else lo
    hi = None if hi is np._NoValue else hi
    r = lazy(a)
    if r.dtype.kind in "iu":  # NumPy drops Python-int bounds outside the dtype's range
        info = np.iinfo(r.dtype)
        if type(lo) is int and lo <= info.min:
            lo = None
        if type(hi) is int and hi >= info.max:
            hi = None
    if lo is None and hi is None:
        r = apply_ufunc(np.positive, (r,))
    if lo is None or hi is None:  # NumPy runs maximum(a, lo) or minimum(a, hi)
        if lo is not None:
            r = apply_ufunc(np.maximum, (r, lo))
        if hi is not None:
            r = apply_ufunc(np.minimum, (r, hi))
    else:
        r = _clip_both(r, lo, hi)
        if isinstance(r, ndarray):  # a ufunc's 0-d result is a scalar (where's is an array)
            r._arr0 = False
    if out is not None:
        return _finish(r, out)
    return r


def _clip_both(r, lo, hi):
    """NumPy's clip ufunc: one loop dtype for all three operands, a NaN from any operand
    propagates. On a tie (clip(0.0, -0.0, 1)) its float16 loop and its loop for one-element
    bounds keep x; its float32/64 loop for array bounds takes the bound. Float
    maximum/minimum pick by other rules on ties, so the choice is written out."""
    dt = resolve(np._core.umath.clip, [Operand(r), Operand(lo), Operand(hi)])[-1]
    if dt.kind == "c":  # its lexicographic order with NaNs is no NumPy comparison
        return fallback_call("clip", np.clip, (r, lo, hi), {})
    if dt.kind != "f":
        return apply_ufunc(np.minimum, (apply_ufunc(np.maximum, (r, lo), dtype=dt), hi),
                           dtype=dt)
    # an operand cast to the loop's dtype makes NumPy's iterator buffer: one flat loop
    cast = any(isinstance(v, (ndarray, np.ndarray)) and v.dtype != dt for v in (r, lo, hi))
    x, lo, hi = (ndarray._from_node(Operand(v).as_node(dt, "clip")) for v in (r, lo, hi))
    keep_x = dt == np.float16 or all(_constant_in_loop(b, (x, lo, hi), cast) for b in (lo, hi))
    m = _clip_side(x, lo, keep_x, np.less, np.less_equal)
    return _clip_side(m, hi, keep_x, np.greater, np.greater_equal)


def _constant_in_loop(b, operands, buffered: bool) -> bool:
    """Whether NumPy's inner loop sees bound b with stride 0 (its loop for such bounds keeps x
    on a tie). A 0-d bound has stride 0. Where the operands that are not 0-d share one shape,
    the loop is one flat pass and b, of that shape, has a stride; so it is where an operand is
    cast (the iterator buffers), and only a one-element bound broadcast over it has stride 0.
    Otherwise NumPy's iterator drops axes of length 1 and loops over the last axis longer than
    1: b has stride 0 if its extent there is 1 (broadcast), or if there is no such axis."""
    if b.ndim == 0:
        return True
    out = broadcast_shapes([o.shape for o in operands])
    if buffered:
        return b.size == 1 and math.prod(out) > 1
    if len({o.shape for o in operands if o.ndim}) <= 1:
        return False
    inner = [k for k, d in enumerate(out) if d > 1]
    if not inner:
        return True
    k = inner[-1] - (len(out) - b.ndim)
    return k < 0 or b.shape[k] == 1


def _clip_side(x, bound, keep_x: bool, beyond, beyond_or_tie):
    """x past `bound` (or tied with it, where the loop takes the bound) becomes the bound; a
    NaN x stays, a NaN bound wins. A bound known not to be NaN needs no check for it."""
    if keep_x:
        past = apply_ufunc(beyond, (x, bound))
    else:
        past = apply_ufunc(beyond_or_tie, (x, bound))
    known = known_values(bound._node)
    if known is None or np.isnan(known).any():
        past = apply_ufunc(np.logical_or, (past, apply_ufunc(np.isnan, (bound,))))
    return where(past, bound, x)


def astype(x, dtype, /, *, copy=True, device=None):
    return lazy(x).astype(dtype, copy=copy)


NAMES = ("where clip astype nonzero argwhere").split()
