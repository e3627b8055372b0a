"""Lazy versions of NumPy's array creation functions: array and asarray, full, zeros, ones and
empty (and their _like forms), arange, linspace, eye, identity."""
from __future__ import annotations

import math
import operator
import sys

import numpy as np

from tracer.cuda_kernels.threads import snapshot

from . import graph as G
from .array import lazy, ndarray
from .fallback import FOREIGN_KINDS
from .interchange import from_device
from .mapped import frozen, held, leaf
from .recording import traced
from .store import Var
from .view import laid_out
from .write import host_values


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) and not hasattr(shape, "__iter__"):
        raise TypeError(f"expected a sequence of integers or a single integer, got '{shape}'")
    shape = tuple(operator.index(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("negative dimensions are not allowed")
    return shape


def _check_device(device) -> None:
    """The array API's device=: None and "cpu" are NumPy's only device; anything else raises
    NumPy's own error."""
    if device is not None and not (type(device) is str and device == "cpu"):
        np.empty(0, device=device)


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
    _check_device(device)
    return array(a, dtype, copy=copy, order=order)


def asanyarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    _check_device(device)
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
    """np.array of host data: a lazy leaf holding a copy (or the array itself where no one can
    write it: a read-only memmap, tracer/mapped.py), or NumPy's own array where tracer does
    not record the data (strings, objects, records, dates), subok keeps a NumPy subclass, or
    copy=False forbids the copy a lazy leaf is."""
    if dtype is None and not ndmin and not isinstance(obj, ndarray) and \
            hasattr(obj, "__cuda_array_interface__"):
        out = from_device(obj, copy)  # a device array on the cuda backend: no host copy
        if out is not None:
            return out
    obj = host_values(obj)
    by_numpy = copy is False or isinstance(obj, np.ndarray) and (
        obj.dtype.kind in FOREIGN_KINDS or subok and type(obj) is not np.ndarray)
    if not by_numpy and dtype is not None and frozen(obj) and np.dtype(dtype) != obj.dtype \
            and np.dtype(dtype).kind not in FOREIGN_KINDS:  # a lazy conversion, not a copy now
        return array(_from_host(obj, None, copy, order, subok, ndmin), dtype, copy=None,
                     order=order)
    if by_numpy:  # NumPy's own array, aliasing and errors (copy=False where a copy is needed)
        h = np.array(obj, dtype, copy=copy, order=order, subok=subok, ndmin=ndmin)
    else:
        h = held(obj, dtype)
    if copy is False or h.dtype.kind in FOREIGN_KINDS or type(h) is not np.ndarray:
        return h if by_numpy else np.array(h, copy=None, order=order, ndmin=ndmin)
    out = laid_out(ndarray(Var(G.leaf(snapshot(h)) if by_numpy else leaf(h))), order)
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
    _check_device(device)
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
    return full(shape, 0, dtype if dtype is not None else float, order, device=device)


def ones(shape, dtype=None, order="C", *, device=None, like=None):
    return full(shape, 1, dtype if dtype is not None else float, order, device=device)


def empty(shape, dtype=float, order="C", *, device=None, like=None):
    """Like zeros: a lazy empty array costs nothing until written, and zero is a safe value."""
    return full(shape, 0, dtype if dtype is not None else float, order, device=device)


def _like(fn, a, dtype, shape, *args, order="K"):
    a = lazy(a)
    return laid_out(fn(a.shape if shape is None else shape, *args,
                       dtype=a.dtype if dtype is None else dtype), order, a)


def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_device(device)
    return _like(zeros, a, dtype, shape, order=order)


def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_device(device)
    return _like(ones, a, dtype, shape, order=order)


def empty_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_device(device)
    return _like(empty, a, dtype, shape, order=order)


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    _check_device(device)
    return _like(full, a, dtype, shape, fill_value, order=order)


def arange(*args, dtype=None, device=None, like=None, **kw):
    _check_device(device)
    args = [np.asarray(x).item() if isinstance(x, ndarray) else x for x in args]
    cluster = sys.modules.get("tracer.dask_cluster")  # (no cluster before it is loaded)
    remote = None if cluster is None or kw else cluster.arange(tuple(args), dtype)
    if remote is not None:
        return ndarray(Var(G.leaf_of(remote)))
    return ndarray(Var(G.leaf(np.arange(*args, dtype=dtype, **kw))))


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    _check_device(device)
    cluster = sys.modules.get("tracer.dask_cluster")  # (no cluster before it is loaded)
    remote = None if cluster is None else cluster.linspace(start, stop, num, endpoint, dtype, axis)
    if remote is not None:
        x = ndarray(Var(G.leaf_of(remote[0])))
        return (x, remote[1]) if retstep else x
    r = np.linspace(host_values(start), host_values(stop), num, endpoint, retstep, dtype, axis)
    if retstep:
        return ndarray(Var(G.leaf(r[0]))), r[1]
    return ndarray(Var(G.leaf(r)))


def eye(N, M=None, k=0, dtype=float, order="C", *, device=None, like=None):
    _check_device(device)
    return ndarray(Var(G.leaf(np.eye(N, M, k, dtype))))


def identity(n, dtype=None, *, like=None):
    return ndarray(Var(G.leaf(np.identity(n, dtype))))


NAMES = ("array asarray asanyarray ascontiguousarray full zeros ones empty zeros_like "
         "ones_like empty_like full_like arange linspace eye identity").split()
