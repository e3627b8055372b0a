"""Lazy versions of NumPy's creation, shape and joining functions, and matmul."""
from __future__ import annotations

import math
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from tracer.cuda_kernels import snapshot

from . import graph as G
from .array import ndarray, asarray_node
from .recording import proxy, shape_str, traced
from .view import laid_out
from .fallback import FOREIGN_KINDS, fallback_call
from .indexing import basic_view
from .reductions import _finish
from .store import Var, apply_view_numpy, to_numpy
from .ufuncs import Operand, apply_ufunc, broadcast_shapes, resolve
from .write import host_values, known_values


def _lazy(a) -> ndarray:
    return a if isinstance(a, ndarray) else ndarray._from_node(asarray_node(a))


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) and not hasattr(shape, "__iter__"):
        raise TypeError(f"expected a sequence of integers or a single integer, got '{shape}'")
    shape = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("negative dimensions are not allowed")
    return shape


# ------------------------------------------------------------------ creation

# strings, bytes, objects, records, dates: tracer does not record them; `np.array` of such
# data is a NumPy array, and NumPy's functions run on it


def array(obj, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    if not isinstance(obj, ndarray) or dtype is not None and np.dtype(dtype).kind in FOREIGN_KINDS:
        return _from_host(obj, dtype, copy, order, subok, ndmin)
    out = _converted(obj, dtype, copy, order)
    if out.ndim < ndmin:
        out = out.reshape((1,) * (ndmin - out.ndim) + out.shape)
    if out is not obj:
        out._arr0 = True  # a 0-d array prints as one, not as the scalar a reduction gives
    return out


def asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    return array(a, dtype, copy=copy, order=order)


def asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    return array(a, dtype, copy=copy, order=order, subok=True)


def ascontiguousarray(a, dtype=None, *, like=None):
    return array(a, dtype, copy=None, order="C", ndmin=1)


# NumPy's words for copy=False where a copy is needed
_NO_COPY = ("Unable to avoid copy while creating an array as requested.\nIf using "
            "`np.array(obj, copy=False)` replace it with `np.asarray(obj)` to allow a copy when "
            "needed (no behavior change in NumPy 1.x).\nFor more details, see "
            "https://numpy.org/devdocs/numpy_2_0_migration_guide.html#adapting-to-changes-in-"
            "the-copy-keyword.")


def _converted(a: ndarray, dtype, copy, order) -> ndarray:
    """np.array(a, dtype, copy=copy, order=order) of a lazy array: a itself unless a copy is
    asked for (copy=True) or needed (another dtype or memory order, or a 0-d result standing
    for NumPy's scalar)."""
    dt = a.dtype if dtype is None else np.dtype(dtype)
    needed = dt != a.dtype or (order == "C" and not a.flags.c_contiguous) or \
        (order == "F" and not a.flags.f_contiguous) or \
        (a.ndim == 0 and not getattr(a, "_arr0", False))
    if copy is False and needed:
        raise ValueError(_NO_COPY)
    return laid_out(a.astype(dt), order, a) if copy or needed else a


def _from_host(obj, dtype, copy, order, subok, ndmin):
    """np.array of host data: a lazy leaf holding a copy, or NumPy's own array where tracer does
    not record the data (strings, objects, records, dates), subok keeps a NumPy subclass, or
    copy=False forbids the copy a lazy leaf is."""
    obj = host_values(obj)
    by_numpy = copy is False or isinstance(obj, np.ndarray) and (
        obj.dtype.kind in FOREIGN_KINDS or subok and type(obj) is not np.ndarray)
    if by_numpy:  # NumPy's own array, aliasing and errors (copy=False where a copy is needed)
        h = np.array(obj, dtype, copy=copy, order=order, subok=subok, ndmin=ndmin)
    else:
        h = snapshot(obj, dtype)
    if copy is False or h.dtype.kind in FOREIGN_KINDS or type(h) is not np.ndarray:
        return h if by_numpy else np.array(h, copy=None, order=order, ndmin=ndmin)
    out = laid_out(ndarray(Var(G.leaf(snapshot(h) if by_numpy else h))), order)
    if out.ndim < ndmin:
        out = out.reshape((1,) * (ndmin - out.ndim) + out.shape)
    out._arr0 = True
    return out


# creations at least this big ask the OS whether NumPy could allocate them (see _check_size)
_PROBE_BYTES = 1 << 26


def _check_size(shape: tuple[int, ...], dt: np.dtype) -> None:
    """NumPy's errors for an array it cannot allocate: too big to index (ValueError), or more
    memory than the OS grants (MemoryError), which a lazy array would otherwise meet only
    when it runs, or never. NumPy's own np.empty asks: it reserves address space and frees
    it at once, touching no page."""
    if math.prod(d for d in shape if d) * dt.itemsize >= _PROBE_BYTES:
        np.empty(shape, dt)


@traced
def full(shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    shape = _shape(shape)
    if dtype is None and not isinstance(fill_value, ndarray) and \
            np.array(fill_value).dtype.kind in FOREIGN_KINDS:  # 2**64: objects, as np.array
        return np.full(shape, fill_value, order=order)
    if order != "C":  # the same values; only the strides (flags, later views) differ
        np.empty(0, order=order)  # NumPy's own error for an order it refuses
        return laid_out(full(shape, fill_value, dtype), order)
    if isinstance(fill_value, ndarray):
        node = fill_value._node
        dt = np.dtype(dtype) if dtype is not None else node.dtype
        _check_size(shape, dt)
        out = ndarray._from_node(G.broadcast(G.cast(node, dt), shape))
    else:
        dt = np.dtype(dtype) if dtype is not None else np.array(fill_value).dtype
        _check_size(shape, dt)  # NumPy allocates before it fills
        if np.ndim(fill_value):
            out = ndarray(Var(G.leaf(np.full(shape, fill_value, dt))))
        else:  # NumPy's own unsafe conversion (complex -> real, nan -> int) and its errors
            fill = np.full((), fill_value, dt)
            out = ndarray._from_node(G.broadcast(G.const(fill[()], dt), shape))
    out._arr0 = True  # a 0-d result is an array (np.zeros(())), not a scalar
    return out


def zeros(shape, dtype=float, order="C", *, device=None, like=None):
    return full(shape, 0, dtype, order)


def ones(shape, dtype=None, order="C", *, device=None, like=None):
    return full(shape, 1, dtype if dtype is not None else float, order)


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """Like zeros: a lazy empty array costs nothing until written, and zero is a safe value."""
    return full(shape, 0, dtype, order)


def _like(fn, a, dtype, shape, *args, order="K"):
    a = _lazy(a)
    return laid_out(fn(a.shape if shape is None else shape, *args,
                       dtype=a.dtype if dtype is None else dtype), order, a)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like(zeros, a, dtype, shape, order=order)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like(ones, a, dtype, shape, order=order)


def empty_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like(empty, a, dtype, shape, order=order)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _like(full, a, dtype, shape, fill_value, order=order)


def arange(*args, dtype=None, device=None, like=None, **kw):
    args = [np.asarray(x).item() if isinstance(x, ndarray) else x for x in args]
    return ndarray(Var(G.leaf(np.arange(*args, dtype=dtype, **kw))))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    r = np.linspace(host_values(start), host_values(stop), num, endpoint, retstep, dtype, axis)
    if retstep:
        return ndarray(Var(G.leaf(r[0]))), r[1]
    return ndarray(Var(G.leaf(r)))


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    return ndarray(Var(G.leaf(np.eye(N, M, k, dtype))))


def identity(n, dtype=None, *, like=None):
    return ndarray(Var(G.leaf(np.identity(n, dtype))))


# ------------------------------------------------------------------ shapes and views

def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    return _lazy(a).reshape(shape if shape is not None else newshape, order=order, copy=copy)


def transpose(a, axes=None):
    return _lazy(a).transpose(axes)


def permute_dims(a, axes=None):
    return transpose(a, axes)


@traced
def swapaxes(a, axis1, axis2):
    a = _lazy(a)
    i = normalize_axis_index(axis1, a.ndim, "axis1")
    j = normalize_axis_index(axis2, a.ndim, "axis2")
    perm = list(range(a.ndim))
    perm[i], perm[j] = perm[j], perm[i]
    return a.transpose(perm)


@traced
def moveaxis(a, source, destination):
    a = _lazy(a)
    src = normalize_axis_tuple(source, a.ndim, "source")
    dst = normalize_axis_tuple(destination, a.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of "
                         "elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return a.transpose(order)


@traced
def expand_dims(a, axis):
    a = _lazy(a)
    return a.reshape(np.expand_dims(proxy(a.shape), axis).shape)


@traced
def squeeze(a, axis=None):
    a = _lazy(a)
    return a.reshape(np.squeeze(proxy(a.shape), axis).shape)


@traced
def broadcast_to(a, shape, subok=False):
    a = _lazy(a)
    shape = np.broadcast_to(proxy(a.shape), shape).shape  # NumPy's errors
    return a._broadcast_view(shape)


@traced
def broadcast_arrays(*args, subok=False):
    arrs = [_lazy(a) for a in args]
    shape = np.broadcast_shapes(*[a.shape for a in arrs])
    return tuple(a._broadcast_view(shape) for a in arrs)


def ravel(a, order="C"):
    return _lazy(a)._ravel_order(order)


def atleast_1d(*arys):
    res = [_lazy(a) if _lazy(a).ndim >= 1 else _lazy(a).reshape(1) for a in arys]
    return res[0] if len(res) == 1 else tuple(res)


def atleast_2d(*arys):
    res = []
    for a in map(_lazy, arys):
        res.append(a.reshape((1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return res[0] if len(res) == 1 else tuple(res)


@traced
def flip(m, axis=None):
    m = _lazy(m)
    axes = range(m.ndim) if axis is None else normalize_axis_tuple(axis, m.ndim)
    key = tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(m.ndim))
    return basic_view(m, key)


def flipud(m):
    return flip(m, 0)


def fliplr(m):
    return flip(m, 1)


def isfortran(a):
    """From the strides a lazy array would have: nothing is evaluated."""
    return a.flags.fnc if isinstance(a, ndarray) else np.isfortran(a)


def copy(a, order="K", subok=False):
    a = _lazy(a)
    return laid_out(a.copy(), order, a)


@traced
def concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrs = [_lazy(a) for a in arrays]
    if not arrs:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrs = [a.reshape(-1) for a in arrs]
        axis = 0
    if any(a.ndim == 0 for a in arrs):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    nd = arrs[0].ndim
    ax = normalize_axis_index(axis, nd)
    for i, a in enumerate(arrs[1:], 1):
        if a.ndim != nd:
            raise ValueError("all the input arrays must have same number of dimensions, but the "
                             f"array at index 0 has {nd} dimension(s) and the array at index {i} "
                             f"has {a.ndim} dimension(s)")
        for d in range(nd):
            if d != ax and a.shape[d] != arrs[0].shape[d]:
                raise ValueError("all the input array dimensions except for the concatenation "
                                 f"axis must match exactly, but along dimension {d}, the array "
                                 f"at index 0 has size {arrs[0].shape[d]} and the array at index "
                                 f"{i} has size {a.shape[d]}")
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*[a.dtype for a in arrs])
    for a in arrs:
        if not np.can_cast(a.dtype, dt, casting):
            raise TypeError(f"Cannot cast array data from {a.dtype!r} to {dt!r} according to the "
                            f"rule {casting!r}")
    nodes = tuple(G.cast(a._node, dt) for a in arrs if a.shape[ax] or len(arrs) == 1)
    if not nodes:
        nodes = (G.cast(arrs[0]._node, dt),)
    node = nodes[0] if len(nodes) == 1 else G.concatenate(nodes, ax)
    res = ndarray._from_node(node)
    if out is not None:
        return _finish(res, out)
    return res


@traced
def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrs = [_lazy(a) for a in arrays]
    if not arrs:
        raise ValueError("need at least one array to stack")
    if len({a.shape for a in arrs}) != 1:
        raise ValueError("all input arrays must have the same shape")
    ax = normalize_axis_index(axis, arrs[0].ndim + 1)
    return concatenate([expand_dims(a, ax) for a in arrs], ax, out, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    return concatenate([atleast_2d(a) for a in tup], 0, dtype=dtype, casting=casting)


def hstack(tup, *, dtype=None, casting="same_kind"):
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if arrs and arrs[0].ndim == 1 else 1, dtype=dtype,
                       casting=casting)


# ------------------------------------------------------------------ where, clip, astype

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
    r = _lazy(a)
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
    x, lo, hi = (ndarray._from_node(Operand(v).as_node(dt, "clip")) for v in (r, lo, hi))
    keep_x = dt == np.float16 or lo.size == 1 and hi.size == 1
    m = _clip_side(x, lo, keep_x, np.less, np.less_equal)
    return _clip_side(m, hi, keep_x, np.greater, np.greater_equal)


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
    return _lazy(x).astype(dtype, copy=copy)


# ------------------------------------------------------------------ contractions

def _matmul_error(a, b):
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    np.matmul(np.zeros(ka) if a.ndim == 1 else np.zeros((1, ka)),
              np.zeros(kb) if b.ndim == 1 else np.zeros((kb, 1)))


@traced
def matmul(x1, x2, /, out=None, *, dtype=None, **kw):
    a, b = _lazy(x1), _lazy(x2)
    if a.ndim == 0 or b.ndim == 0:
        i = 0 if a.ndim == 0 else 1
        raise ValueError(f"matmul: Input operand {i} does not have enough dimensions (has 0, "
                         "gufunc core with signature (n?,k),(k,m?)->(n?,m?) requires 1)")
    _matmul_error(a, b) if (a.shape[-1] != (b.shape[0] if b.ndim == 1 else b.shape[-2])) else None
    dts = np.matmul.resolve_dtypes((a.dtype, b.dtype, None if dtype is None else np.dtype(dtype)))
    an = G.cast(a._node, dts[0])
    bn = G.cast(b._node, dts[1])
    if a.ndim == 1:
        an = G.reshape(an, (1,) + a.shape)
    if b.ndim == 1:
        bn = G.reshape(bn, b.shape + (1,))
    try:
        np.broadcast_shapes(an.shape[:-2], bn.shape[:-2])
    except ValueError:
        np.matmul(proxy(a.shape), proxy(b.shape))  # NumPy's own message
        raise
    node = G.matmul(an, bn)
    shape = node.shape
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    res = ndarray._from_node(G.cast(node, dts[2]))
    res = res.reshape(shape) if shape != res.shape else res
    if out is not None:
        return _finish(res, out)
    return res


def dot(a, b, out=None):
    a, b = _lazy(a), _lazy(b)
    if a.ndim == 0 or b.ndim == 0:
        return apply_ufunc(np.multiply, (a, b), out=out)
    kb = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[kb]:
        raise ValueError(f"shapes {shape_str(a.shape)} and {shape_str(b.shape)} not aligned: "
                         f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[kb]} (dim {kb})")
    if b.ndim <= 2:
        return matmul(a, b, out=out)
    return fallback_call("dot", np.dot, (a, b), {} if out is None else {"out": out})


def vdot(a, b):
    a, b = _lazy(a).reshape(-1), _lazy(b).reshape(-1)
    if a.dtype.kind == "c":
        a = apply_ufunc(np.conjugate, (a,))
    return matmul(a, b)


def size(a, axis=None):
    a = _lazy(a)
    return a.size if axis is None else a.shape[axis]


def shape(a):
    return _lazy(a).shape


def ndim(a):
    return _lazy(a).ndim


def _overlap(a, b, fn, max_work):
    """NumPy's answer on stand-ins: two lazy arrays share memory only if they view one base,
    and then exactly where NumPy's views of an uninitialized base of that shape would (pages
    never touched); a lazy array holds its own copy of any NumPy data."""
    if not isinstance(a, ndarray) or not isinstance(b, ndarray):
        if isinstance(a, ndarray) or isinstance(b, ndarray):
            return False
        return fn(a, b, max_work=max_work)
    if a._var is not b._var:
        return False
    base = np.empty(a._var.node.shape, a._var.node.dtype)  # .view(dtype) steps regroup bytes
    return bool(fn(apply_view_numpy(base, a._view.steps), apply_view_numpy(base, b._view.steps),
                   max_work=max_work))


def shares_memory(a, b, max_work=None):
    return _overlap(a, b, np.shares_memory, max_work)


def may_share_memory(a, b, max_work=None):
    return _overlap(a, b, np.may_share_memory, max_work)
