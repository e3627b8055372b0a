"""Reductions with NumPy's axis, keepdims, dtype, out and initial rules; mean/var/std as NumPy
composes them (numpy/_core/_methods.py), so dtypes and rounding follow NumPy's."""
from __future__ import annotations

import math
import operator
import warnings

import numpy as np
from numpy.lib.array_utils import normalize_axis_tuple, normalize_axis_index

from tracer.ir.node import make_canonical
from tracer.ir.registry import ACC_LOGICAL, OPS, Kind, keeps_values
from . import graph as G
from .array import lazy, ndarray
from .recording import traced
from .fallback import fallback_call
from .ufuncs import apply_ufunc
from .write import assign_full

# each ufunc's reduction in the registry (by its `ufunc` property): their `ufunc.reduce` is lazy
_REDUCE_OP = {d.ufunc: name for name, d in OPS.items()
              if d.kind is Kind.REDUCE and d.ufunc is not None}


def _axes(axis, ndim) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = normalize_axis_tuple(axis, ndim, allow_duplicate=True)
    if len(set(axes)) != len(axes):
        raise ValueError("duplicate value in 'axis'")
    return axes


def _scalar_axis(axis, ndim):
    """NumPy's ufunc reductions take an integer axis 0 or -1 on a 0-d array, reducing nothing."""
    if ndim == 0 and not isinstance(axis, (tuple, type(None))) and operator.index(axis) in (0, -1):
        return ()
    return axis


def _keep(node, axes, ndim) -> ndarray:
    shape = tuple(1 if i in axes else s for i, s in enumerate(_full_shape(node, axes, ndim)))
    return ndarray._from_node(node).reshape(shape)


def _full_shape(node, axes, ndim):
    it = iter(node.shape)
    return [1 if i in axes else next(it) for i in range(ndim)]


def _finish(res: ndarray, out):
    if out is None:
        return res
    if isinstance(out, tuple):
        out = out[0]
    if isinstance(out, np.ndarray):  # a host array to fill: NumPy's meaning needs the values now
        if out.shape != res.shape:
            raise ValueError(f"output parameter for reduction operation has the wrong shape "
                             f"{out.shape}, expected {res.shape}")
        np.copyto(out, np.asarray(res), casting="unsafe")
        return out
    if isinstance(out, ndarray) and not out._view.writeable:
        raise ValueError("output array is read-only")
    if out.shape != res.shape:
        raise ValueError(f"output parameter for reduction operation has the wrong shape "
                         f"{out.shape}, expected {res.shape}")
    with np.errstate(all="ignore"):
        assign_full(out, G.cast(res._node, out.dtype))
    return out


def _loop_with_out(dt: np.dtype, out) -> np.dtype | None:
    """The loop NumPy reduces in when `out` is given without dtype=: it dispatches on out's
    dtype and the array's (their promotion; a float32 sum into a float64 out adds in float64),
    not on the array's alone."""
    od = getattr(_out_array(out), "dtype", None)
    if od is None:
        return None
    try:
        return np.promote_types(od, dt)
    except TypeError:
        return None


_RESULT_DTYPES: dict[tuple, np.dtype] = {}  # (ufunc, input dtype) -> the reduction's dtype


def _result_dtype(ufunc, x, axes, dtype) -> np.dtype:
    """The dtype of ufunc's reduction of x over axes with dtype=dtype: NumPy's, from a
    one-element stand-in (its errors and warnings too), kept per input dtype where no dtype=
    is given (it does not depend on the axes)."""
    key = (ufunc, x.dtype) if dtype is None else None
    got = _RESULT_DTYPES.get(key) if key is not None else None
    if got is None:
        probe = np.zeros((1,) * x.ndim, x.dtype)
        got = ufunc.reduce(probe, axis=axes, dtype=dtype).dtype if x.ndim else \
            ufunc.reduce(probe.reshape(1), dtype=dtype).dtype
        if key is not None:
            _RESULT_DTYPES[key] = got
    return got


# (ufunc, input dtype, input shape, axis) -> (op, cast to, attrs, shape, dtype) of the plain
# reduction's node: what the general path below builds, for the common call (no dtype=, out=,
# keepdims, initial or where), once it has built it
_QUICK: dict[tuple, tuple] = {}


@traced
def reduce(ufunc, a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue,
           where=True):
    plain = dtype is None and out is None and not keepdims and initial is np._NoValue and \
        where is True and type(a) is ndarray
    if plain:
        x = a._node
        try:
            key = (ufunc, x.dtype, x.shape, axis)
            hit = _QUICK.get(key)
        except TypeError:  # an unhashable axis (a list): the general path
            plain = hit = None
        if hit is not None:
            op, target, attrs, shape, rdt = hit
            src = G.cast(x, target)
            return ndarray._from_node(make_canonical(op, (src,), shape, rdt, attrs))
    op = _REDUCE_OP.get(ufunc)
    a = lazy(a)
    if op is None or where is not True:
        kw = dict(axis=axis, dtype=dtype, keepdims=keepdims)
        if initial is not np._NoValue:
            kw["initial"] = initial
        if where is not True:
            kw["where"] = where
        return fallback_call(f"{ufunc.__name__}.reduce", ufunc.reduce, (a,), kw)
    x = a._node
    axes = _axes(_scalar_axis(axis, x.ndim), x.ndim)
    n_reduced = math.prod(x.shape[i] for i in axes)
    if ufunc.identity is None and n_reduced == 0 and initial is np._NoValue:
        raise ValueError(f"zero-size array to reduction operation {ufunc.__name__} which has no "
                         "identity")
    if n_reduced == 0 and initial is not np._NoValue:  # nothing to reduce: NumPy's own answer
        with np.errstate(all="ignore"):
            empty = ufunc.reduce(np.empty(x.shape, x.dtype), axis=axes, dtype=dtype,
                                 keepdims=keepdims, initial=initial)
        return _finish(ndarray._from_node(G.leaf(np.asarray(empty))), out)
    if dtype is None and out is not None and OPS[op].accumulate != ACC_LOGICAL:
        dtype = _loop_with_out(x.dtype, out)
    res_dt = _result_dtype(ufunc, x, axes, dtype)
    target = np.bool_ if OPS[op].accumulate == ACC_LOGICAL else res_dt
    if x.op == "const":
        with np.errstate(all="ignore"):
            src = G.cast(x, target)
    else:  # (only a constant's cast computes anything)
        src = G.cast(x, target)
    if axes:
        node = G.reduce(op, src, axes)
        if plain and n_reduced and not (node.dtype == np.bool_ and not node.shape):
            if len(_QUICK) > 4096:
                _QUICK.clear()
            _QUICK[key] = (op, target, node.attrs, node.shape, node.dtype)
    else:  # NumPy starts from `initial` where given
        node = src if initial is not np._NoValue else _identity_applied(op, src)
    if initial is not np._NoValue:
        node = apply_ufunc(ufunc, (ndarray._from_node(node), initial))._node
        node = G.cast(node, res_dt)
    if node.dtype == np.bool_ and not node.shape and not keepdims and out is None:
        node = _bool_01(node)  # NumPy's scalar result is 0/1 whatever the byte (a bool view)
    res = _keep(node, axes, x.ndim) if keepdims else ndarray._from_node(node)
    return _finish(res, out)


def _bool_01(x):
    return G.elementwise("not_equal", (x, G.broadcast(G.const(False, x.dtype), x.shape)))


def _identity_applied(op: str, x):
    """A reduction over no axes: NumPy still starts from the ufunc's identity, where that
    changes an element (registry.keeps_values): 0.0 + x (-0.0 becomes 0.0), (1+0j) * x (inf+1j
    becomes inf+nanj)."""
    uf = OPS[op].ufunc
    if x.dtype == np.bool_:  # NumPy copies through a bool cast: any byte (a view) becomes 0/1
        return _bool_01(x)
    if keeps_values(OPS[op], x.dtype):
        return x
    ident = G.broadcast(G.const(uf.identity, x.dtype), x.shape)
    return G.elementwise(uf.__name__, (ident, x))


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return reduce(np.add, a, axis, dtype, out, keepdims, initial, where)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return reduce(np.multiply, a, axis, dtype, out, keepdims, initial, where)


def max(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return reduce(np.maximum, a, axis, None, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return reduce(np.minimum, a, axis, None, out, keepdims, initial, where)


def any(a, axis=None, out=None, keepdims=False, *, where=True):
    return reduce(np.logical_or, a, axis, None, out, keepdims, np._NoValue, where)


def all(a, axis=None, out=None, keepdims=False, *, where=True):
    return reduce(np.logical_and, a, axis, None, out, keepdims, np._NoValue, where)


def _count(shape, axes) -> int:
    return math.prod(shape[i] for i in axes)


@traced
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    a = lazy(a)
    axes = _axes(axis, a.ndim)
    rcount = _count(a.shape, axes)
    if rcount == 0:
        warnings.warn("Mean of empty slice.", RuntimeWarning, stacklevel=2)
    is_f16 = False
    if dtype is None:
        if a.dtype.kind in "iub":
            dtype = np.dtype("f8")
        elif a.dtype == np.float16:
            dtype, is_f16 = np.dtype("f4"), True
    if dtype is None and out is not None:
        dtype = _loop_with_out(a.dtype, out)
    return _finish(_divided(sum(a, axis, dtype, None, keepdims, where=where), rcount, out,
                            np.float16 if is_f16 and out is None else None), out)


def _divided(ret: ndarray, count: int, out, cast=None) -> ndarray:
    """ret / count as NumPy's _methods divide a sum: in the sum's dtype, or where the sum went
    into `out` (in out's loop, ret then is out's dtype), in out's place and dtype."""
    if out is not None:
        ret = ndarray._from_node(G.cast(ret._node, _out_array(out).dtype))
    with np.errstate(all="ignore"):
        node = G.cast(apply_ufunc(np.true_divide, (ret, count))._node, ret.dtype)
    return ndarray._from_node(node if cast is None else G.cast(node, cast))


def _out_array(out):
    return out[0] if isinstance(out, tuple) else out


@traced
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=np._NoValue):
    return _finish(_variance(a, axis, dtype, out, ddof, keepdims, where, mean, correction), out)


@traced
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=np._NoValue):
    v = _variance(a, axis, dtype, out, ddof, keepdims, where, mean, correction)
    return _finish(apply_ufunc(np.sqrt, (v,)), out)


def _variance(a, axis, dtype, out, ddof, keepdims, where, mean, correction) -> ndarray:
    """var's value as NumPy's _methods._var computes it; where `out` is given, its last sum and
    the division follow out's dtype (var and std then write it into out)."""
    if correction is not np._NoValue:
        ddof = correction
    a = lazy(a)
    axes = _axes(axis, a.ndim)
    rcount = _count(a.shape, axes)
    if ddof >= rcount:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
    if dtype is None and a.dtype.kind in "iub":
        dtype = np.dtype("f8")
    if mean is not None:  # NumPy's shortcut: the caller's mean, shaped as with keepdims
        arrmean = lazy(mean)
    else:
        arrmean = _divided(sum(a, axis, dtype, None, True, where=where), rcount, None)
    x = apply_ufunc(np.subtract, (a, arrmean))
    if x.dtype.kind == "c":
        x = apply_ufunc(np.multiply, (x, apply_ufunc(np.conjugate, (x,))))
        x = ndarray._from_node(G.cast(x._node, np.dtype(x.dtype.char.lower()).type(0).real.dtype))
    else:
        x = apply_ufunc(np.multiply, (x, x))
    if dtype is None and out is not None:
        dtype = _loop_with_out(x.dtype, out)
    ret = sum(x, axis, dtype, None, keepdims, where=where)
    return _divided(ret, builtins_max(rcount - ddof, 0), out)


def _arg(kind: str, a, axis=None, out=None, *, keepdims=False):
    a = lazy(a)
    if a.ndim == 0:  # NumPy's argmax of a 0-d array is that of its one-element ravel
        res = _arg(kind, a.reshape(1), axis)
        return _finish(res, out)
    if axis is None:
        x = a.reshape(-1)._node
        ax = 0
    else:
        ax = normalize_axis_index(axis, a.ndim)
        x = a._node
    if x.shape[ax] == 0:
        raise ValueError(f"attempt to get {kind} of an empty sequence")
    node = G.reduce(kind, x, (ax,))
    res = ndarray._from_node(node)
    if keepdims:
        res = res.reshape((1,) * a.ndim if axis is None else
                          tuple(1 if i == ax else s for i, s in enumerate(a.shape)))
    return _finish(res, out)


def argmax(a, axis=None, out=None, *, keepdims=False):
    return _arg("argmax", a, axis, out, keepdims=keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    return _arg("argmin", a, axis, out, keepdims=keepdims)


import builtins  # noqa: E402  (sum/max/min/any/all are shadowed above)

builtins_max = builtins.max
