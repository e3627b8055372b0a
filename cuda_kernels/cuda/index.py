"""Gather and scatter on the cuda backend, on the device.

One generated kernel shape serves every mode: threads stride over the index space (the
gather's result shape, which is also a scatter's value shape), turn each position into an
offset into x (kept axes by stride, indexed axes through the index arrays, negative indices
counted from the end), then act:

- gather: out[i] = x[offset]
- add / maximum / minimum on integers with values of the target's dtype: an atomic combine
  into out[offset] (ufunc.at; duplicates accumulate, exactly, in any order).
- every other ufunc.at: the sort-and-segment plan (cuda/segment.py), in NumPy's order and
  loop dtype, so floats get NumPy's bits; the rest (combiners with no kernel template) goes
  through the host.
- set (x[key] = v, the last of duplicate positions wins, as in NumPy): two launches, `claim`
  (atomic max of the position into a winner array) then `write` (the winner writes).

An index out of bounds writes an error record on the device (the launch's slot of the
backend's flag buffer, claimed by the first thread with an atomic compare-and-swap) and reads
x[0] instead; the host reads the records at its next wait and raises NumPy's IndexError
(naming one bad index, not necessarily the first) at the user's line of the op.
"""
from __future__ import annotations

import math

import numpy as np

from tracer.ir.node import Node
from . import libs
from .codegen import _tpb, _unflatten
from .memory import cstrides
from .segment import loop_dtypes

# exact in any order: integer atomics (float ones round in the order threads come, and the
# device's float max/min drop a NaN that NumPy's maximum/minimum propagate)
ATOMIC = {"add": "add", "maximum": "max", "minimum": "min"}
ATOMIC_DTYPES = ("int32", "int64", "uint32", "uint64")


def gen_index(arg: str, name: str) -> str:
    """Kernel for `arg` = "R_K_MODE": index space of rank R, K index arrays."""
    r, k, mode = arg.split("_")
    r, k = max(int(r), 1), int(k)
    o = [f"o{d}" for d in range(r)]
    n = [f"n{d}" for d in range(r)]
    xc = [f"xc{d}" for d in range(r)]
    bc = [f"bc{d}" for d in range(r)]
    idx = [f"i{j}" for j in range(k)]
    xa = [f"xa{j}" for j in range(k)]
    da = [f"da{j}" for j in range(k)]
    L = ["@_jit", f"def {name}(out, x, v, err, {', '.join(idx + n + xc + bc + xa + da)}):"]
    L.append(f"    for flat in range(cuda.grid(1), {' * '.join(n)}, cuda.gridsize(1)):")
    L += _unflatten("flat", o, n, "        ")
    L.append(f"        off = {' + '.join(f'{a} * {b}' for a, b in zip(o, xc))}")
    L.append(f"        b = {' + '.join(f'{a} * {c}' for a, c in zip(o, bc))}")
    for j in range(k):
        L += [f"        w = {idx[j]}[b]",
              "        if w < 0:",
              f"            w += {da[j]}",
              f"        if w < 0 or w >= {da[j]}:",
              "            if cuda.atomic.cas(err, 0, 0, 1) == 0:",
              f"                err[1] = {idx[j]}[b]",
              f"                err[2] = {j}",
              "            w = 0",
              f"        off += w * {xa[j]}"]
    L.append("        " + {
        "gather": "out[flat] = x[off]",
        "add": "cuda.atomic.add(out, off, v[flat])",
        "max": "cuda.atomic.max(out, off, v[flat])",
        "min": "cuda.atomic.min(out, off, v[flat])",
        "claim": "cuda.atomic.max(out, off, flat)",
        "write": "if x[off] == flat:\n            out[off] = v[flat]",
        # the segment plan's target positions (cuda/segment.py), and their histogram in x
        "offs": "out[flat] = off",
        "count": "out[flat] = off\n        cuda.atomic.add(x, off, 1)",
    }[mode])
    return "\n".join(L)


def _index_map(n: Node, x_shape: tuple, space: tuple) -> tuple[list, list, list, list]:
    """Per axis of the index space: x's stride (kept axes) and the B-flat stride (B axes);
    per index array: x's stride and length of its axis."""
    axes, front = n.attr("axes"), n.attr("front")
    xs = cstrides(x_shape)
    rest = [d for d in range(len(x_shape)) if d not in axes]
    nb = len(space) - len(rest)
    b_at = 0 if front else axes[0]
    bst = cstrides(space[b_at:b_at + nb])
    xc, bc, kept = [], [], iter(rest)
    for r in range(len(space)):
        if b_at <= r < b_at + nb:
            xc.append(0)
            bc.append(bst[r - b_at])
        else:
            xc.append(xs[next(kept)])
            bc.append(0)
    return xc, bc, [xs[d] for d in axes], [x_shape[d] for d in axes]


def _launch(be, mode: str, n: Node, out, x, v, idx: list, space: tuple, x_shape: tuple) -> None:
    """One index kernel over `space`; offsets are into an array of x_shape (flat)."""
    xc, bc, xa, da = _index_map(n, x_shape, space)
    if not space:
        space, xc, bc = (1,), [0], [0]
    work = math.prod(space)
    if work == 0:
        return
    fn = be.library_kernel("index", f"{len(space)}_{len(idx)}_{mode}")
    be.lib_launch(fn, be._blocks(work, _tpb()), _tpb(), be.flatten(out), be.flatten(x),
                  be.flatten(v), be.flag_slot(n, da), *[be.flatten(i) for i in idx], *space,
                  *xc, *bc, *xa, *da)


def device_gather(be, n: Node, args: list):
    x, *idx = [be.contiguous(a) for a in args]
    out = be.empty(n.shape, n.dtype)
    _launch(be, "gather", n, out, x, x, idx, tuple(n.shape), tuple(x.shape))
    return out


def device_scatter(be, n: Node, args: list, inplace: bool = False):
    """The scatter on the device, or None where it runs through the host. `inplace`: the
    plan says nothing reads x's old value, so x is updated where it is."""
    x, *idx, v = [be.contiguous(a) for a in args]
    mode = n.attr("mode")
    atomic = mode in ATOMIC and x.dtype.name in ATOMIC_DTYPES and v.dtype == x.dtype
    if mode == "set" and v.dtype != x.dtype or \
            mode != "set" and not atomic and loop_dtypes(mode, x.dtype, v.dtype) is None:
        return None
    space = tuple(v.shape)
    if inplace and x is args[0]:
        out = x
    else:
        out = be.empty(x.shape, x.dtype)
        be._copy(out, x, 0, 0, tuple(x.shape), cstrides(x.shape), cstrides(x.shape))
    if atomic:
        _launch(be, ATOMIC[mode], n, out, x, v, idx, space, tuple(x.shape))
    elif mode != "set":
        _segments(be, n, out, x, v, idx, space)
    else:
        win = be.empty((max(math.prod(x.shape), 1),), np.int64)
        be._copy(win, be.constant(np.int64(-1)), 0, 0, tuple(win.shape), (1,), (0,))  # no claim
        _launch(be, "claim", n, win, x, v, idx, space, tuple(x.shape))
        _launch(be, "write", n, out, win, v, idx, space, tuple(x.shape))
        be.release(win)
    return out


def _segments(be, n: Node, out, x, v, idx: list, space: tuple) -> None:
    """ufunc.at by the sort-and-segment plan (cuda/segment.py) into `out` (x's values)."""
    work = math.prod(space)
    if work == 0:
        return
    offs = be.empty((work,), np.int64)
    perm = None
    if libs.sorts_positions():
        _launch(be, "offs", n, offs, x, v, idx, space, tuple(x.shape))
        perm = libs.argsort_positions(be, offs)
    if perm is None:  # a counting sort by target position (its histogram beside the offsets)
        size = max(x.size, 1)
        starts = be.empty((size,), np.int64)
        be._copy(starts, be.constant(np.int64(0)), 0, 0, (size,), (1,), (0,))
        _launch(be, "count", n, offs, starts, v, idx, space, tuple(x.shape))
        be.lib_launch(be.library_kernel("segment", "scan"), 1, _tpb(), starts, size)
        perm = be.empty((work,), np.int64)
        be.lib_launch(be.library_kernel("segment", "place"), be._blocks(work, _tpb()), _tpb(),
                      perm, offs, starts, work)
        be.release(starts)
    arg = f"apply_{out.dtype.name}_{v.dtype.name}_{n.attr('mode')}"
    be.lib_launch(be.library_kernel("segment", arg), be._blocks(work, _tpb()), _tpb(),
                  be.flatten(out), be.flatten(v), perm, offs, work)
    be.release(perm)
    be.release(offs)
