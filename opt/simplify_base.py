"""What the simplifier's rules share: the scalar or constant a node stands for, builders of typed
nodes, dtype classes, and `on`, which declares the ops a rule matches."""
from __future__ import annotations

import functools

import numpy as np

from tracer.ir.node import Node, make, make_const
from tracer.ir.registry import OPS, Kind, names


def _scalar(n: Node) -> Node | None:
    """The 0-d node n stands for: n itself if 0-d, or the value a broadcast_to spreads."""
    if n.op == "broadcast_to" and not n.inputs[0].shape:
        return n.inputs[0]
    return None if n.shape else n


def _const_node(n: Node) -> Node | None:
    s = _scalar(n)
    return s if s is not None and s.op == "const" else None


def _const_value(n: Node):
    """The scalar a node stands for, if it is a constant or a broadcast of one."""
    c = _const_node(n)
    return None if c is None else c.attr("value")


def _is_const(n: Node, value) -> bool:
    v = _const_value(n)
    return v is not None and not isinstance(v, complex) and v == value and \
        not (isinstance(v, float) and v != v)


def _const(value, dtype) -> Node:
    return make_const(np.asarray(value, dtype=dtype)[()], dtype)


def _bcast(c: Node, shape) -> Node:
    return c if c.shape == tuple(shape) else \
        make("broadcast_to", (c,), shape, c.dtype, (("shape", tuple(shape)),))


def _full(value, like: Node) -> Node:
    """The constant `value` in like's dtype, broadcast to like's shape."""
    return _bcast(_const(value, like.dtype), like.shape)


def _build(op: str, inputs: tuple[Node, ...], attrs: tuple = ()) -> Node:
    d, a = OPS[op], dict(attrs)
    return make(op, inputs, d.shape_rule([i.shape for i in inputs], a),
                d.dtype_rule([i.dtype for i in inputs], a), attrs)


def _like(n: Node, op: str, inputs: tuple[Node, ...], attrs: tuple = ()) -> Node | None:
    """op(inputs) when it has n's shape and dtype (else the rewrite would change the type)."""
    m = _build(op, inputs, attrs)
    return m if m.shape == n.shape and m.dtype == n.dtype else None


def _same(x: Node | None, n: Node) -> Node | None:
    return x if x is not None and x.dtype == n.dtype else None


def _bytes_01(x: Node) -> bool:
    """x's bool bytes are 0/1: a constant or a kernel's result, moved or not (not a bool view of
    other data, whose bytes may be 5)."""
    while OPS[x.op].kind == Kind.MOVEMENT:
        x = x.inputs[0]
    return x.op == "const" or OPS[x.op].kind in (Kind.ELEMENTWISE, Kind.REDUCE)


def _same_bool(x: Node | None, n: Node) -> Node | None:
    """_same for a fold that NumPy computes with logical ops: a bool result is 0/1 even where x's
    bytes are not, so only an x whose bytes are 0/1 may stand in."""
    if x is None or n.dtype != np.bool_:
        return _same(x, n)
    return _same(x, n) if _bytes_01(x) else None


def _cast(x: Node, dtype: np.dtype) -> Node:
    return x if x.dtype == dtype else _build("cast", (x,), (("dtype", np.dtype(dtype).str),))


def _reshape(x: Node, shape: tuple) -> Node:
    if x.op == "reshape":
        x = x.inputs[0]
    return x if x.shape == tuple(shape) else _build("reshape", (x,), (("shape", tuple(shape)),))


def _transpose(x: Node, perm: tuple) -> Node:
    if x.op == "transpose":
        inner = x.attr("perm")
        perm, x = tuple(inner[p] for p in perm), x.inputs[0]
    return x if perm == tuple(range(len(perm))) else _build("transpose", (x,), (("perm", perm),))


def _other(n: Node, pred) -> Node | None:
    """The operand of binary n whose partner (the second one, or either if n commutes) is a
    constant c with pred(c)."""
    a, b = n.inputs
    pairs = ((a, b), (b, a)) if OPS[n.op].props.commutative else ((a, b),)
    for x, c in pairs:
        k = _const_node(c)
        if k is not None and pred(k):
            return x
    return None


def _eq(value):
    return lambda c: _is_const(c, value)


def _loop_in(n: Node) -> np.dtype:
    """The dtype NumPy's loop for n converts its first operand to."""
    uf = OPS[n.op].ufunc
    return uf.resolve_dtypes(tuple(i.dtype for i in n.inputs) + (None,) * uf.nout)[0]


def on(*ops: str):
    """A rule that matches nodes of these ops; the simplifier only tries it on them."""
    wanted = frozenset(ops)

    def deco(fn):
        @functools.wraps(fn)
        def rule(n: Node) -> Node | None:
            return fn(n) if n.op in wanted else None
        rule.ops = wanted
        return rule
    return deco


_INTS = "iu"
_EXACT = "biu"          # integer and bool dtypes: every op is exact, wrap-around included
_REDUCTIONS = names(lambda d: d.kind is Kind.REDUCE and d.ufunc is not None)


def _reduce_ufunc(n: Node) -> str:
    return OPS[n.op].ufunc.__name__


def _reduced_count(n: Node) -> int:
    shape = n.inputs[0].shape
    return int(np.prod([shape[a] for a in n.attr("axes")], dtype=np.int64))
