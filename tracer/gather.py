"""Integer-array (advanced) indexing as a lazy `gather` node, with NumPy's rules.

A key mixing integer arrays (NumPy arrays, lists, lazy arrays) with ints, slices, None and
Ellipsis becomes: a view taking the slices, one `gather` of the indexed axes by the index
arrays broadcast to one shape B, then a reshape adding the None axes. The B axes replace the
indexed axes where those stand next to each other in the key, else they come first, as NumPy
places them. Ints beside arrays are 0-d index arrays, as in NumPy.

Boolean masks depend on data for their result shape: a mask is evaluated (if lazy), turned into
its `nonzero()` index arrays, and indexing continues lazily from there.

Errors are NumPy's, raised at the user's line while tracing: the key is also applied to a
zero-byte proxy of the array (slice axes shrunk to 1, so the proxy's result stays as small as
the indices), with lazy index arrays standing in as zeros. An index computed lazily is checked
when the gather runs (NumPy's IndexError, raised from evaluation).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tracer.ir.registry import OPS
from . import graph as G
from .array import asarray_node, ndarray
from .recording import proxy, shape_str, traced
from .fallback import fallback_call
from .store import to_numpy
from .write import assign_full, known_values, value_node

_SKIP = object()


def _entry(k):
    """A key entry as NumPy reads it: arrays stay (lazy or host), sequences become arrays."""
    if isinstance(k, (bool, np.bool_)):
        return _SKIP  # a scalar bool index adds an axis: left to the fallback
    if isinstance(k, (list, tuple)):
        arr = np.asarray(k)
        return arr.astype(np.intp) if arr.size == 0 else arr  # NumPy: [] indexes as integers
    return k


def _is_mask(k) -> bool:
    return isinstance(k, (np.ndarray, ndarray)) and k.dtype == bool


def _expand(key: tuple, ndim: int) -> list | None:
    """[(entry, key position)]: Ellipsis expanded to slices (at its own position: it separates
    advanced indices even when it stands for no axis, as in NumPy), trailing slices added,
    masks as ("mask", host array). None when the key is left to the fallback."""
    out = [_entry(k) for k in key]
    if any(k is _SKIP for k in out) or sum(1 for k in out if k is Ellipsis) > 1 or \
            any(_is_mask(k) and k.ndim == 0 for k in out):
        return None
    used = sum(0 if k is None or k is Ellipsis else k.ndim if _is_mask(k) else 1 for k in out)
    if used > ndim:  # NumPy's "too many indices" error
        proxy((0,) * ndim)[tuple(np.zeros(k.shape, np.intp) if isinstance(k, ndarray) else k
                                 for k in out)]
    res = []
    for pos, k in enumerate(out):
        if k is Ellipsis:
            res += [(slice(None), pos)] * (ndim - used)
        elif _is_mask(k):
            res.append((("mask", to_numpy(k) if isinstance(k, ndarray) else k), pos))
        else:
            res.append((k, pos))
    if not any(k is Ellipsis for k in out):
        res += [(slice(None), len(out))] * (ndim - used)
    return res


def _known(k):
    """A lazy index array's values where they are already known, else the array itself."""
    v = known_values(k._node) if isinstance(k, ndarray) else None
    return k if v is None else v


def _check(a: ndarray, key: tuple) -> None:
    """NumPy's errors for this key (out of bounds, shape mismatch, bad mask, bad dtype).
    Lazy index arrays stand in as zeros; where all index arrays are lazy, their shapes are
    checked here and they stand in as 0-d zeros, so the proxy does no per-index work."""
    key = [(_known(k), pos) for k, pos in key]  # realized indices are checked now
    lazy = [k.shape for k, _ in key if isinstance(k, ndarray)]
    host = any(isinstance(k, (np.ndarray, tuple)) for k, _ in key)
    if lazy and not host:
        try:
            np.broadcast_shapes(*lazy)
        except ValueError:
            raise IndexError("shape mismatch: indexing arrays could not be broadcast together "
                             f"with shapes {' '.join(shape_str(s) for s in lazy)} ") from None
    shape, pkey, ax = [], [], 0
    for k, _ in key:
        if k is None:
            pkey.append(None)
            continue
        if isinstance(k, tuple):  # a mask over k[1].ndim axes
            shape += a.shape[ax:ax + k[1].ndim]
            ax += k[1].ndim
            pkey.append(k[1])
            continue
        shape.append(1 if isinstance(k, slice) else a.shape[ax])
        if isinstance(k, ndarray):
            k = np.broadcast_to(np.intp(0), k.shape) if host else np.intp(0)
        pkey.append(slice(None) if isinstance(k, slice) else k)
        ax += 1
    proxy(shape)[tuple(pkey)]


class _Indexed(NamedTuple):
    """A key resolved against an array: the view `x` taking its slices, the index nodes
    (broadcast to one shape), the gather attributes, and the result shape with None axes."""
    x: ndarray
    nodes: list
    attrs: tuple
    shape: tuple


def _resolve(a: ndarray, key: tuple) -> _Indexed | None:
    key = _expand(key, a.ndim)
    if key is None:
        return None
    if any(isinstance(k, ndarray) and k.dtype.kind not in "iu" for k, _ in key):
        return None  # a lazy float index: NumPy's TypeError comes from the fallback
    _check(a, key)
    # per key entry: ("none",), ("slice", length) or ("adv",); adv: (axis, index, position)
    slices, adv, places, ax = [], [], [], 0
    for k, pos in key:
        if k is None:
            places.append(("none",))
        elif isinstance(k, slice):
            slices.append(k)
            places.append(("slice", len(range(*k.indices(a.shape[ax])))))
            ax += 1
        else:
            parts = k[1].nonzero() if isinstance(k, tuple) else (k,)
            for i in parts:
                adv.append((ax, i, pos))
                slices.append(slice(None))
                ax += 1
            places.append(("adv",))
    positions = sorted({p for _, _, p in adv})
    front = positions != list(range(positions[0], positions[-1] + 1))
    idx = [k if isinstance(k, ndarray) else np.asarray(k) for _, k, _ in adv]
    b = tuple(np.broadcast_shapes(*(i.shape for i in idx)))
    x = a if all(k == slice(None) for k in slices) else a[tuple(slices)]
    # one-element host indices become constants, which the scatter expander can read
    nodes = [G.broadcast(G.const(i.reshape(())[()], i.dtype) if isinstance(i, np.ndarray) and
                         i.size == 1 else asarray_node(i), b) for i in idx]
    shape: list[int] = list(b) if front else []
    placed = front
    for p in places:
        if p[0] == "none":
            shape.append(1)
        elif p[0] == "slice":
            shape.append(p[1])
        elif not placed:
            shape += b
            placed = True
    attrs = (("axes", tuple(d for d, _, _ in adv)), ("front", front))
    return _Indexed(x, nodes, attrs, tuple(shape))


def gather(a: ndarray, key: tuple) -> ndarray | None:
    """a[key] for a key with integer arrays or masks; None for keys left to the fallback."""
    r = _resolve(a, key)
    if r is None:
        return None
    out = G._typed("gather", (r.x._node, *r.nodes), r.attrs)
    if r.shape != out.shape:
        out = G.reshape(out, r.shape)
    return ndarray._from_node(out)


def scatter(a: ndarray, key: tuple, value, mode: str = "set") -> bool:
    """a[key] = value (mode "set") or ufunc.at(a, key, value) (mode: the ufunc's name), as a
    write of a `scatter` node through a's view. False for keys left to the fallback. The
    value keeps its dtype (NumPy casts it in the scatter); a Python scalar is first given the
    dtype NumPy's loop reads it in."""
    r = _resolve(a, key)
    if r is None:
        return False
    vshape = tuple(value.shape) if isinstance(value, (ndarray, np.ndarray)) else np.shape(value)
    given = vshape
    if mode == "set":
        _check_mask_value(a, key, len(vshape))
    # a write drops leading unit axes (ufunc.at does not), and any leading axes of an empty
    # value (NumPy: a[[]] = zeros((3, 0)) writes nothing)
    while mode == "set" and len(vshape) > len(r.shape) and (vshape[0] == 1 or 0 in vshape):
        vshape = vshape[1:]
    try:
        ok = tuple(np.broadcast_shapes(vshape, r.shape)) == r.shape
    except ValueError:
        ok = False
    if not ok and mode != "set":
        raise ValueError("array is not broadcastable to correct shape")  # NumPy's ufunc.at
    if not ok:
        raise ValueError(f"shape mismatch: value array of shape {shape_str(given)} could not "
                         f"be broadcast to indexing result of shape {shape_str(r.shape)}")
    if mode == "set":
        if len(vshape) < len(given) and 0 in given:  # an empty value: only its shape changes
            value = (value if isinstance(value, (ndarray, np.ndarray)) else
                     np.asarray(value)).reshape(vshape)
        target = G._typed("gather", (r.x._node, *r.nodes), r.attrs)
        if target.shape != r.shape:  # None axes of the key
            target = G.reshape(target, r.shape)
        v = value_node(value, ndarray._from_node(target))
    else:
        v = value._node if isinstance(value, ndarray) else asarray_node(value)
        while v.ndim > len(r.shape):
            v = G.reshape(v, v.shape[1:])
        v = G.broadcast(v, r.shape)
    gshape = _gather_shape(r)
    if v.shape != gshape:
        v = G.reshape(v, gshape)
    new = G._typed("scatter", (r.x._node, *r.nodes, v), r.attrs + (("mode", mode),))
    assign_full(r.x, new)
    return True


def _check_mask_value(a: ndarray, key: tuple, vndim: int) -> None:
    """NumPy's error for a[mask] = v with one mask over all axes and a value of ndim > 1."""
    if len(key) == 1 and _is_mask(key[0]) and key[0].shape == a.shape and vndim > 1:
        raise TypeError("NumPy boolean array indexing assignment requires a 0 or 1-dimensional "
                        f"input, input has {vndim} dimensions")


def _gather_shape(r: _Indexed) -> tuple:
    return OPS["gather"].shape_rule([r.x.shape] + [n.shape for n in r.nodes], dict(r.attrs))


@traced
def ufunc_at(uf: np.ufunc, a, indices, b) -> bool:
    """uf.at(a, indices, b) as a scatter into lazy `a`; False where the fallback runs NumPy
    (unary ufuncs, dtypes NumPy refuses, keys this module leaves)."""
    if not isinstance(a, ndarray) or uf.nin != 2 or b is None:
        return False
    if not isinstance(b, (ndarray, np.ndarray, np.generic)):
        b = np.asarray(b)  # NumPy's ufunc.at reads Python scalars as arrays too (not weak)
    if b.dtype.kind == "O":
        return False
    try:
        loop = uf.resolve_dtypes((a.dtype, b.dtype, None))
    except (TypeError, ValueError):
        return False
    if loop[0] != a.dtype and not np.can_cast(a.dtype, loop[0], "same_kind") or \
            not np.can_cast(loop[2], a.dtype, "same_kind"):
        return False
    key = indices if isinstance(indices, tuple) else (indices,)
    if not a._view.writeable:
        raise ValueError("output array is read-only")
    return scatter(a, key, b, uf.__name__)


def ufunc_at_or_numpy(uf: np.ufunc, a, indices, b=None) -> None:
    """NumPy's unbuffered in-place `uf.at(a, indices, b)`: lazy (a scatter) where ufunc_at
    can, otherwise NumPy runs it (a counted fallback)."""
    if not ufunc_at(uf, a, indices, b):
        args = (a, indices) if b is None else (a, indices, b)
        fallback_call(f"{uf.__name__}.at", uf.at, args, {})
