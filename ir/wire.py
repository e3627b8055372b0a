"""A graph as bytes, to run in another process (a Dask worker: tracer/dask_cluster.py): its
nodes in topological order with their inputs as indices (no recursion however deep, and the
receiving process interns them as its own), its leaf buffers apart, so that their values
travel as the transport's data. Recorded graphs only: a node inside an attribute (an
optimized graph's fusion bodies) is refused."""
from __future__ import annotations

import io
import pickle

from .node import Buffer, Node, make, toposort


class _Pickler(pickle.Pickler):
    """Leaf buffers leave as their indices among `leaves(roots)`."""

    def __init__(self, f, bufs: list[Buffer]):
        super().__init__(f, protocol=5)
        self._at = {id(b): k for k, b in enumerate(bufs)}

    def persistent_id(self, obj):
        if isinstance(obj, Buffer):
            if id(obj) not in self._at:
                raise TypeError(f"{obj!r} outside an input leaf: only recorded graphs are packed")
            return self._at[id(obj)]
        if isinstance(obj, Node):
            raise TypeError(f"{obj!r} inside an attribute: only recorded graphs are packed")
        return None


def leaves(roots: list[Node]) -> list[Buffer]:
    """The graph's leaf buffers in the order `unpack` takes their values: the same for every
    graph of the same structure (a chunk's graph packed once serves every chunk of its size)."""
    return _leaves(toposort(roots))


def _leaves(order: list[Node]) -> list[Buffer]:
    out: dict[int, Buffer] = {}
    for n in order:
        if n.op == "input":
            out.setdefault(id(n.attr("buf")), n.attr("buf"))
    return list(out.values())


def pack(roots: list[Node]) -> tuple[bytes, list[Buffer]]:
    """(the graph as bytes, its leaf buffers: `leaves(roots)`)."""
    order = toposort(roots)
    index = {id(n): i for i, n in enumerate(order)}
    rows = [(n.op, tuple(index[id(i)] for i in n.inputs), n.shape, n.dtype, n.attrs)
            for n in order]
    bufs = _leaves(order)
    f = io.BytesIO()
    _Pickler(f, bufs).dump((rows, [index[id(r)] for r in roots]))
    return f.getvalue(), bufs


def unpack(data: bytes, values) -> list[Node]:
    """pack's graph rebuilt (interned here), its leaves holding `values`."""
    bufs: dict[int, Buffer] = {}

    class _Unpickler(pickle.Unpickler):
        def persistent_load(self, k):
            if k not in bufs:
                bufs[k] = Buffer(values[k])
            return bufs[k]

    rows, roots = _Unpickler(io.BytesIO(data)).load()
    nodes: list[Node] = []
    for op, ins, shape, dtype, attrs in rows:
        nodes.append(make(op, tuple(nodes[i] for i in ins), shape, dtype, attrs))
    return [nodes[i] for i in roots]
