"""Scatters on the cpu backend, into the operand itself where buffer assignment allows, else
into a pooled copy of it: NumPy's indexing for `x[key] = v`, and for `add.at` along the first
axis a compiled loop (NumPy's `ufunc.at` is a slow generic path), in index order, so
every sum is NumPy's. Many updates into few bins split over threads into private bins that
are added in thread order afterwards: exact for integers, a different (still deterministic)
summation order for float64; float32 always runs in NumPy's order.

The compiled loops are a generated module in the kernel cache like the fusion kernels, so
Numba's disk cache of them lies under TRACER_CACHE_DIR (and a read-only cache compiles them in
memory), never in the installed package.
"""
from __future__ import annotations

import functools

import numba
import numpy as np

from tracer.ir.node import Node
from tracer.ir.catalogue import scatter_key
from ..compiler import import_module, writable, write_module
from ..emit import key_hash

PRIVATE_MIN_UPDATES = 1 << 16   # below this, threads cost more than they save
PRIVATE_MAX_BYTES = 64 << 20    # private bins of all threads together


SOURCE = '''import numpy as np
from numba import njit, prange


@njit(cache=_CACHE)
def _add_rows(out, idx, v):
    # out[idx[q]] += v[q] in index order; returns the first q whose index is out of bounds
    # (nothing is added from there on), or -1
    n, m = out.shape
    for q in range(idx.shape[0]):
        i = idx[q]
        if i < -n or i >= n:
            return q
        if i < 0:
            i += n
        if m == 1:
            out[i, 0] += v[q, 0]
        else:
            for j in range(m):
                out[i, j] += v[q, j]
    return -1


@njit(parallel=True, cache=_CACHE)
def _add_rows_private(out, idx, v, nt):
    # as _add_rows, each thread adding a contiguous part of the updates into private bins,
    # then the bins added into out in thread order
    n, m = out.shape
    k = idx.shape[0]
    parts = np.full((nt, n, m), -0.0, out.dtype)  # -0.0 + x is x, -0.0 included
    bad = np.full(nt, k, np.int64)
    chunk = (k + nt - 1) // nt
    for t in prange(nt):
        for q in range(t * chunk, min(k, (t + 1) * chunk)):
            i = idx[q]
            if i < -n or i >= n:
                bad[t] = q
                break
            if i < 0:
                i += n
            for j in range(m):  # (one element per row takes _add_private_1d)
                parts[t, i, j] += v[q, j]
    first = bad.min()
    if first < k:
        return first
    for i in prange(n):
        for t in range(nt):
            for j in range(m):
                out[i, j] += parts[t, i, j]
    return -1


@njit(parallel=True, cache=_CACHE)
def _add_private_1d(out, idx, v, nt):
    # _add_rows_private for one element per row (the common `add.at(bins, idx, vals)`)
    n = out.shape[0]
    k = idx.shape[0]
    parts = np.full((nt, n), -0.0, out.dtype)  # (see _add_rows_private)
    bad = np.full(nt, k, np.int64)
    chunk = (k + nt - 1) // nt
    for t in prange(nt):
        p = parts[t]
        for q in range(t * chunk, min(k, (t + 1) * chunk)):
            i = idx[q]
            if i < -n or i >= n:
                bad[t] = q
                break
            if i < 0:
                i += n
            p[i] += v[q]
    first = bad.min()
    if first < k:
        return first
    for i in prange(n):
        for t in range(nt):
            out[i] += parts[t, i]
    return -1
'''


@functools.lru_cache(maxsize=None)
def _loops():
    """The compiled loops' module, written into the kernel cache once and imported."""
    name = f"scatter_cpu_{key_hash(SOURCE)}"
    return import_module(name, write_module(name, SOURCE), {"_CACHE": writable()})


def _fast_add(n: Node, x, idx, v) -> bool:
    """add.at along axis 0 by one index array, values already in x's dtype."""
    return n.attr("mode") == "add" and n.attr("axes") == (0,) and v.dtype == x.dtype and \
        x.dtype.kind in "iuf" and x.dtype.itemsize >= 4 and idx.dtype.kind in "iu" and x.ndim >= 1


def run_scatter(n: Node, args: list, empty) -> np.ndarray:
    """`empty(shape, dtype)` gives the result array, already holding x's values (x itself when
    the update runs in place, else a copy)."""
    x, *idx, v = args
    mode = n.attr("mode")
    out = empty(x.shape, x.dtype)
    if mode != "set" and len(idx) == 1 and _fast_add(n, x, idx[0], v):
        _add_first_axis(out, idx[0], v)
        return out
    key, v = scatter_key(x.ndim, idx, v, n.attr("axes"), n.attr("front"))
    if mode == "set":
        out[key] = v
    else:
        getattr(np, mode).at(out, key, v)
    return out


def _add_first_axis(out: np.ndarray, idx: np.ndarray, v: np.ndarray) -> None:
    ix = np.ascontiguousarray(idx).reshape(-1).astype(np.int64, copy=False)
    rows = out.shape[0]
    o2 = out.reshape(rows, -1)
    v2 = np.ascontiguousarray(v).reshape(ix.shape[0], o2.shape[1])
    nt = numba.get_num_threads()
    if nt > 1 and ix.shape[0] >= PRIVATE_MIN_UPDATES and out.dtype != np.float32 and \
            nt * out.nbytes <= PRIVATE_MAX_BYTES and out.size > 0:
        bad = _loops()._add_private_1d(o2[:, 0], ix, v2[:, 0], nt) if o2.shape[1] == 1 else \
            _loops()._add_rows_private(o2, ix, v2, nt)
    else:
        bad = _loops()._add_rows(o2, ix, v2)
    if bad >= 0:
        raise IndexError(f"index {ix[bad]} is out of bounds for axis 0 with size {rows}")
