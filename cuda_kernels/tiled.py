"""The first tier: a fused group run by NumPy while its kernel compiles (compile_pool.py).

A pure elementwise group over same-shaped operands (cpu.is_flat) runs tile by tile, the tiles
split between threads: each body op is a NumPy call on a slice of TILE elements, written into
the thread's own tile buffer where the op is a ufunc, so intermediates stay in cache and nothing
of full size is made but the outputs. Other groups (reductions, broadcasts, row groups) run whole
through the interpreter. Results are NumPy's: arithmetic matches the kernel bit for bit;
transcendentals and sums may differ from it in the last place, as they differ from NumPy's.
"""
from __future__ import annotations

import numpy as np

from ir import Node, toposort
from ir.interp import apply_ref, eval_node
from ir.registry import OPS, fusion_outputs
from .cpu import is_flat
from .threads import run_split

TILE = 1 << 17  # elements: a float32 tile is 512 KiB; a group's tile buffers stay in L3 (measured
# on W1, 2e7 float32, 2 threads: 34 ms at 2^17, 41 ms at 2^16, 62 ms at 2^15)
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


def run_tiled(n: Node, params: list):
    body = n.attr("body")
    nodes = toposort([body])
    if not (n.attr("kind") == "loop" and is_flat(body) and
            all(m.op in ("param", "const", "tuple") or OPS[m.op].kind.value == "elementwise"
                for m in nodes)):
        return eval_node(n, params)
    outs = fusion_outputs(body)
    results = [np.empty(o.shape, o.dtype) for o in outs]
    flat_out = [r.reshape(-1) for r in results]
    flat_in = [np.asarray(p).reshape(-1) for p in params]
    size = flat_out[0].size
    steps = [(m, _into(m)) for m in nodes if m.op not in ("param", "const", "tuple")]

    def tiles(lo: int, hi: int) -> None:
        # this thread's tile buffers: intermediates never reach malloc, whose large
        # blocks are fresh pages from the OS on every call
        bufs = {id(m): np.empty(TILE, m.dtype) for m, uf in steps if uf is not None}
        vals: dict[int, object] = {id(m): m.dtype.type(m.attr("value"))
                                   for m in nodes if m.op == "const"}
        with np.errstate(all="ignore"):
            for t in range(lo, hi, TILE):
                tile = slice(t, min(t + TILE, hi))
                w = tile.stop - tile.start
                for m in nodes:
                    if m.op == "param":
                        vals[id(m)] = flat_in[m.attr("index")][tile]
                for m, uf in steps:
                    args = [vals[id(i)] for i in m.inputs]
                    vals[id(m)] = uf(*args, out=bufs[id(m)][:w]) if uf is not None \
                        else apply_ref(m, args)
                for o, f in zip(outs, flat_out):
                    f[tile] = vals[id(o)]

    run_split(tiles, size, TILE)
    return results if body.op == "tuple" else results[0]
