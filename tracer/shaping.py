"""Lazy versions of NumPy's building, splitting, triangle/diagonal and contraction helpers, each
composed from recorded ops (views, concatenation, broadcasts, gathers, matmul): nothing here
evaluates. Shapes and errors come from running NumPy's own function on a stand-in where that
is simpler (`proxy`)."""
from __future__ import annotations

import math
import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from .array import lazy, ndarray
from .creation import arange, full
from .manipulation import concatenate, expand_dims, flip, moveaxis, ravel, transpose
from .products import matmul
from .selection import where
from .recording import proxy, traced
from .fallback import fallback_call


def _take_axis(a: ndarray, key, axis: int) -> ndarray:
    """a indexed by `key` along `axis` (a slice is a view, an index array a gather)."""
    return a[(slice(None),) * axis + (key,)]


# ------------------------------------------------------------------ building

def atleast_3d(*arys):
    res = []
    for a in map(lazy, arys):
        if a.ndim < 3:
            a = a.reshape({0: (1, 1, 1), 1: (1, a.size, 1), 2: a.shape + (1,)}[a.ndim])
        res.append(a)
    return res[0] if len(res) == 1 else tuple(res)


def dstack(tup, *, dtype=None, casting="same_kind"):
    arrs = atleast_3d(*tup)
    return concatenate(arrs if isinstance(arrs, tuple) else (arrs,), 2, dtype=dtype,
                       casting=casting)


def column_stack(tup):
    arrs = []
    for a in map(lazy, tup):
        arrs.append(a.reshape(1, -1).T if a.ndim < 2 else a)
    return concatenate(arrs, 1)


@traced
def tile(A, reps):
    tup = tuple(reps) if np.iterable(reps) else (reps,)
    tup = tuple(operator.index(t) for t in tup)
    A = lazy(A)
    c = A.reshape((1,) * (len(tup) - A.ndim) + A.shape) if len(tup) > A.ndim else A
    tup = (1,) * (c.ndim - len(tup)) + tup
    if any(t < 0 for t in tup):
        raise ValueError("negative dimensions are not allowed")
    # (t0, s0, t1, s1, ...) by broadcasting, then merged pairwise
    inter = tuple(x for s in c.shape for x in (1, s))
    full = tuple(x for t, s in zip(tup, c.shape) for x in (t, s))
    return c.reshape(inter)._broadcast_view(full).reshape(
        tuple(t * s for t, s in zip(tup, c.shape)))


@traced
def repeat(a, repeats, axis=None):
    a = lazy(a)
    if isinstance(repeats, ndarray):  # the result's length depends on the data
        return fallback_call("repeat", np.repeat, (a, repeats), {"axis": axis})
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis_index(axis, a.ndim)
    n = a.shape[axis]
    reps = np.asarray(repeats)
    if reps.ndim == 0:
        r = operator.index(reps.item())
        if r < 0:
            raise ValueError("repeat: negative repeats are not allowed")  # NumPy's wording
        e = expand_dims(a, axis + 1)
        shape = a.shape[:axis + 1] + (r,) + a.shape[axis + 1:]
        return e._broadcast_view(shape).reshape(a.shape[:axis] + (n * r,) + a.shape[axis + 1:])
    idx = np.repeat(np.arange(n), reps)  # NumPy's errors for a wrong length or negatives
    return _take_axis(a, idx, axis)


@traced
def roll(a, shift, axis=None):
    a = lazy(a)
    if axis is None:
        return roll(ravel(a), shift, 0).reshape(a.shape)
    axes = normalize_axis_tuple(axis, a.ndim, allow_duplicate=True)
    shifts = {ax: 0 for ax in axes}
    for sh, ax in np.broadcast(shift, axes):
        shifts[int(ax)] += int(sh)
    for ax, sh in shifts.items():
        n = a.shape[ax]
        s = sh % n if n else 0
        if s:
            a = concatenate([_take_axis(a, slice(n - s, None), ax),
                             _take_axis(a, slice(None, n - s), ax)], ax)
    return a if any(shifts.values()) else a.copy()


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    nd = len(xi)
    out = [lazy(x).reshape((1,) * i + (-1,) + (1,) * (nd - i - 1)) for i, x in enumerate(xi)]
    if indexing == "xy" and nd > 1:
        out[0] = out[0].reshape((1, -1) + (1,) * (nd - 2))
        out[1] = out[1].reshape((-1, 1) + (1,) * (nd - 2))
    if not sparse:
        shape = np.broadcast_shapes(*[o.shape for o in out])
        out = [o._broadcast_view(shape) for o in out]
    return tuple(o.copy() for o in out) if copy else tuple(out)


def indices(dimensions, dtype=int, sparse=False):
    dims = tuple(dimensions)
    nd = len(dims)
    parts = [arange(d, dtype=dtype).reshape((1,) * i + (d,) + (1,) * (nd - i - 1))
             for i, d in enumerate(dims)]
    if sparse:
        return tuple(parts)
    if not parts:
        return lazy(np.empty((0,), dtype))
    return concatenate([p._broadcast_view(dims).reshape((1,) + dims) for p in parts], 0)


_PAD_MODES = ("constant", "empty", "edge", "wrap", "reflect", "symmetric")


@traced
def pad(array, pad_width, mode="constant", **kwargs):
    """Axis by axis, as NumPy pads (so corners come from the last axis), by concatenating
    constant blocks or slices of the array. Other modes, their options (stat_length,
    reflect_type="odd", ...) and widths past what one reflection or wrap covers run NumPy."""
    from numpy.lib._arraypad_impl import _as_pairs  # NumPy's own pad_width rules and errors
    a = lazy(array)
    widths = _as_pairs(pad_width, a.ndim, as_index=True)
    simple = mode in _PAD_MODES and set(kwargs) <= ({"constant_values"} if mode == "constant"
                                                    else set())
    for ax, (lo, hi) in enumerate(widths):
        n = a.shape[ax]
        limit = {"edge": n, "wrap": n, "symmetric": n, "reflect": n - 1}.get(mode, 1 << 62)
        if (lo or hi) and (n == 0 and mode not in ("constant", "empty") or
                           mode not in ("constant", "empty", "edge") and max(lo, hi) > limit):
            simple = False
    if not simple:
        return fallback_call("pad", np.pad, (a, pad_width, mode), kwargs)
    values = _as_pairs(kwargs.get("constant_values", 0), a.ndim)
    x = a
    for ax, ((lo, hi), (vlo, vhi)) in enumerate(zip(widths, values)):
        n = x.shape[ax]
        side = lambda w: x.shape[:ax] + (int(w),) + x.shape[ax + 1:]  # noqa: E731
        if mode in ("constant", "empty"):
            left, right = full(side(lo), vlo, x.dtype), full(side(hi), vhi, x.dtype)
        elif mode == "edge":
            left = _take_axis(x, slice(0, 1), ax)._broadcast_view(side(lo))
            right = _take_axis(x, slice(n - 1, n), ax)._broadcast_view(side(hi))
        elif mode == "wrap":
            left, right = _take_axis(x, slice(n - lo, n), ax), _take_axis(x, slice(0, hi), ax)
        elif mode == "reflect":
            left = flip(_take_axis(x, slice(1, lo + 1), ax), ax)
            right = flip(_take_axis(x, slice(n - 1 - hi, n - 1), ax), ax)
        else:  # symmetric
            left = flip(_take_axis(x, slice(0, lo), ax), ax)
            right = flip(_take_axis(x, slice(n - hi, n), ax), ax)
        if lo or hi:
            x = concatenate([left, x, right], ax)
    return x if x is not a else a.copy()


@traced
def take_along_axis(arr, indices, axis=-1):
    a = lazy(arr)
    idx = indices if isinstance(indices, ndarray) else np.asarray(indices)
    if axis is None:
        if idx.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        return ravel(a)[idx]
    return a[along_axis_key(a.shape, idx, normalize_axis_index(axis, a.ndim))]


def along_axis_key(shape: tuple, idx, axis: int) -> tuple:
    """The index `take_along_axis`/`put_along_axis` use on an array of `shape`: idx along
    `axis` (normalized), aranges broadcast along the others; NumPy's errors for bad idx."""
    if not np.issubdtype(idx.dtype, np.integer):
        raise IndexError("`indices` must be an integer array")
    if len(shape) != idx.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    ones = (1,) * len(shape)
    return tuple(idx if d == axis else np.arange(n).reshape(ones[:d] + (-1,) + ones[d + 1:])
                 for d, n in enumerate(shape))


# ------------------------------------------------------------------ splitting

@traced
def array_split(ary, indices_or_sections, axis=0):
    a = lazy(ary)
    axis = normalize_axis_index(axis, a.ndim)
    n = a.shape[axis]
    try:
        points = [0] + list(indices_or_sections) + [n]
    except TypeError:
        sections = operator.index(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        each, extras = divmod(n, sections)
        sizes = [0] + extras * [each + 1] + (sections - extras) * [each]
        points = np.cumsum(sizes).tolist()
    return [_take_axis(a, slice(lo, hi), axis) for lo, hi in zip(points, points[1:])]


@traced
def split(ary, indices_or_sections, axis=0):
    a = lazy(ary)
    if not np.iterable(indices_or_sections):
        n = a.shape[normalize_axis_index(axis, a.ndim)]
        if n % operator.index(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
    return array_split(a, indices_or_sections, axis)


# ------------------------------------------------------------------ triangles and diagonals

def tri(N, M=None, k=0, dtype=float, *, like=None):
    M = N if M is None else M
    return (arange(N)[:, None] >= arange(-k, M - k)[None, :]).astype(dtype)


def _tri_mask(m: ndarray, k: int, lower: bool) -> ndarray:
    """NumPy's mask `tri(*m.shape[-2:], k)` (so a 1-D m broadcasts to a square), negated and
    shifted by one for the upper triangle."""
    n, mm = m.shape[-2:] if m.ndim >= 2 else (m.shape[-1],) * 2
    if lower:
        return arange(n)[:, None] >= arange(-k, mm - k)[None, :]
    return ~(arange(n)[:, None] >= arange(1 - k, mm + 1 - k)[None, :])


@traced
def tril(m, k=0):
    m = lazy(m)
    return where(_tri_mask(m, operator.index(k), True), m, np.zeros(1, m.dtype))


@traced
def triu(m, k=0):
    m = lazy(m)
    return where(_tri_mask(m, operator.index(k), False), m, np.zeros(1, m.dtype))


@traced
def diagonal(a, offset=0, axis1=0, axis2=1):
    """A copy, where NumPy returns a read-only view: writing into it does not raise."""
    a = lazy(a)
    np.diagonal(proxy(a.shape), offset, axis1, axis2)  # NumPy's errors
    ax1, ax2 = normalize_axis_index(axis1, a.ndim), normalize_axis_index(axis2, a.ndim)
    m = moveaxis(a, (ax1, ax2), (-2, -1))
    r, c = m.shape[-2:]
    k = operator.index(offset)
    n = max(0, min(r + min(k, 0), c - max(k, 0)))
    i = np.arange(n)
    return m[..., i - min(k, 0), i + max(k, 0)]


@traced
def diag(v, k=0):
    v = lazy(v)
    if v.ndim == 2:
        return diagonal(v, k)
    if v.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    k = operator.index(k)
    n = v.shape[0]
    N = n + abs(k)
    padded = concatenate([v, np.zeros(abs(k), v.dtype)]) if k else v
    on = arange(N)[None, :] - arange(N)[:, None] == k
    vals = padded[:, None] if k >= 0 else padded[None, :]
    return where(on, vals, np.zeros(1, v.dtype))


@traced
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if out is not None:
        return fallback_call("trace", np.trace, (a, offset, axis1, axis2, dtype, out), {})
    return diagonal(a, offset, axis1, axis2).sum(-1, dtype=dtype)


# ------------------------------------------------------------------ contractions

@traced
def outer(a, b, out=None):
    if out is not None:
        return fallback_call("outer", np.outer, (a, b, out), {})
    return ravel(a)[:, None] * ravel(b)[None, :]


@traced
def tensordot(a, b, axes=2):
    a, b = lazy(a), lazy(b)
    try:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    except TypeError:
        n = operator.index(axes)
        axes_a, axes_b = list(range(-n, 0)), list(range(n))
    axes_a = [normalize_axis_index(x, a.ndim) for x in axes_a]
    axes_b = [normalize_axis_index(x, b.ndim) for x in axes_b]
    if len(axes_a) != len(axes_b) or any(a.shape[x] != b.shape[y] for x, y in zip(axes_a, axes_b)):
        raise ValueError("shape-mismatch for sum")
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [i for i in range(b.ndim) if i not in axes_b]
    k = math.prod(a.shape[i] for i in axes_a)
    # sizes, not -1: either side may be empty (Dask's 0-size metas)
    at = transpose(a, free_a + axes_a).reshape(math.prod(a.shape[i] for i in free_a), k)
    bt = transpose(b, axes_b + free_b).reshape(k, math.prod(b.shape[i] for i in free_b))
    return matmul(at, bt).reshape([a.shape[i] for i in free_a] + [b.shape[i] for i in free_b])


@traced
def inner(a, b):
    a, b = lazy(a), lazy(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise ValueError("shapes %s and %s not aligned: %d (dim %d) != %d (dim %d)" % (
            a.shape, b.shape, a.shape[-1], a.ndim - 1, b.shape[-1], b.ndim - 1))
    return tensordot(a, b, ([-1], [-1]))


@traced
def kron(a, b):
    a, b = lazy(a), lazy(b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    ai = a.reshape(tuple(x for s in sa for x in (s, 1)))
    bi = b.reshape(tuple(x for s in sb for x in (1, s)))
    return (ai * bi).reshape(tuple(x * y for x, y in zip(sa, sb)))


@traced
def take(a, indices, axis=None, out=None, mode="raise"):
    if out is not None or mode != "raise":
        return fallback_call("take", np.take, (a, indices, axis, out, mode), {})
    a = lazy(a)
    if axis is None:
        return ravel(a)[indices]
    return _take_axis(a, indices, normalize_axis_index(axis, a.ndim))


NAMES = ("atleast_3d dstack column_stack tile repeat roll meshgrid indices pad take_along_axis "
         "array_split split "
         "tri tril triu diagonal diag trace outer tensordot inner kron take").split()
