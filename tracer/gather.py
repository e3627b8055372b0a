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

import numpy as np

from . import graph as G
from .array import asarray_node, ndarray, proxy

_BASIC = (slice, type(None), type(Ellipsis))


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
    from .runtime import to_numpy
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


def _check(a: ndarray, key: tuple) -> None:
    """NumPy's errors for this key (out of bounds, shape mismatch, bad mask, bad dtype)."""
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
        pkey.append(slice(None) if isinstance(k, slice) else
                    np.zeros(k.shape, np.intp) if isinstance(k, ndarray) else k)
        ax += 1
    proxy(shape)[tuple(pkey)]


def gather(a: ndarray, key: tuple) -> ndarray | None:
    """a[key] for a key with integer arrays or masks; None for keys left to the fallback."""
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
    nodes = [G.broadcast(asarray_node(i), b) for i in idx]
    out = G._typed("gather", (x._node, *nodes),
                   (("axes", tuple(d for d, _, _ in adv)), ("front", front)))
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
    if tuple(shape) != out.shape:
        out = G.reshape(out, tuple(shape))
    return ndarray._from_node(out)
