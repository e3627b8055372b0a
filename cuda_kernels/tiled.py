"""The first tier: a fused group run by NumPy while its kernel compiles (cpu/compile_pool.py).

A group whose values all have the group's full shape or one element (elementwise ops, scalars
broadcast to the full shape, and reductions of full-shape values to one element) runs tile by
tile, the tiles split between threads: each full-shape op is a NumPy call on a slice of `tile`
elements, written into one of the thread's tile buffers where the op is a ufunc (a buffer is
reused once the value in it is dead), so intermediates stay in cache and nothing of full size is
made but the outputs. Each tile's reductions are partials, combined in tile order; the
one-element values around them are computed whole. Other groups (partial reductions, row
groups, broadcasts of rows) run whole through the interpreter, which holds every value of the
body. Results are NumPy's: arithmetic matches the kernel bit for bit; transcendentals and sums
may differ from it in the last place, as they differ from NumPy's.

Under a memory budget (`room`), the tier may add at most the room's bytes to the buffers the
plan counts (the group's outputs): tiles shrink to fit, and a group that cannot fit (`fits`)
waits for its kernel instead.
"""
from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass

import numpy as np

from tracer.ir.node import Node, toposort
from tracer.ir.interp import apply_ref, eval_node
from tracer.ir.registry import ACC_LOGICAL, OPS, VIEW_OPS, fusion_outputs
from .planning import acc_dtype
from .threads import run_split

TILE = 1 << 17  # elements: a float32 tile is 512 KiB; a group's tile buffers stay in L3 (measured
# on W1, 2e7 float32, 2 threads: 34 ms at 2^17, 41 ms at 2^16, 62 ms at 2^15)
MIN_TILE = 1 << 10  # under a budget, tiles shrink to this at the least
_ROOM: list[int | None] = [None]  # bytes the tier may add to the plan's (None: no budget)


@contextlib.contextmanager
def room(nbytes: int | None):
    """Within this block the tier adds at most `nbytes` to the buffers the plan counts."""
    old, _ROOM[0] = _ROOM[0], nbytes
    try:
        yield
    finally:
        _ROOM[0] = old


def _threads(size: int) -> int:
    return max(1, min(os.cpu_count() or 1, -(-size // MIN_TILE)))


@dataclass
class Tiling:
    """How a group runs tile by tile: `early` one-element values computed before the tiles,
    `steps` the full-shape ops per tile with each one's buffer slot (None: no buffer, the op
    is not a ufunc that writes into one), `slots` the dtypes of the tile buffers, `fresh`
    those of the values made anew each tile, `reduces` the reductions of full-shape values,
    `late` the one-element values computed from them."""
    shape: tuple
    early: list
    steps: list          # [(node, ufunc or None, slot or None)]
    slots: list
    fresh: list
    reduces: list
    late: list

    def tile_bytes(self, tile: int) -> int:
        """What every thread's tile values hold at once, at `tile` elements a tile."""
        size = int(np.prod(self.shape))
        return _threads(size) * tile * sum(np.dtype(d).itemsize for d in self.slots + self.fresh)


def _into(m: Node) -> np.ufunc | None:
    """The ufunc that can write m's tile straight into a buffer: one whose own result type on
    m's input dtypes is m's dtype, so `out=` computes exactly what apply_ref does."""
    uf = OPS[m.op].ufunc
    if uf is None or uf.nout != 1 or m.attrs:
        return None
    try:
        natural = uf.resolve_dtypes(tuple(i.dtype for i in m.inputs) + (None,))[-1]
    except (TypeError, ValueError):
        return None
    return uf if natural == m.dtype else None


def _kind(m: Node) -> str:
    return OPS[m.op].kind.value if m.op in OPS else ""


def tiling(n: Node) -> Tiling | None:
    """n's Tiling, or None when some value has neither the full shape nor one element, or a
    full-shape value needs more than elementwise ops and scalar broadcasts."""
    body = n.attr("body")
    nodes = [m for m in toposort([body]) if m.op != "tuple"]
    shape = max((m.shape for m in nodes), key=lambda s: int(np.prod(s)))
    if int(np.prod(shape)) <= 1:
        return None
    big = {id(m) for m in nodes if m.shape == shape}
    late_ids: set[int] = set()
    early, steps, reduces, late = [], [], [], []
    for m in nodes:
        if id(m) in big:
            ok = m.op == "param" or _kind(m) == "elementwise" or (
                m.op == "broadcast_to" and id(m.inputs[0]) not in big)
            if not ok or any(id(i) in late_ids for i in m.inputs):
                return None
            if m.op != "param":
                steps.append(m)
        elif m.size > 1:
            return None
        elif _kind(m) == "reduce" and OPS[m.op].ufunc is not None and id(m.inputs[0]) in big:
            # a ufunc's reduction: tile partials combine by the ufunc (arg-reductions do not)
            reduces.append(m)
            late_ids.add(id(m))
        elif any(id(i) in big for i in m.inputs):
            return None
        elif any(id(i) in late_ids for i in m.inputs):
            late.append(m)
            late_ids.add(id(m))
        elif m.op != "param":  # (a one-element param is read whole)
            early.append(m)
    kept = [m for m in fusion_outputs(body) if id(m) in big] + [r.inputs[0] for r in reduces]
    slots, placed = _slots(steps, kept)
    # values made fresh each tile: ops that cannot write into a buffer, and reads of params
    # that are not contiguous
    fresh = [m.dtype for m, uf, _ in placed if uf is None and m.op != "broadcast_to"] + \
        [m.dtype for m in nodes if m.op == "param" and id(m) in big]
    return Tiling(shape, early, placed, slots, fresh, reduces, late)


def _slots(steps: list, kept: list) -> tuple[list, list]:
    """A buffer slot for each step whose op writes into one, reused once its value is dead
    (read by no later step; `kept` values live to the end of the tile)."""
    ufs = [None if m.op == "broadcast_to" else _into(m) for m in steps]
    last = {id(m): len(steps) for m in kept}
    for pos in reversed(range(len(steps))):
        m = steps[pos]
        # what apply_ref makes may be a view of its input: the input lives as long as it does
        end = max(pos, last.get(id(m), pos)) if ufs[pos] is None else pos
        for i in m.inputs:
            last[id(i)] = max(last.get(id(i), -1), end)
    slots: list = []
    free: list[int] = []
    owner: dict[int, int] = {}
    placed = []
    for pos, (m, uf) in enumerate(zip(steps, ufs)):
        slot = None
        if uf is not None:
            match = [s for s in free if slots[s] == m.dtype]
            slot = match[0] if match else len(slots)
            if match:
                free.remove(slot)
            else:
                slots.append(m.dtype)
            owner[id(m)] = slot
        placed.append((m, uf, slot))
        for i in {id(i) for i in m.inputs} | {id(m)}:
            if i in owner and last.get(i, -1) <= pos:
                free.append(owner.pop(i))
    return slots, placed


def _interpreted_bytes(n: Node) -> int:
    """What the interpreter holds beside the group's outputs: every value of the body."""
    body = n.attr("body")
    outs = {id(o) for o in fusion_outputs(body)}
    return sum(m.nbytes for m in toposort([body]) if id(m) not in outs and
               m.op not in ("param", "const", "tuple") + VIEW_OPS)


def fits(n: Node) -> bool:
    """Whether the tier can run group n within the room a memory budget leaves. Its outputs
    are new arrays: where buffer assignment has the kernel write over a param (`reuse`), the
    plan does not count them."""
    if _ROOM[0] is None:
        return True
    t = tiling(n)
    need = _interpreted_bytes(n) if t is None else t.tile_bytes(MIN_TILE)
    if n.attr("reuse") is not None:
        need += n.nbytes
    return need <= _ROOM[0]


def _tile_size(n: Node, t: Tiling) -> int:
    if _ROOM[0] is None:
        return TILE
    room = _ROOM[0] - (n.nbytes if n.attr("reuse") is not None else 0)
    return max(MIN_TILE, min(TILE, room // t.tile_bytes(1) // MIN_TILE * MIN_TILE))


def _whole(m: Node, vals: dict) -> None:
    vals[id(m)] = eval_node(m, [vals[id(i)] for i in m.inputs])


def _flat_reader(p):
    """p's elements [lo, hi) in C order: a view where p is contiguous, a tile's copy else."""
    p = np.asarray(p)
    if p.flags.c_contiguous:
        flat = p.reshape(-1)
        return lambda s: flat[s]
    return lambda s: p.flat[s]


def run_tiled(n: Node, params: list):
    t = tiling(n)
    if t is None or 0 in t.shape:
        return eval_node(n, params)
    body = n.attr("body")
    outs = fusion_outputs(body)
    vals: dict[int, object] = {}
    for m in toposort([body]):
        if m.op == "param" and m.shape != t.shape:
            vals[id(m)] = np.asarray(params[m.attr("index")])
    with np.errstate(all="ignore"):
        for m in t.early:
            _whole(m, vals)
    big_outs = [o for o in outs if o.shape == t.shape]
    results = {id(o): np.empty(o.shape, o.dtype) for o in big_outs}
    flat_out = [(o, results[id(o)].reshape(-1)) for o in big_outs]
    readers = {id(m): _flat_reader(params[m.attr("index")]) for m in toposort([body])
               if m.op == "param" and m.shape == t.shape}
    size = int(np.prod(t.shape))
    tile = _tile_size(n, t)
    partials: dict[int, list] = {}  # thread start -> per reduction, its tiles' partials

    def tiles(lo: int, hi: int) -> None:
        # this thread's tile buffers: intermediates never reach malloc, whose large
        # blocks are fresh pages from the OS on every call
        bufs = [np.empty(tile, d) for d in t.slots]
        own = dict(vals)
        mine = [[] for _ in t.reduces]
        with np.errstate(all="ignore"):
            for start in range(lo, hi, tile):
                s = slice(start, min(start + tile, hi))
                w = s.stop - s.start
                for i, read in readers.items():
                    own[i] = read(s)
                for m, uf, slot in t.steps:
                    args = [own[id(i)] for i in m.inputs]
                    if m.op == "broadcast_to":
                        own[id(m)] = args[0].reshape(())
                    elif slot is not None:
                        own[id(m)] = uf(*args, out=bufs[slot][:w])
                    else:
                        own[id(m)] = apply_ref(m, args)
                for o, f in flat_out:
                    f[s] = own[id(o)]
                for k, r in enumerate(t.reduces):
                    # (a broadcast scalar stands for the whole tile)
                    mine[k].append(_partial(r, np.broadcast_to(own[id(r.inputs[0])], (w,))))
        partials[lo] = mine

    run_split(tiles, size, tile)
    order = [partials[lo] for lo in sorted(partials)]
    for k, r in enumerate(t.reduces):
        parts = [p for mine in order for p in mine[k]]
        v = functools.reduce(OPS[r.op].ufunc, parts)
        vals[id(r)] = np.asarray(v).astype(r.dtype).reshape(r.shape)
    with np.errstate(all="ignore"):
        for m in t.late:
            _whole(m, vals)
    got = [results[id(o)] if id(o) in results else vals[id(o)] for o in outs]
    return got if body.op == "tuple" else got[0]


def _partial(r: Node, x):
    """Reduction r of one tile, accumulated as the kernel does (planning.acc_dtype)."""
    d = OPS[r.op]
    if d.accumulate == ACC_LOGICAL:
        return d.ufunc.reduce(x.astype(bool, copy=False), axis=None)
    return d.ufunc.reduce(x, axis=None, dtype=acc_dtype(r))
