"""Immutable, interned graph nodes.

Structurally equal nodes (same op, same input objects, same attrs, same shape and dtype) are the
same Python object, so common subexpressions collapse while tracing and identity is equality.
"""
from __future__ import annotations

import itertools
import math
import weakref
from dataclasses import FrozenInstanceError
from typing import Any, Callable

import numpy as np

_ids = itertools.count()


class Buffer:
    """A realized value: a host numpy array or a device array. Hashed by identity."""

    # owner: id of the Var that alone holds this buffer and may write into it (tracer.eager)
    __slots__ = ("value", "host", "owner", "__weakref__")

    def __init__(self, value: Any):
        self.value = value
        self.host = value if isinstance(value, np.ndarray) else None
        self.owner = None

    def __repr__(self) -> str:
        v = self.value
        return f"Buffer({getattr(v, 'dtype', '?')}{list(getattr(v, 'shape', ()))})"


class Slot(Buffer):
    """A stand-in leaf value in a cached plan: the real buffer is bound at each run. It knows
    only what the plan may depend on, the layout (`contiguous`)."""

    __slots__ = ("contiguous",)

    def __init__(self, contiguous: bool):
        super().__init__(None)
        self.contiguous = contiguous

    def __repr__(self) -> str:
        return f"Slot(contiguous={self.contiguous})"


class _NodeFields:
    """A Node's storage. A node is built as one of these (a slot store is then a plain store,
    about a third of what a frozen class's setters cost) and made a Node, whose layout is
    the same, before anything sees it."""

    __slots__ = ("op", "inputs", "shape", "dtype", "attrs", "uid", "site", "__weakref__")


class Node(_NodeFields):
    """A graph node, immutable (built by `make` only): op, inputs, shape (a tuple of ints),
    dtype (an np.dtype), attrs ((name, value) pairs), uid (creation order), site (where it was
    recorded: SITE while it was built, or set_site; read on the error path, tracer.debug).
    Equality and hashing are identity."""

    __slots__ = ()
    op: str
    inputs: tuple["Node", ...]
    shape: tuple[int, ...]
    dtype: np.dtype
    attrs: tuple[tuple[str, Any], ...]
    uid: int
    site: Any

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def attr(self, name: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == name:
                return v
        return default

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"%{self.uid}:{short_type(self)} = {self.op}"


def short_dtype(dt: np.dtype) -> str:
    return {"float32": "f32", "float64": "f64", "bool": "b1", "complex64": "c64",
            "complex128": "c128", "float16": "f16", "void0": "tuple"}.get(dt.name, dt.name.replace("uint", "u").replace("int", "i"))


def short_type(n: Node) -> str:
    return f"{short_dtype(n.dtype)}[{','.join(map(str, n.shape))}]"


_new = object.__new__
# the call site the layer above is recording at (tracer's recording sets it); every node built
# meanwhile keeps it as its `site`
SITE: list = [None]
_table: dict[tuple, "weakref.ref[Node]"] = {}
_purge_at = [1 << 16]
_set_site = _NodeFields.site.__set__
_weak = weakref.ref


def set_site(node: Node, site: Any) -> None:
    """Note where `node` was recorded, unless it already has a site (an interned node keeps
    its first)."""
    if node.site is None:
        _set_site(node, site)


def _purge() -> None:
    dead = [k for k, r in list(_table.items()) if r() is None]  # (list: threads may insert)
    for k in dead:
        _table.pop(k, None)
    _purge_at[0] = max(1 << 16, 2 * len(_table))


def make(op: str, inputs: tuple[Node, ...], shape: tuple[int, ...], dtype: np.dtype,
         attrs: tuple[tuple[str, Any], ...] = ()) -> Node:
    """Build (or find) the node. Shape/dtype must already satisfy the op's rules.

    The intern table holds weak references (dead entries are purged as it grows), and nodes
    are built as _NodeFields: tracing cost per op is dominated by this function.
    """
    shape = tuple(map(int, shape))
    dtype = np.dtype(dtype)
    if op == "input":
        return _build(op, inputs, shape, dtype, attrs, None)
    return make_canonical(op, inputs, shape, dtype, attrs)


def make_canonical(op: str, inputs: tuple[Node, ...], shape: tuple[int, ...],
                   dtype: np.dtype, attrs: tuple[tuple[str, Any], ...] = ()) -> Node:
    """make() of a node that is no leaf, for a shape and dtype already in their canonical form
    (a tuple of Python ints, an np.dtype: a node's own, or built from them)."""
    # Inputs enter the key by id: a live node keeps its inputs alive, so a live entry's ids
    # cannot be reused, and the table never keeps a dead graph (or its buffers) alive. Leaves
    # holding buffers are unique anyway and are not interned.
    key = (op, tuple(map(id, inputs)), shape, dtype, attrs)
    try:
        ref = _table.get(key)
    except TypeError:  # unhashable attr: never interned
        return _build(op, inputs, shape, dtype, attrs, None)
    if ref is not None:
        hit = ref()
        if hit is not None:
            return hit
    return _build(op, inputs, shape, dtype, attrs, key)


def make_binary(op: str, a: Node, b: Node, shape: tuple[int, ...], dtype: np.dtype) -> Node:
    """make_canonical(op, (a, b), shape, dtype), no attributes: an elementwise op's node."""
    key = (op, (id(a), id(b)), shape, dtype, ())
    ref = _table.get(key)
    if ref is not None:
        hit = ref()
        if hit is not None:
            return hit
    node = _new(_NodeFields)  # _build, inline (one call less for every recorded binary op)
    node.op = op
    node.inputs = (a, b)
    node.shape = shape
    node.dtype = dtype
    node.attrs = ()
    node.uid = next(_ids)
    node.site = SITE[0]
    node.__class__ = Node
    _table[key] = _weak(node)
    if len(_table) > _purge_at[0]:
        _purge()
    return node


def _build(op, inputs, shape, dtype, attrs, key) -> Node:
    node = _new(_NodeFields)
    node.op = op
    node.inputs = inputs
    node.shape = shape
    node.dtype = dtype
    node.attrs = attrs
    node.uid = next(_ids)
    node.site = SITE[0]
    node.__class__ = Node
    if key is not None:
        _table[key] = weakref.ref(node)
        if len(_table) > _purge_at[0]:
            _purge()
    return node


def make_leaf(shape: tuple[int, ...], dtype: np.dtype, buf: Buffer) -> Node:
    """make("input", (), shape, dtype, (("buf", buf),)) for a shape and dtype already in
    their canonical form (a node's own: a tuple of ints, an np.dtype)."""
    node = _new(_NodeFields)
    node.op = "input"
    node.inputs = ()
    node.shape = shape
    node.dtype = dtype
    node.attrs = (("buf", buf),)
    node.uid = next(_ids)
    node.site = SITE[0]
    node.__class__ = Node
    return node


def host_leaf(value: np.ndarray) -> Node:
    """make_leaf holding a new Buffer of NumPy array `value` (adaptive laziness wraps every
    small result in one: both inline)."""
    buf = _new(Buffer)
    buf.value = buf.host = value
    buf.owner = None
    node = _new(_NodeFields)
    node.op = "input"
    node.inputs = ()
    node.shape = value.shape
    node.dtype = value.dtype
    node.attrs = (("buf", buf),)
    node.uid = next(_ids)
    node.site = SITE[0]
    node.__class__ = Node
    return node


def toposort(roots, follow: Callable[[Node], bool] | None = None) -> list[Node]:
    """Every node reachable from roots, inputs before users (iterative, no recursion limit).
    With `follow`, only inputs for which follow(input) is true are entered. A single root's
    order is kept while the root lives (a fusion body is walked by every analysis and codegen
    step): the kept tuple leaves the root out, so it does not keep the root alive."""
    if follow is None and isinstance(roots, (list, tuple)) and len(roots) == 1:
        root = roots[0]
        got = _ORDERS.get(root)
        if got is not None:
            return [*got, root]
        order = _sort(roots, None)
        _ORDERS[root] = tuple(order[:-1])
        return order
    return _sort(roots, follow)


_ORDERS: "weakref.WeakKeyDictionary[Node, tuple]" = weakref.WeakKeyDictionary()


def _sort(roots, follow) -> list[Node]:
    """Depth first, each node on the stack once per user that found it unvisited, emitted when
    it is on top again with its inputs done: linear in the graph, with no per-step tuples."""
    order: list[Node] = []
    entered: set[int] = set()
    done: set[int] = set()
    for root in roots:
        stack = [root]
        while stack:
            n = stack[-1]
            k = id(n)
            if k not in entered:
                entered.add(k)
                depth = len(stack)
                for i in reversed(n.inputs):
                    if id(i) not in entered and (follow is None or follow(i)):
                        stack.append(i)
                if len(stack) > depth:
                    continue
            stack.pop()
            if k not in done:
                done.add(k)
                order.append(n)
    return order


def users(order: list[Node]) -> dict[int, list[Node]]:
    out: dict[int, list[Node]] = {id(n): [] for n in order}
    for n in order:
        for i in n.inputs:
            out[id(i)].append(n)
    return out


_NAN = float("nan")
_NEG_NAN = -_NAN  # x86's default NaN (0/0, sqrt(-1) in NumPy's loops): bits 0xfff8...


def make_const(value, dtype) -> Node:
    """A 0-d constant. Its attrs tell NaNs (one shared object per sign) and -0.0 (a `neg` flag)
    apart, since the intern table compares values with ==; a complex one carries its bits,
    which tell the signs of zero parts apart (-0.0+0j == 0j)."""
    dtype = np.dtype(dtype)
    if isinstance(value, float) and dtype.kind == "f" and dtype.itemsize < 8 and abs(value) > 6e4:
        with np.errstate(all="ignore"):  # may round to inf, as NumPy's cast does
            v = dtype.type(value)
    else:
        v = dtype.type(value) if not isinstance(value, np.ndarray) else value.astype(dtype)[()]
    py = v.item() if dtype.kind != "c" else complex(v)
    attrs: tuple = (("value", py), ("dtype", dtype.str))
    if dtype.kind == "f":
        if py != py:
            attrs = (("value", _NEG_NAN if np.signbit(v) else _NAN), ("dtype", dtype.str))
        elif py == 0 and np.signbit(v):
            attrs += (("neg", True),)
    elif dtype.kind == "c":
        attrs += (("bits", v.tobytes()),)
    return make("const", (), (), dtype, attrs)
