"""Tiled transpose on the cuda backend: out[l, q, p] = x[l, p, q] through a shared-memory tile.

A strided copy of a transpose reads along one axis and writes along the other, so one side of
every warp's access is strided (a 32-way split of each memory transaction). Here a block reads a
TxT tile of x with consecutive threads on consecutive elements of a row, stores it in shared
memory, and after a barrier writes the tile's columns as rows of `out`: both global accesses are
coalesced. The tile's rows are padded by one element, so a column of the tile lies in 32
different shared-memory banks (no bank conflicts on the transposed read).

Any permutation that keeps some leading axes in place and swaps two blocks of the axes after them
is such a transpose of a 3-D view (`block_swap`): a 2-D `.T`, the last two axes of a batch, and
rotations like (2, 0, 1). The kernel moves bits, so each element size has one kernel (values are
viewed as unsigned integers of their width).
"""
from __future__ import annotations

import math

import numpy as np

from .codegen import NB_TYPES

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


def gen_transpose(name: str, sim: bool, uint: str) -> str:
    """out (L, Q, P) = x (L, P, Q) transposed in TxT tiles; grid x strides over the tiles of a
    matrix, grid z over the batch L. Tile indices are int64 (their divmod is once a tile)."""
    T, R = tile_shape(sim)
    return f"""@_jit
def {name}(out, x, L, P, Q):
    tile = cuda.shared.array(({T}, {T + 1}), {NB_TYPES[uint]})
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    nq = (Q + {T - 1}) // {T}
    ntiles = nq * ((P + {T - 1}) // {T})
    for z in range(cuda.blockIdx.z, L, cuda.gridDim.z):
        for t in range(cuda.blockIdx.x, ntiles, cuda.gridDim.x):
            p0 = (t // nq) * {T}
            q0 = (t % nq) * {T}
            if q0 + tx < Q:
                for r in range(ty, min({T}, P - p0), {R}):
                    tile[r, tx] = x[_ix(z), _ix(p0 + r), _ix(q0 + tx)]
            cuda.syncthreads()
            if p0 + tx < P:
                for r in range(ty, min({T}, Q - q0), {R}):
                    out[_ix(z), _ix(q0 + r), _ix(p0 + tx)] = tile[tx, r]
            cuda.syncthreads()  # the tile is read before the next one is written"""


def tiled_transpose(be, n, x):
    """n's value (a transpose of the contiguous device array x) through the tile kernel, or None
    where its permutation is not a block swap or its dtype has no kernel."""
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
    T, R = tile_shape(sim)
    fn = be.library_kernel("transpose", uint)
    tiles = -(-P // T) * -(-Q // T)
    gz = 1 if sim else min(L, 65535)
    gx = be._blocks(tiles * T * T, T * T) if sim else \
        max(1, min(tiles, be._blocks(1 << 40, 1) // gz))
    be.lib_launch(fn, (gx, 1, gz), (T, R), be.flatten(out).view(uint).reshape((L, Q, P)),
                  be.flatten(x).view(uint).reshape((L, P, Q)), L, P, Q)
    return out
