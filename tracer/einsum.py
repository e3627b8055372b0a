"""einsum as tracer ops: the dot passes see its contractions as matmuls.

Each operand first loses its repeated labels (a diagonal: a strided view where the axes merge,
else a gather) and the labels no other operand and not the output uses (a sum). Operands are
then contracted two at a time, greedily the pair with the smallest result (pairs sharing a
label first). A pair with summed labels and free labels on a side is a (batched) matmul, its
operands transposed and reshaped to [batch.., M, K] and [batch.., K, N]; rows of dot
products (no free labels) are a multiply and a sum that fuse into one kernel; a pair with no
summed labels is a broadcast multiply. Everything is computed in NumPy's einsum dtype.

NumPy checks the subscripts, dtype=, casting= and keywords on zero-byte stand-ins, so its own
errors are raised and nothing is evaluated. As in NumPy, one operand with nothing summed
('ij->ji', 'ii->i') gives a view of it: here a copy when the diagonal's axes cannot merge
into one strided axis. `out=`, float16 (NumPy accumulates it in float32 inside its loops) and
dtypes tracer does not hold run NumPy (counted).
"""
from __future__ import annotations

import math

import numpy as np

from . import reductions as R
from .array import lazy, ndarray
from .manipulation import broadcast_to
from .products import matmul
from .recording import proxy, traced
from .view import nocopy_reshape
from .fallback import fallback_call
from .indexing import setitem
from .store import to_numpy
from .ufuncs import apply_ufunc

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # NumPy's sublist labels 0..51


def _sublist_term(sub) -> str | None:
    try:
        items = list(sub)
    except TypeError:
        return None
    term = ""
    for s in items:
        if s is Ellipsis:
            term += "..."
        elif isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= s < 52:
            term += _LETTERS[s]
        else:
            return None
    return term


def _from_sublists(args: tuple) -> tuple | None:
    """einsum(op0, sub0, op1, sub1, ..., [subout]) as (subscripts, op0, op1, ...); None where
    a sublist holds anything NumPy would refuse (NumPy then runs and raises)."""
    n = len(args) // 2
    terms = [_sublist_term(s) for s in args[1:2 * n:2]]
    out = _sublist_term(args[-1]) if len(args) % 2 else ""
    if n == 0 or out is None or any(t is None for t in terms):
        return None
    return (",".join(terms) + ("->" + out if len(args) % 2 else ""),) + tuple(args[0:2 * n:2])


def _terms(subscripts: str, shapes: list) -> tuple[list[list], list]:
    """The labels of each operand and of the output, for subscripts NumPy accepted. The
    ellipsis' broadcast axes are labelled 0..B-1, right-aligned as NumPy broadcasts them."""
    spec = subscripts.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    terms = []
    for term, shape in zip(lhs.split(","), shapes):
        pre, dots, post = term.partition("...")
        nb = len(shape) - len(pre) - len(post) if dots else 0
        terms.append((list(pre), nb, list(post)))
    b = max((nb for _, nb, _ in terms), default=0)
    labels = [pre + list(range(b - nb, b)) + post for pre, nb, post in terms]
    if arrow:
        pre, dots, post = rhs.partition("...")
        output = list(pre) + (list(range(b)) if dots else []) + list(post)
    else:
        counts: dict = {}
        for ls in labels:
            for ll in ls:
                if isinstance(ll, str):
                    counts[ll] = counts.get(ll, 0) + 1
        output = list(range(b)) + sorted(ll for ll, c in counts.items() if c == 1)
    return labels, output


def _sizes(labels: list[list], shapes: list) -> dict | None:
    """Each label's size; None where NumPy refuses the shapes (a repeated label of different
    sizes in one operand, or sizes that do not broadcast)."""
    seen: dict = {}
    for ls, shape in zip(labels, shapes):
        own: dict = {}
        for ll, d in zip(ls, shape):
            if own.setdefault(ll, d) != d:
                return None
        for ll, d in own.items():
            seen.setdefault(ll, set()).add(d)
    sizes = {}
    for ll, ds in seen.items():
        if len(ds - {1}) > 1:
            return None
        sizes[ll] = min(ds - {1}, default=1)  # a size 1 broadcasts (to 0 too)
    return sizes


# ------------------------------------------------------------------ steps on one operand

def _diagonal(x: ndarray, labels: list) -> tuple[ndarray, list]:
    """x with each repeated label's axes collapsed into their diagonal, as the last axis."""
    while True:
        dup = next((ll for ll in labels if labels.count(ll) > 1), None)
        if dup is None:
            return x, labels
        st = x._view.strides
        axes = sorted((i for i, ll in enumerate(labels) if ll == dup), key=lambda i: -abs(st[i]))
        rest = [i for i in range(x.ndim) if i not in axes]
        moved = x.transpose(rest + axes)
        n, k = x.shape[axes[0]], len(axes)
        merged = moved.shape[:len(rest)] + (n ** k,)
        if nocopy_reshape(moved.shape, moved._view.strides, merged) is not None:
            # the diagonal of n**k merged values is every (1 + n + .. + n**(k-1))-th one
            step = (n ** k - 1) // (n - 1) if n > 1 else 1
            x = moved.reshape(merged)[..., ::step]
        else:
            ar = np.arange(n)
            x = moved[(Ellipsis,) + (ar,) * k]
        labels = [labels[i] for i in rest] + [dup]


def _sum_out(x: ndarray, labels: list, needed: set, dt) -> tuple[ndarray, list]:
    axes = tuple(i for i, ll in enumerate(labels) if ll not in needed)
    if not axes:
        return x, labels
    return R.sum(x, axes, dt), [ll for ll in labels if ll in needed]


def _align(x: ndarray, labels: list, order: list) -> ndarray:
    """x with its axes in `order` (unit axes for the labels it lacks), to broadcast."""
    present = [ll for ll in order if ll in labels]
    x = x.transpose([labels.index(ll) for ll in present])
    return x.reshape([x.shape[present.index(ll)] if ll in labels else 1 for ll in order])


# ------------------------------------------------------------------ pairs

def _contract(a, la, b, lb, keep: set, size: dict, dt) -> tuple[ndarray, list]:
    """The product of operands a and b (labels la, lb), summed over the labels not in `keep`."""
    a, la = _sum_out(a, la, keep | set(lb), dt)
    b, lb = _sum_out(b, lb, keep | set(la), dt)
    batch = [ll for ll in la if ll in lb and ll in keep]
    con = [ll for ll in la if ll in lb and ll not in keep]
    fa = [ll for ll in la if ll not in lb]
    fb = [ll for ll in lb if ll not in la]
    if not con or not (fa or fb) and batch:
        order = batch + fa + fb + con
        prod = apply_ufunc(np.multiply, (_align(a, la, order), _align(b, lb, order)))
        return _sum_out(prod, order, keep, dt)
    bshape = tuple(size[ll] for ll in batch)
    m, k, n = (math.prod(size[ll] for ll in g) for g in (fa, con, fb))
    A = a.transpose([la.index(ll) for ll in batch + fa + con]).reshape(bshape + (m, k))
    B = b.transpose([lb.index(ll) for ll in batch + con + fb]).reshape(bshape + (k, n))
    res = matmul(A, B).reshape(bshape + tuple(size[ll] for ll in fa + fb))
    return res, batch + fa + fb


def _greedy_pair(ops: list, output: list, size: dict) -> tuple[int, int]:
    """The pair whose contraction is smallest, pairs that share a label first."""
    best = None
    for i in range(len(ops)):
        for j in range(i + 1, len(ops)):
            keep = set(output).union(*(set(ll) for t, (_, ll) in enumerate(ops)
                                       if t not in (i, j)))
            li, lj = set(ops[i][1]), set(ops[j][1])
            key = (not li & lj, math.prod(size[ll] for ll in (li | lj) & keep), i, j)
            best = key if best is None or key < best else best
    return best[2], best[3]


# ------------------------------------------------------------------ einsum

def _stand_ins(ops: list, real_shapes: bool = False) -> list:
    return [proxy(o.shape if real_shapes else (1,) * o.ndim, o.dtype) for o in ops]


def _einsum_into(operands: tuple, out: ndarray, kwargs: dict):
    """NumPy computes into a host copy of `out` (its casting and shape rules), which is then
    written through `out`, so every view of its base sees it."""
    host = np.array(to_numpy(out))
    host.flags.writeable = out._view.writeable
    fallback_call("einsum", np.einsum, operands, dict(kwargs, out=host))
    setitem(out, Ellipsis, host)
    return out


@traced
def einsum(*operands, out=None, optimize=False, **kwargs):
    if operands and not isinstance(operands[0], str):
        converted = _from_sublists(operands)
        if converted is None:
            return fallback_call("einsum", np.einsum, operands,
                                 dict(kwargs, out=out, optimize=optimize))
        operands = converted
    if isinstance(out, ndarray):
        return _einsum_into(operands, out, dict(kwargs, optimize=optimize))
    if out is not None:  # NumPy computes into it and returns it
        fallback_call("einsum", np.einsum, operands, dict(kwargs, out=out, optimize=optimize))
        return out
    if not operands:
        return fallback_call("einsum", np.einsum, (), dict(kwargs, optimize=optimize))
    subscripts = operands[0]
    ops = [o if isinstance(o, ndarray) else np.asarray(o) for o in operands[1:]]
    # NumPy's errors for the subscripts and keywords, and its result dtype
    dt = np.einsum(subscripts, *_stand_ins(ops), optimize=optimize, **kwargs).dtype
    labels, output = _terms(subscripts, [o.shape for o in ops])
    size = _sizes(labels, [o.shape for o in ops])
    if size is None:  # NumPy's message for shapes that do not match
        np.einsum(subscripts, *_stand_ins(ops, real_shapes=True), optimize=optimize, **kwargs)
        return fallback_call("einsum", np.einsum, operands, dict(kwargs, optimize=optimize))
    if any(o.dtype.kind not in "biufc" for o in ops):
        return fallback_call("einsum", np.einsum, operands, dict(kwargs, optimize=optimize))
    if len(ops) == 1 and set(labels[0]) <= set(output):  # NumPy returns a view
        x, ls = _diagonal(lazy(ops[0]), labels[0])
        return x.transpose([ls.index(ll) for ll in output])
    if dt.kind not in "biufc" or dt == np.float16:
        return fallback_call("einsum", np.einsum, operands, dict(kwargs, optimize=optimize))
    work = []
    for o, ls in zip(ops, labels):
        x, ls = _diagonal(lazy(o).astype(dt, copy=False), ls)
        shape = tuple(size[ll] for ll in ls)
        work.append((broadcast_to(x, shape) if x.shape != shape else x, ls))
    if len(work) == 1:
        x, ls = _sum_out(*work[0], set(output), dt)
    while len(work) > 1:
        i, j = _greedy_pair(work, output, size)
        (a, la), (b, lb) = work[i], work[j]
        work = [w for t, w in enumerate(work) if t not in (i, j)]
        keep = set(output).union(*(set(ll) for _, ll in work))
        x, ls = _contract(a, la, b, lb, keep, size, dt)
        work.insert(i, (x, ls))  # in the pair's place: a chain stays in its written order
    # a new C-ordered array, as NumPy's
    return ndarray._from_node(x.transpose([ls.index(ll) for ll in output])._node)


def einsum_path(*operands, optimize="greedy", einsum_call=False):
    """NumPy's einsum_path on zero-byte stand-ins of the lazy operands: it reads only shapes,
    so nothing is evaluated."""
    ops = tuple(proxy(o.shape, o.dtype) if isinstance(o, ndarray) else o for o in operands)
    return np.einsum_path(*ops, optimize=optimize, einsum_call=einsum_call)


NAMES = ("einsum", "einsum_path")
METHODS: dict = {}
