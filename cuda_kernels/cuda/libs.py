"""Dots, sorts, searches and scans on the device through CuPy: matmul by cuBLAS, sort, argsort,
partition and argpartition by Thrust's stable sorts (CUB radix sort for 1-D numbers),
searchsorted by CuPy's binary-search kernel, cumsum and cumprod by CuPy's scans.

Why CuPy. It is the one well-kept NVIDIA-ecosystem library that covers all three families,
takes our memory without a copy (a `cupy.ndarray` over an `UnownedMemory` pointer), runs on
our stream (`cupy.cuda.Stream.from_external(backend.stream())`: cuBLAS and Thrust are enqueued
on CuPy's current stream, nothing synchronizes) and imports in ~0.2 s on a machine without a GPU
(its first device call then raises, which `library()` turns into "not usable"). The others
each cover part: nvmath-python has cuBLASLt matmul with epilogues but accepts only NumPy,
CuPy and torch tensors (so it would need CuPy anyway), and its epilogues are cuBLASLt's, not
NumPy's: RELU is documented as max(x, 0), which on the device (fmax) would turn a NaN into 0
where `np.maximum(x, 0)` keeps it (not verifiable without a GPU), and BIAS adds a length-M
vector along the columns, `A @ B + b[:, None]`; cuda-cccl (cuda.compute) has CUB's sorts, scans
and segmented reductions but no BLAS. One dependency instead of two.

NumPy's semantics
- matmul: only float32/float64/complex64/complex128 results whose operands already have that
  dtype (mixed operands would make CuPy cast with copies); float32 computes in float32, no
  TF32 (CuPy's default compute type; a user asks for TF32 with CUPY_TF32=1). Transposed
  operands (`ta`, `tb`) are transposed views: cuBLAS reads them with its transpose flags.
- sort, argsort: CuPy's sorts are stable, so argsort ties come out by index (NumPy's
  `kind="stable"`, and what its default gives on small arrays). NaNs go last: CuPy compares
  with a NaN-aware `<` except on 1-D floats, where it sorts by CUB radix on the bit pattern,
  which puts a NaN with its sign bit set (x86's inf - inf, `-np.nan`) first; `nan_last`
  rewrites every NaN as the positive quiet NaN before the sort (so a sorted result's NaNs
  differ from NumPy's only in sign and payload bits). Radix sort treats -0.0 as +0.0, as
  NumPy's `<` does.
- partition, argpartition: a sort (nan_last first) is a partition for every kth: NumPy promises
  only the kth elements in their sorted places and each side's values; the order within a side
  is introselect's and differs (argpartition: a stable argsort, ties by index).
- searchsorted: a and v compared in NumPy's common dtype (`promote_types`: int64 with uint64
  in float64), cast before the call, as CuPy's kernel would mix them by C++'s rules; its
  comparisons put NaN last, as NumPy's do. With a sorter, a is gathered through it first; a
  sorter index out of range (NumPy raises where its search reads one) sends the op to the
  host, which raises as NumPy does: the check reads one count back (a host wait). Complex
  values stay on the host (NumPy's NaN order of complex numbers). For an `a` that is not
  sorted NumPy defines no answer, and the two binary searches' answers can differ.
- cumsum, cumprod: integer and bool scans only, in the dtype NumPy's rules chose (the node's
  `dtype` attribute); they are exact (wrap-around included). Float and complex scans keep
  NumPy's left-to-right loop (the host round trip): a parallel scan rounds, and overflows to
  inf, elsewhere.

Memory: results go to tracer's pool and CuPy writes them in place; the scratch CuPy allocates
meanwhile comes from tracer's pool too (`_scratch`), so nothing stays cached in CuPy's pool.

Everything else (the simulator, CuPy missing or no GPU, other dtypes) runs today's path: the
tiled matmul kernel below, or the host round trip for sorts and scans; so does an op the
library raised on (warned once, e.g. CuPy installed without its cuBLAS). `stats()` counts
`library_calls` (ran by the library) and `library_fallbacks` (could have, did not).
"""
from __future__ import annotations

import math as _math

import numpy as np

from tracer.ir.config import CONFIG
from tracer.ir.node import Node
from tracer.ir.stats import STATS
from ..compiler import warn_once
from .codegen import TILE
from .memory import cstrides, interface

OPS = frozenset({"matmul", "sort", "argsort", "partition", "argpartition", "searchsorted",
                 "cumsum", "cumprod"})
_BLAS = frozenset(np.dtype(d) for d in ("float32", "float64", "complex64", "complex128"))
_NUMBERS = frozenset(np.dtype(d) for d in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64", "complex64", "complex128"))
_LOADED: list = []  # [the library module or None], once tried
_BROKEN: dict = {}  # op -> the error the library raised on it (it is not asked again)
_STREAMS: dict = {}  # id(our stream) -> (it, the cupy.cuda.Stream over it)


def library():
    """CuPy, or None where it is not installed or sees no GPU (tried once per process)."""
    if not _LOADED:
        try:
            import cupy  # lazy: optional (the cuda12/cuda13 extras)
            ok = cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:  # noqa: BLE001 - ImportError, or CUDARuntimeError without a driver
            ok = False
        _LOADED.append(cupy if ok else None)
    return _LOADED[0]


def usable() -> bool:
    """Whether library ops go to the library: a real device (never the simulator, whose
    arrays live in host memory) and the library importable there."""
    return not CONFIG.cuda_sim and library() is not None


def supports(n: Node) -> bool:
    """Whether the library computes node n with NumPy's result (see the module docstring)."""
    if n.op in _BROKEN:
        return False
    if n.op == "matmul":  # (an empty operand: our kernel writes the zeros)
        return n.dtype in _BLAS and all(i.dtype == n.dtype and i.size for i in n.inputs)
    if n.op in ("cumsum", "cumprod") and n.dtype.kind in "fc":
        return False  # a parallel scan's order is not NumPy's (module docstring)
    if n.op == "searchsorted":
        a, v, *s = n.inputs
        real = all(x.dtype in _NUMBERS and x.dtype.kind != "c" for x in (a, v))
        return real and all(x.dtype.kind in "iu" for x in s)
    return n.op in OPS and n.inputs[0].dtype in _NUMBERS and n.dtype in _NUMBERS


def run(backend, n: Node, args: list):
    """n's value computed by the library on the backend's stream, or None (counted) where it
    cannot: the caller then runs its own kernel or the host round trip."""
    if n.op not in OPS:
        return None
    if not (usable() and supports(n)):
        STATS.library_fallbacks += 1
        return None
    cp = library()
    xs = [backend.contiguous(backend._dev(a)) for a in args]
    out = backend.empty(n.shape, n.dtype)
    if out.size:
        dev = backend.device_id()
        try:
            with cp.cuda.Device(dev), _stream(cp, backend.stream()), \
                    cp.cuda.using_allocator(lambda nbytes: _scratch(cp, backend, nbytes, dev)):
                ins = [as_cupy(cp, x, dev) for x in xs]
                _CALLS[n.op](cp, n, ins, as_cupy(cp, out, dev))
        except Declined:  # this call only: the host path gives NumPy's answer or error
            backend.release(out)
            STATS.library_fallbacks += 1
            return None
        except Exception as e:  # noqa: BLE001 - e.g. CuPy without its cuBLAS or NVRTC
            # inputs are untouched and `out` is new: today's path can still compute n
            _BROKEN[n.op] = e
            warn_once("library " + n.op, f"CuPy could not run {n.op} ({type(e).__name__}: "
                      f"{e}); it runs on tracer's own path from now on")
            backend.release(out)
            STATS.library_fallbacks += 1
            return None
    STATS.library_calls += 1
    return out


def as_cupy(cp, x, dev: int):
    """Device array x as a cupy.ndarray over the same memory: no copy, no wait (the CUDA
    array interface route would make CuPy synchronize on the stream it names)."""
    d = interface(x, None)
    item = x.dtype.itemsize
    shape = tuple(d["shape"])
    strides = d["strides"] or tuple(s * item for s in cstrides(shape))
    span = sum((k - 1) * s for k, s in zip(shape, strides)) + item if x.size else 0
    mem = cp.cuda.UnownedMemory(d["data"][0], span, x, dev)
    return cp.ndarray(shape, x.dtype, cp.cuda.MemoryPointer(mem, 0), strides)


class Declined(Exception):
    """The library's answer would not be NumPy's for this call's data (e.g. a sorter index out
    of range): the host path runs it, and the op stays the library's for later calls."""


class _Lease:
    """Owns a pool block CuPy is using; gives it back to the pool when CuPy lets go of it (the
    stream orders its later users after CuPy's kernels, as for every pool block)."""

    __slots__ = ("backend", "block")

    def __init__(self, backend, block):
        self.backend, self.block = backend, block

    def __del__(self):
        self.backend.release(self.block)


def _scratch(cp, backend, nbytes: int, dev: int):
    """CuPy's own allocations while it runs one of our ops (Thrust's temporary storage,
    argsort's keys and indices) from tracer's pool: counted and reused there, where CuPy's
    pool would keep them, unseen by the memory budget, after the op."""
    block = backend.empty((nbytes,), np.uint8)
    mem = cp.cuda.UnownedMemory(interface(block, None)["data"][0], nbytes, _Lease(backend, block),
                                dev)
    return cp.cuda.MemoryPointer(mem, 0)


def _stream(cp, stream):
    """The backend's stream as a CuPy stream (the CUDA stream protocol, no new stream)."""
    entry = _STREAMS.get(id(stream))
    if entry is None:  # (the entry keeps the stream alive, so its id stays its own)
        entry = _STREAMS[id(stream)] = (stream, cp.cuda.Stream.from_external(stream))
    return entry[1]


def nan_last(xp, a) -> None:
    """Every NaN of float array a (in place) made the positive quiet NaN, which a radix sort
    puts after +inf: NumPy's order. (Works for NumPy and CuPy alike.)"""
    xp.copyto(a, a.dtype.type(np.nan), where=xp.isnan(a))


def _matmul(cp, n: Node, ins, out) -> None:
    a, b = ins
    a = a.swapaxes(-1, -2) if n.attr("ta", False) else a
    b = b.swapaxes(-1, -2) if n.attr("tb", False) else b
    cp.matmul(a, b, out=out)


def _sort(cp, n: Node, ins, out) -> None:
    cp.copyto(out, ins[0])
    if out.dtype.kind == "f":
        nan_last(cp, out)
    out.sort(axis=n.attr("axis"))


def _argsort(cp, n: Node, ins, out) -> None:
    keys = ins[0]
    if keys.dtype.kind == "f":
        keys = keys.copy()
        nan_last(cp, keys)
    cp.copyto(out, cp.argsort(keys, axis=n.attr("axis")))


def searchsorted(xp, n: Node, ins, out) -> None:
    """out = np.searchsorted(a, v, side, sorter) by xp (CuPy; NumPy in the tests), or Declined.
    See the module docstring for the dtype and the sorter."""
    a, v, *sorter = ins
    if sorter:
        s = sorter[0]
        if s.size:
            # the count is read back (8 bytes): the stream drains first
            STATS.host_waits, STATS.d2h_copies, STATS.d2h_bytes = \
                STATS.host_waits + 1, STATS.d2h_copies + 1, STATS.d2h_bytes + 8
            if int(xp.count_nonzero((s < 0) | (s >= a.size))):
                raise Declined("sorter index out of range")
        a = a.take(s)
    dt = np.promote_types(a.dtype, v.dtype)
    xp.copyto(out, xp.searchsorted(a.astype(dt, copy=False), v.astype(dt, copy=False),
                                   side=n.attr("side")))


def _scan(cp, n: Node, ins, out) -> None:
    getattr(cp, n.op)(ins[0], axis=n.attr("axis"), dtype=n.dtype, out=out)


# (a sort is a partition for every kth: module docstring)
_CALLS = {"matmul": _matmul, "sort": _sort, "argsort": _argsort, "partition": _sort,
          "argpartition": _argsort, "searchsorted": searchsorted, "cumsum": _scan,
          "cumprod": _scan}


# ---------------------------------------------------------------- our own matmul kernel

def _operand3(backend, x, batch: tuple, nbatch: int):
    """x (..., r, c) as a 3-D (batches, r, c) array and its batch step (0: shared)."""
    shape = tuple(x.shape)  # the simulator's shape objects take no negative index
    xb = shape[:-2]
    if _math.prod(xb) == 1:
        return x.reshape((1,) + shape[-2:]), 0
    if (1,) * (len(batch) - len(xb)) + xb != batch:  # partial broadcast: materialize it
        x = backend._broadcast(x, batch + shape[-2:])
    return x.reshape((nbatch,) + shape[-2:]), 1


def tiled_matmul(backend, n: Node, args):
    """n = a @ b by the tiled shared-memory kernel (codegen.gen_matmul): 16x16 tiles, batch
    dims on grid z. For bool/int/uint/float32/float64 results the library does not take, or
    where it is not usable."""
    a, b = (backend.contiguous(x) for x in args)
    ta, tb = n.attr("ta", False), n.attr("tb", False)
    M, N = n.shape[-2:]
    K = n.inputs[0].shape[-2 if ta else -1]
    batch = tuple(n.shape[:-2])
    B = _math.prod(batch)
    out = backend.empty(n.shape, n.dtype)
    if out.size == 0:
        return out
    a3, sa = _operand3(backend, a, batch, B)
    b3, sb = _operand3(backend, b, batch, B)
    fn = backend.library_kernel("matmul", n.dtype.name)
    tiles = -(-M // TILE) * -(-N // TILE)
    if CONFIG.cuda_sim:
        grid = (1, 1, 1)
    else:
        gz = min(B, 65535)
        grid = (max(1, min(tiles, backend._blocks(1 << 40, 1) // gz)), 1, gz)
    backend.lib_launch(fn, grid, (TILE, TILE), out.reshape((B, M, N)), a3, b3, sa | 2 * ta,
                       sb | 2 * tb, M, N, K)
    return out


# ---------------------------------------------------------------- ufunc.at's segment plan

def sorts_positions() -> bool:
    """Whether argsort_positions goes to the library (counted in library_fallbacks if not)."""
    if usable() and "argsort" not in _BROKEN:
        return True
    STATS.library_fallbacks += 1
    return False


def argsort_positions(backend, keys):
    """The stable argsort (int64) of int64 device array `keys` (a ufunc.at's flat target
    positions, cuda/segment.py) by the library on the backend's stream, or None where it
    raised: the caller then sorts by counting on the device."""
    cp = library()
    out = backend.empty(keys.shape, np.int64)
    dev = backend.device_id()
    try:
        with cp.cuda.Device(dev), _stream(cp, backend.stream()), \
                cp.cuda.using_allocator(lambda nbytes: _scratch(cp, backend, nbytes, dev)):
            cp.copyto(as_cupy(cp, out, dev), cp.argsort(as_cupy(cp, keys, dev), axis=-1))
    except Exception as e:  # noqa: BLE001 - as run(): our own path still can
        _BROKEN["argsort"] = e
        warn_once("library argsort", f"CuPy could not run argsort ({type(e).__name__}: {e}); "
                  "it runs on tracer's own path from now on")
        backend.release(out)
        STATS.library_fallbacks += 1
        return None
    STATS.library_calls += 1
    return out
