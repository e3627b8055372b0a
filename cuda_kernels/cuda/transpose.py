"""Tiled transposes on the cuda backend: out[l, q, p] = X[l, p, q] through a shared-memory tile.

A grid-stride loop over a transposed output reads along one axis and writes along the other, so
one side of every warp's access is strided (each element its own memory transaction). Here a
block reads a TxT tile with consecutive threads on consecutive elements of a row of X, stores it
in shared memory, and after a barrier writes the tile's columns as rows of `out`: both global
accesses are coalesced. The tile's rows are padded by one element, so a column of the tile lies
in T different shared-memory banks (no bank conflicts on the transposed read).

Two kernels use the tile:
- a fused loop kernel whose body is `transpose(X)` of its last two axes, X any elementwise
  expression (`(a * 2).T`, a bare `a.T`): X is computed at the input's index, in the tile's
  coalesced order (`gen_tiled_loop`);
- the library kernel of `CudaBackend._transpose` (a transpose the executor runs as a view op):
  any permutation that keeps some leading axes in place and swaps two blocks of the axes after
  them (`block_swap`: `.T`, a batch's last two axes, rotations like (2, 0, 1)) is a transpose
  of a 3-D view. It moves bits, so each element size has one kernel (values viewed as unsigned
  integers of their width).
Tile indices are int64: their divmod runs once a tile, not once an element.
"""
from __future__ import annotations

import math

import numpy as np

from tracer.ir.node import Node
from .codegen import NB_TYPES, CudaEmitter, _unflatten

# (tile edge, thread rows): a (T, ROWS) block, each thread moving T / ROWS elements of a tile.
# The simulator costs ~0.3 ms a thread and polls every thread at each barrier: 8x8 tiles there.
TILE, ROWS = 32, 8
SIM_TILE, SIM_ROWS = 8, 2


def tile_shape(sim: bool) -> tuple[int, int]:
    return (SIM_TILE, SIM_ROWS) if sim else (TILE, ROWS)


def block_swap(perm: tuple[int, ...]) -> tuple[int, int] | None:
    """(j, k) where perm = (0..j-1, k..n-1, j..k-1) with j < k < n: the permutation is the
    transpose of a (lead, P, Q) view (axes [:j], [j:k], [k:]) into (lead, Q, P). None for other
    permutations (the identity included)."""
    n = len(perm)
    j = 0
    while j < n and perm[j] == j:
        j += 1
    if j == n:
        return None
    k = perm[j]
    if tuple(perm[j:]) == tuple(range(k, n)) + tuple(range(j, k)):
        return j, k
    return None


def _tiled(name: str, args: list[str], sh_t: str, L: str, P: str, Q: str, lead: list[str],
           load: tuple[list[str], str], store: str, sim: bool) -> str:
    """The tile loop: grid z strides over the L matrices (`lead`: lines at indent 8 that set
    the leading indices from `z`), grid x over a matrix's tiles. `load`: statements and the
    value of X at (ip, iq); `store`: out's element at (iq, ip)."""
    T, R = tile_shape(sim)
    stmts, v = load
    lines = ["@_jit", f"def {name}({', '.join(args)}):",
             f"    tile = cuda.shared.array(({T}, {T + 1}), {sh_t})",
             "    tx = cuda.threadIdx.x", "    ty = cuda.threadIdx.y",
             f"    nq = ({Q} + {T - 1}) // {T}", f"    ntiles = nq * (({P} + {T - 1}) // {T})",
             f"    for z in range(cuda.blockIdx.z, {L}, cuda.gridDim.z):"]
    lines += lead
    lines += ["        for tt in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):",
              f"            rp = (tt // nq) * {T}", f"            cq = (tt % nq) * {T}",
              f"            if cq + tx < {Q}:", "                iq = cq + tx",
              f"                for r in range(ty, min({T}, {P} - rp), {R}):",
              "                    ip = rp + r"]
    lines += ["                    " + s for s in stmts]
    lines += [f"                    tile[r, tx] = {v}", "            cuda.syncthreads()",
              f"            if rp + tx < {P}:", "                ip = rp + tx",
              f"                for r in range(ty, min({T}, {Q} - cq), {R}):",
              "                    iq = cq + r", f"                    {store} = tile[tx, r]",
              "            cuda.syncthreads()  # the tile is read before the next one is written"]
    return "\n".join(lines)


def gen_transpose(name: str, sim: bool, uint: str) -> str:
    """The library kernel: out (L, Q, P) = x (L, P, Q), elements as `uint`."""
    return _tiled(name, ["out", "x", "L", "P", "Q"], NB_TYPES[uint], "L", "P", "Q", [],
                  ([], "x[_ix(z), _ix(ip), _ix(iq)]"), "out[_ix(z), _ix(iq), _ix(ip)]", sim)


def tiles_last_two(body: Node) -> bool:
    """A fused loop body the tiled loop kernel computes: one output, the transpose of the last
    two axes of X."""
    perm = body.attr("perm") if body.op == "transpose" else None
    return perm is not None and len(perm) >= 2 and \
        tuple(perm) == tuple(range(len(perm) - 2)) + (len(perm) - 1, len(perm) - 2)


def gen_tiled_loop(em: CudaEmitter, body: Node, name: str, sim: bool) -> str:
    """The fused loop kernel of `transpose(X)` (tiles_last_two): X's sizes are the arguments
    n0..n{r-1}; X is computed at (lead..., ip, iq), the output written at (lead..., iq, ip)."""
    x = body.inputs[0]
    r = x.ndim
    n = [f"n{k}" for k in range(r)]
    lead = [f"i{k}" for k in range(r - 2)]
    args = em.out_names + [em.pname(p) for p in em.params] + [em.cname(c) for c in em.consts] + n
    stmts: list[str] = []
    v = em.emit(x, tuple(lead) + ("ip", "iq"), stmts, {})
    target = em.sub(em.out_names[0], tuple(lead) + ("iq", "ip"))
    return _tiled(name, args, NB_TYPES[x.dtype.name], " * ".join(n[:-2]) or "1", n[-2], n[-1],
                  _unflatten("z", lead, n[:-2], "        "), (stmts, v), target, sim)


def tile_launch(be, sim: bool, L: int, P: int, Q: int) -> tuple[tuple, tuple]:
    """(grid, block) of a tile kernel: the tiles of a matrix on grid x, the batch on grid z
    (one block in all under the simulator's cap)."""
    T, R = tile_shape(sim)
    tiles = -(-P // T) * -(-Q // T)
    if sim:
        return (be._blocks(tiles * T * R, T * R), 1, 1), (T, R)
    gz = min(L, 65535)
    return (max(1, min(tiles, be._blocks(1 << 40, 1) // gz)), 1, gz), (T, R)


def tiled_transpose(be, n: Node, x):
    """n's value (a transpose of the contiguous device array x) through the library tile
    kernel, or None where its permutation is not a block swap or its dtype has no kernel."""
    swap = block_swap(tuple(n.attr("perm")))
    if swap is None or np.dtype(n.dtype).name not in NB_TYPES:
        return None
    j, k = swap
    shape = tuple(x.shape)
    L, P, Q = math.prod(shape[:j]), math.prod(shape[j:k]), math.prod(shape[k:])
    out = be.empty(n.shape, n.dtype)
    if out.size == 0:
        return out
    uint = f"uint{8 * np.dtype(n.dtype).itemsize}"
    sim = be._mode() == "sim"
    grid, block = tile_launch(be, sim, L, P, Q)
    be.lib_launch(be.library_kernel("transpose", uint), grid, block,
                  be.flatten(out).view(uint).reshape((L, Q, P)),
                  be.flatten(x).view(uint).reshape((L, P, Q)), L, P, Q)
    return out
