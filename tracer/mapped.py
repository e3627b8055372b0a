"""Host inputs whose memory nothing in this process can write: a file mapped read-only (a
`numpy.memmap` of mode 'r', `numpy.load(..., mmap_mode='r')`) or a bytes object. A leaf holds
such an array itself and reads it when it is evaluated, where any other NumPy array is copied
when it is recorded (its owner may write into it later, and the op must see the value it had).
A writable mapping (modes 'r+', 'w+', 'c') is copied like those. The one caveat: the
file itself may change before the evaluation reads it (another process writes it, or a
writable mapping of the same file does); the evaluation then sees its new contents.

Under a memory budget (tracer/budgeted.py) the pages an evaluation reads from a mapped file
count as memory it takes: the process's resident set grows by each page touched. The budget
plans them with the rest and drops them once the evaluation has read them (madvise
MADV_DONTNEED: the pages stay in the OS page cache, and are read again from there if needed).
"""
from __future__ import annotations

import mmap
import weakref

import numpy as np
from numpy.lib.array_utils import byte_bounds

from tracer.cuda_kernels.threads import snapshot
from tracer.ir.catalogue import py_slice
from tracer.ir.node import Node, toposort
from tracer.ir.registry import VIEW_OPS
from . import graph as G

_PAGE = mmap.PAGESIZE


def _root(a: np.ndarray):
    """The object that holds a's memory: the end of its chain of bases."""
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


def _read_only_map(obj) -> bool:
    return isinstance(obj, mmap.mmap) and memoryview(obj).readonly


def frozen(a) -> bool:
    """Whether a is a C-contiguous, aligned array over memory no one can write through this
    process: a read-only file mapping, or bytes."""
    if not isinstance(a, np.ndarray) or a.base is None:  # (quick: an array owning its data)
        return False
    flags = a.flags
    if flags.writeable or not flags.c_contiguous or not flags.aligned:
        return False
    root = _root(a)
    return isinstance(root, bytes) or _read_only_map(root)


def held(a, dtype=None) -> np.ndarray:
    """a's values as an array a leaf may hold: a (as a plain ndarray) where no one can write
    its memory and no conversion is asked, else a copy (np.array(a, dtype, copy=True))."""
    if frozen(a) and (dtype is None or np.dtype(dtype) == a.dtype):
        return a if type(a) is np.ndarray else a.view(np.ndarray)
    return snapshot(a, dtype)


# (id of the memory's holder, address, shape, strides, dtype) -> the leaf over that memory
_LEAVES: "weakref.WeakValueDictionary[tuple, Node]" = weakref.WeakValueDictionary()


def leaf(a: np.ndarray) -> Node:
    """The input leaf holding a (from `held`). A frozen array's is one leaf per region of
    memory, however often it is recorded: `np.max(mm) + np.sum(mm)` reads one value, which a
    split under a budget follows in both. (The leaf holds the memory's holder alive:
    its id names it while the entry lives.)"""
    if not frozen(a):
        return G.leaf(a)
    key = (id(_root(a)), a.ctypes.data, a.shape, a.strides, a.dtype.str)
    n = _LEAVES.get(key)
    if n is None:
        n = _LEAVES[key] = G.leaf(a)
    return n


def file_array(n: Node) -> np.ndarray | None:
    """The array of an input leaf over a read-only file mapping, or None."""
    if n.op != "input":
        return None
    v = getattr(n.attrs[0][1], "host", None)  # (a cluster's Remote sets no host)
    return v if v is not None and not v.flags.writeable and _read_only_map(_root(v)) else None


def reads(roots: list[Node]) -> list[np.ndarray]:
    """The parts of read-only mapped files that evaluating roots reads (views): of each mapped
    leaf, the slices taken of it where only slices of it are read, else the whole leaf. A view
    of a leaf is read by what consumes it (a root that is one is the leaf's own memory)."""
    parts: dict[int, list] = {}
    for n in toposort(roots):
        if n.op in VIEW_OPS:
            continue
        for i in n.inputs:
            base = i
            while base.op in VIEW_OPS:
                base = base.inputs[0]
            v = file_array(base)
            if v is None:
                continue
            got = parts.setdefault(id(base), [v, []])
            if i.op == "slice" and i.inputs[0] is base and got[1] is not None:
                got[1].append(v[tuple(py_slice(*s) for s in i.attr("slices"))])
            else:
                got[1] = None
    return [p for whole, sl in parts.values() for p in ([whole] if sl is None else sl)]


def span(parts: list[np.ndarray]) -> int:
    """The bytes of the file pages the parts touch (overlaps count twice)."""
    total = 0
    for p in parts:
        if p.size:
            lo, hi = byte_bounds(p)
            total += (-(-hi // _PAGE) - lo // _PAGE) * _PAGE
    return total


def release(parts: list[np.ndarray]) -> None:
    """Drop the pages of these parts from the process's resident set (they stay in the OS's
    page cache). Pages are whole: a neighbour's bytes on the edge pages are dropped too, and
    read again from the cache if touched."""
    if not hasattr(mmap, "MADV_DONTNEED"):
        return
    for p in parts:
        if not p.size:
            continue
        m = _root(p)
        base = np.frombuffer(m, np.uint8, 1).ctypes.data
        lo, hi = byte_bounds(p)
        start = (lo - base) // _PAGE * _PAGE
        m.madvise(mmap.MADV_DONTNEED, start, hi - base - start)
