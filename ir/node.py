"""Immutable, interned graph nodes.

Structurally equal nodes (same op, same input objects, same attrs, same shape and dtype) are the
same Python object, so common subexpressions collapse while tracing and identity is equality.
"""
from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_intern: "weakref.WeakValueDictionary[tuple, Node]" = weakref.WeakValueDictionary()
_ids = itertools.count()


class Buffer:
    """A realized value: a host numpy array or a device array. Hashed by identity."""

    __slots__ = ("value", "host", "__weakref__")

    def __init__(self, value: Any):
        self.value = value
        self.host = value if isinstance(value, np.ndarray) else None

    def __repr__(self) -> str:
        v = self.value
        return f"Buffer({getattr(v, 'dtype', '?')}{list(getattr(v, 'shape', ()))})"


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class Node:
    op: str
    inputs: tuple["Node", ...]
    shape: tuple[int, ...]
    dtype: np.dtype
    attrs: tuple[tuple[str, Any], ...] = ()
    uid: int = field(default=0, compare=False)

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
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"%{self.uid}:{short_type(self)} = {self.op}"


def short_dtype(dt: np.dtype) -> str:
    return {"float32": "f32", "float64": "f64", "bool": "b1", "complex64": "c64",
            "complex128": "c128", "float16": "f16"}.get(dt.name, dt.name.replace("uint", "u").replace("int", "i"))


def short_type(n: Node) -> str:
    return f"{short_dtype(n.dtype)}[{','.join(map(str, n.shape))}]"


def make(op: str, inputs: tuple[Node, ...], shape: tuple[int, ...], dtype: np.dtype,
         attrs: tuple[tuple[str, Any], ...] = ()) -> Node:
    """Build (or find) the node. Shape/dtype must already satisfy the op's rules."""
    shape = tuple(int(s) for s in shape)
    dtype = np.dtype(dtype)
    key = (op, inputs, shape, dtype.str, attrs)
    try:
        hit = _intern.get(key)
    except TypeError:  # unhashable attr: never interned
        hit, key = None, None
    if hit is not None:
        return hit
    node = Node(op, inputs, shape, dtype, attrs, next(_ids))
    if key is not None:
        _intern[key] = node
    return node


def toposort(roots: list[Node] | tuple[Node, ...]) -> list[Node]:
    """Every node reachable from roots, inputs before users (iterative, no recursion limit)."""
    order: list[Node] = []
    seen: set[int] = set()
    for root in roots:
        if id(root) in seen:
            continue
        stack = [(root, False)]
        while stack:
            n, done = stack.pop()
            if done:
                order.append(n)
                continue
            if id(n) in seen:
                continue
            seen.add(id(n))
            stack.append((n, True))
            for i in reversed(n.inputs):
                if id(i) not in seen:
                    stack.append((i, False))
    return order


def users(order: list[Node]) -> dict[int, list[Node]]:
    out: dict[int, list[Node]] = {id(n): [] for n in order}
    for n in order:
        for i in n.inputs:
            out[id(i)].append(n)
    return out
