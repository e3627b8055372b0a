"""Euclidean-distance rewriter (eXLA): squared distances between two point sets,

    sum((A[.., :, None, :] - B[.., None, :, :]) ** 2, axis=-1)

(traced as a reduce_sum over the last axis of square(a - b), d*d or d**2, a and b broadcasts of
the point sets, either one first), become

    maximum(|A|^2[.., :, None] + |B|^2[.., None, :] - 2 A @ B^T, 0)

one GEMM and two norms instead of N*M*D differences: the N*M*D tensor is never built, not even
as a loop. The clamp at 0 keeps rounding from making a squared distance negative (sqrt of it
would be NaN). Floats are reassociated, which this rewrite is allowed to do; cancellation makes
the error relative to |A|^2 + |B|^2 rather than to the distance, so only float32 and float64.
"""
from __future__ import annotations

from tracer.ir.config import CONFIG
from tracer.ir.node import Node, make_const
from .dots import build, reshape, swap
from .rewrite import apply_rules

# The fused loop costs ~3 scalar flops per (i, j, d); the GEMM form costs 2 BLAS flops (SIMD,
# blocked) per (i, j, d) plus an epilogue of ~5 flops and a write and read of the N*M GEMM
# result per (i, j). Measured on the cpu backend (N = M = 1000, float32) the GEMM form is
# slower at D <= 4 and faster from D = 8 on (D = 16: about 2x; D = 64: about 5x).
MIN_DIM = 8
# per backend, read while optimizing (plans are cached per backend); cuda's is the cpu number
# until it is measured on a GPU (cuBLAS against the fused loop)
MIN_DIM_BY_BACKEND = {"cpu": MIN_DIM, "cuda": MIN_DIM}


def _squared(n: Node) -> Node | None:
    """d when n is d**2 in one of its traced spellings."""
    if n.op == "square" or (n.op == "multiply" and n.inputs[0] is n.inputs[1]):
        return n.inputs[0]
    if n.op == "power":
        e = n.inputs[1].inputs[0] if n.inputs[1].op == "broadcast_to" else n.inputs[1]
        if e.op == "const" and e.attr("value") == 2:
            return n.inputs[0]
    return None


def _points(u: Node, rank: int) -> tuple[Node, tuple]:
    """The array broadcast into u, and its shape padded to `rank`."""
    x = u.inputs[0] if u.op == "broadcast_to" else u
    return x, (1,) * (rank - x.ndim) + x.shape


def _roles(d: Node) -> tuple[Node, Node] | None:
    """(A [.., N, D], B [.., M, D]) when d = rows(A) - cols(B) or cols(B) - rows(A)."""
    *_, n, m, k = d.shape
    ops = [_points(u, d.ndim) for u in d.inputs]
    for (xa, pa), (xb, pb) in (ops, ops[::-1]):
        if pa[-3:] == (n, 1, k) and pb[-3:] == (1, m, k):
            return reshape(xa, pa[:-2] + (k,)), reshape(xb, pb[:-3] + (m, k))
    return None


def _sq_norms(x: Node) -> Node:
    return build("reduce_sum", (build("square", (x,)),), (("axes", (x.ndim - 1,)),))


def _bcast(x: Node, shape: tuple) -> Node:
    return x if x.shape == shape else build("broadcast_to", (x,), (("shape", shape),))


def expand_distance(n: Node) -> Node | None:
    # sum((a - b)**2, -1) -> max(|a|^2 + |b|^2 - 2 a.b, 0)
    if n.op != "reduce_sum" or n.dtype.kind != "f" or n.dtype.itemsize < 4:
        return None
    x = n.inputs[0]
    if x.ndim < 3 or n.attr("axes") != (x.ndim - 1,) or \
            x.shape[-1] < MIN_DIM_BY_BACKEND.get(CONFIG.backend, MIN_DIM):
        return None
    d = _squared(x)
    ab = _roles(d) if d is not None and d.op == "subtract" else None
    if ab is None or any(i.dtype != n.dtype for i in ab):
        return None
    a, b = ab
    shape = n.shape
    na = _bcast(reshape(_sq_norms(a), a.shape[:-1] + (1,)), shape)
    nb = _bcast(reshape(_sq_norms(b), b.shape[:-2] + (1, b.shape[-2])), shape)
    ab2 = build("multiply", (_bcast(build("matmul", (a, swap(b))), shape),
                             _bcast(make_const(2, n.dtype), shape)))
    e = build("subtract", (build("add", (na, nb)), ab2))
    return build("maximum", (e, _bcast(make_const(0, n.dtype), shape)))


def euclidean_distance(roots: list[Node]) -> list[Node]:
    """Euclidean-distance rewriter. O(k n) for k sweeps (one when nothing matches); each try
    is O(1)."""
    return apply_rules(roots, [expand_distance])
