"""Storage and liveness of a lowered graph's values (memory planning, with the passes), shared by
buffer assignment (which decides which updates run in place) and the executor (which plans peak
memory and runs the updates).

Views share their input's storage. An update (slice write, scatter) may run in place when the
storage it updates was made by this graph or is a donated leaf, is not a result, is read by
nothing after it, is not reached through a broadcast, and is not also one of the update's other
operands: its result then is that storage, so a chain of row writes into one buffer copies
nothing. A donated leaf (attribute `donated`, set by the engine) is an input buffer that no one
outside this graph can observe (tracer/store.py writable_leaves): it may be updated as if this
graph had made it, but it is never freed nor counted in the peak (it is the caller's).

A slice write in place whose value is a fusion may also have that fusion write straight into
the slice (`into`, Storage.writes_into): the value then never has storage of its own.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from tracer.ir.node import Node, toposort
from tracer.ir.catalogue import unit_reshape
from tracer.ir.registry import OPS, Kind, consts_only, is_kind


def _view(n: Node) -> bool:
    return OPS[n.op].props.view


def _update(n: Node) -> bool:
    """A slice write or a scatter: its result is its first operand's storage, updated."""
    return is_kind(n, Kind.UPDATE, Kind.SCATTER)


@dataclass
class Storage:
    order: list[Node]
    roots: list[Node]
    alias: dict[int, int] = field(default_factory=dict)
    bcast: set[int] = field(default_factory=set)    # views through a broadcast (read-only)
    last: dict[int, int] = field(default_factory=dict)  # storage -> position of last reader
    made: set[int] = field(default_factory=set)     # values this graph allocates
    donated: set[int] = field(default_factory=set)  # leaves it may update in place
    written: set[int] = field(default_factory=set)  # donated leaves written in place
    inputs: set[int] = field(default_factory=set)   # its input leaves
    new: set[int] = field(default_factory=set)      # made values that are new arrays at run time
    into: set[int] = field(default_factory=set)     # slice writes whose value writes into them
    readers: Counter = field(default_factory=Counter)  # node -> how many inputs name it
    pos: dict[int, int] = field(default_factory=dict)  # node -> its position

    def __post_init__(self):
        for pos, n in enumerate(self.order):
            self.pos[id(n)] = pos
            self.readers.update(id(i) for i in n.inputs)
            if _view(n):
                self.alias[id(n)] = id(n.inputs[0])
                if n.op == "broadcast_to" or id(n.inputs[0]) in self.bcast:
                    self.bcast.add(id(n))
            elif not is_kind(n, Kind.LEAF):
                self.made.add(id(n))
                if is_kind(n, *_NEW_KINDS) or n.op in ("output", "concatenate"):
                    self.new.add(id(n))
            elif n.op == "input":
                self.inputs.add(id(n))
                if n.attr("donated"):
                    self.donated.add(id(n))
        for pos, n in enumerate(self.order):
            for i in n.inputs:
                self.last[self.find(id(i))] = pos

    def find(self, i: int) -> int:
        """The storage i's value lives in. The chain walked is pointed at it (path
        compression: a chain of k views or in-place updates is walked once, not per reader)."""
        alias = self.alias
        root = alias.get(i)
        if root is None:
            return i
        while root in alias:
            root = alias[root]
        while alias[i] != root:
            alias[i], i = root, alias[i]
        return root

    def _merge(self, n: Node, s: int, pos: int, keep: set[int]) -> None:
        """n's value is written into storage s; a result's storage (keep) stays one."""
        self.alias[id(n)] = s
        self.last[s] = self.last.get(id(n), pos)
        if id(n) in keep:
            keep.add(s)

    def reusable_param(self, n: Node, pos: int, keep: set[int]) -> int | None:
        """For an elementwise fusion: a param whose buffer this graph made (or a donated
        leaf's), that dies here, is no view (but a reshape), has the result's type and is read
        once, so the kernel can write its result there (each element is read before it is
        written)."""
        if not is_kind(n, Kind.FUSION) or not _elementwise(n.attr("body")):
            return None
        for k, p in enumerate(n.inputs):
            q = p
            while q.op == "reshape":  # a reshape of a fresh buffer keeps its element order
                q = q.inputs[0]
            s = self.find(id(p))
            if s == id(q) and (s in self.made or s in self.donated) and s not in keep and \
                    self.last.get(s) == pos and \
                    p.size == n.size and p.dtype == n.dtype and \
                    sum(self.find(id(i)) == s for i in n.inputs) == 1:
                return k
        return None

    def writes_into(self, n: Node, s: int, read: dict[int, int], keep: set[int]) -> bool:
        """Whether the value of slice write n, which runs in place into storage s, can be
        computed straight into the slice: a single-output fusion (not horizontal; seen through
        a reshape that only adds or drops length-1 axes) read only by n and by no result, with
        its own storage (not written over a param), that reads nothing in s (`c[1:] =
        c[:-1] * 2` keeps its temporary), with the slice's steps positive and nothing reading
        s (`read`: storage -> position of its latest reader so far) between the fusion and n,
        and the version of s that n updates made before the fusion runs."""
        v = writer_of(n)
        if v is None or v.size == 0:
            return False
        at = self.pos[id(v)]
        return self.readers[id(v)] == 1 and self.readers[id(n.inputs[1])] == 1 and \
            self.find(id(v)) == id(v) and id(v) not in keep and \
            all(st[2] > 0 for st in n.attr("slices")) and \
            self.pos[id(n.inputs[0])] < at and read.get(s, -1) < at and \
            all(self.find(id(i)) != s for i in v.inputs)

    def walk_updates(self, decide, reuse=None, into=None) -> tuple[set[int], int]:
        """Visit the updates in order; `decide(n)` says whether n, which can run in place,
        does. Merges the storage of those that do. With `reuse(n, k)`, elementwise
        fusions that may write over their dying param k and are told to do so merge too.
        With `into(n)`, a slice write in place whose value may be computed into the slice
        (writes_into) and is told to be is added to `self.into`, its value's storage merged.
        Returns (updates in place, bytes copied: operands copied by the other updates, a
        broadcast constant being filled, not copied)."""
        keep = {self.find(id(r)) for r in self.roots}
        inplace: set[int] = set()
        copied = 0
        read: dict[int, int] = {}  # storage -> the position of its latest reader before n
        for pos, n in enumerate(self.order):
            if into is not None and pos:
                for i in self.order[pos - 1].inputs:
                    read[self.find(id(i))] = pos - 1
            if reuse is not None and is_kind(n, Kind.FUSION):
                k = self.reusable_param(n, pos, keep)
                if k is not None and reuse(n, k):
                    s = self.find(id(n.inputs[k]))
                    if s in self.donated:
                        self.written.add(s)
                    self._merge(n, s, pos, keep)
                continue
            if not _update(n):
                continue
            s = self.find(id(n.inputs[0]))
            can = (s in self.made or s in self.donated) and s not in keep and \
                self.last.get(s) == pos and id(n.inputs[0]) not in self.bcast and \
                all(self.find(id(i)) != s for i in n.inputs[1:])
            if can and decide(n):
                inplace.add(id(n))
                if s in self.donated:
                    self.written.add(s)
                if into is not None and self.writes_into(n, s, read, keep) and into(n):
                    self.into.add(id(n))
                    self.alias[id(writer_of(n))] = s
                self._merge(n, s, pos, keep)
            elif s in self.made or not consts_only(n.inputs[0]):
                copied += n.inputs[0].nbytes
        return inplace, copied

    def root_storage(self) -> tuple:
        """Per root, after walk_updates: True where its storage is its own, a new array of
        this graph's (not what an interpreted op made: NumPy may hand back a view of its
        operand) or a donated leaf written in place, and no other root's: the caller may take
        it as a buffer no one else holds; else the id of the leaf it lives in (a view of
        it), else None."""
        found = [self.find(id(r)) for r in self.roots]
        count = Counter(found)
        return tuple(True if (s in self.new or s in self.written) and count[s] == 1 else
                     s if s in self.inputs else None for s in found)

    def freed_after(self) -> list[list[int]]:
        """Per position: the buffers this graph made that die there (no reader, view or
        result refers to them afterwards), after walk_updates' merges."""
        keep = {self.find(id(r)) for r in self.roots}
        out: list[list[int]] = [[] for _ in self.order]
        for n in self.order:
            s = id(n)
            if s in self.made and self.find(s) == s and s not in keep and s in self.last:
                out[self.last[s]].append(s)
        return out

    def peak(self) -> int:
        """Planned peak of the buffers this graph allocates, results excluded (after
        walk_updates, merged storage counts once)."""
        keep = {self.find(id(r)) for r in self.roots}
        live, peak = 0, 0
        size: dict[int, int] = {}
        # a multi-output fusion's outputs are allocated at its launch, while its inputs live
        parts: dict[int, list[Node]] = {}
        for n in self.order:
            if n.op == "output":
                parts.setdefault(id(n.inputs[0]), []).append(n)
        for pos, n in enumerate(self.order):
            for m in parts.get(id(n), [n]):
                if id(m) in self.made and self.find(id(m)) == id(m) and id(m) not in keep \
                        and id(m) not in size:
                    size[id(m)] = m.nbytes
                    live += m.nbytes
            peak = max(peak, live)
            for i in {self.find(id(i)) for i in n.inputs}:
                if self.last.get(i) == pos and i in size:
                    live -= size.pop(i)
        return peak


def writer_of(n: Node) -> Node | None:
    """For slice write n: the fusion that could compute its value into the slice (its value,
    or the input of a reshape of it that only adds or drops length-1 axes), else None."""
    if n.op != "setslice":
        return None
    v = n.inputs[1]
    if v.op == "reshape" and unit_reshape(v.inputs[0].shape, v.shape):
        v = v.inputs[0]
    if not is_kind(v, Kind.FUSION) or v.attr("kind") not in ("loop", "reduce", "row") or \
            v.attr("body").op == "tuple":
        return None
    return v


# the kinds whose values are new arrays on every backend (kernels' outputs, updates, library
# routines): the other ops a backend does not run itself may return a view of an operand
_NEW_KINDS = (Kind.FUSION, Kind.UPDATE, Kind.SCATTER, Kind.CONTRACTION, Kind.LIBRARY)


def _elementwise(body: Node) -> bool:
    """One output computed element by element from same-shaped params (constants may be
    broadcast): output element i reads only element i of each param."""
    if body.op == "tuple":
        return False
    for n in toposort([body]):
        kind = OPS[n.op].kind
        if kind is Kind.PARAM:
            if not unit_reshape(n.shape, body.shape):
                return False
        elif n.op == "broadcast_to":
            if n.inputs[0].op != "const":
                return False
        elif n.op == "reshape":
            if not unit_reshape(n.inputs[0].shape, n.shape):
                return False
        elif kind not in (Kind.LEAF, Kind.ELEMENTWISE):
            return False
    return True
