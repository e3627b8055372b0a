"""The first tier: a fused group run by NumPy while its kernel compiles (compile_pool.py).

A pure elementwise group over same-shaped operands (cpu.is_flat) runs tile by tile: each body
op is a NumPy call on a slice of TILE elements, so intermediates stay in cache and nothing of
full size is made but the outputs. Other groups (reductions, broadcasts, row groups) run whole
through the interpreter. Results are NumPy's: arithmetic matches the kernel bit for bit;
transcendentals and sums may differ from it in the last place, as they differ from NumPy's.
"""
from __future__ import annotations

import numpy as np

from ir import Node, toposort
from ir.interp import apply_ref, eval_node
from ir.registry import OPS, fusion_outputs
from .cpu import is_flat

TILE = 1 << 14  # elements: a float32 tile is 64 KiB, a group's live tiles stay in L2


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
    with np.errstate(all="ignore"):
        for lo in range(0, size, TILE):
            tile = slice(lo, min(lo + TILE, size))
            vals: dict[int, object] = {}
            for m in nodes:
                if m.op == "param":
                    vals[id(m)] = flat_in[m.attr("index")][tile]
                elif m.op == "const":
                    vals[id(m)] = m.dtype.type(m.attr("value"))
                elif m.op != "tuple":
                    vals[id(m)] = apply_ref(m, [vals[id(i)] for i in m.inputs])
            for o, f in zip(outs, flat_out):
                f[tile] = vals[id(o)]
    return results if body.op == "tuple" else results[0]
