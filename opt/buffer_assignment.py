"""Buffer assignment, the last pass: marks each slice write and scatter that can update its
operand's buffer in place (`inplace` attribute), each such slice write whose value, a fusion,
is computed straight into the slice (`into`: opt/liveness.py's writes_into), and each
elementwise fusion that can write its result over a param that dies there (`reuse` = the
param's index); the rules are opt/liveness.py's. Reshapes and other views already alias their
input. A backend that cannot update in place ignores the marks and copies, and the executor
counts those bytes (`explain(...).bytes_copied`).

Its liveness of the final graph is kept (`memory_plan`), so lowering plans memory from it
instead of building liveness a second time."""
from __future__ import annotations

import weakref
from dataclasses import dataclass

from tracer.ir.node import Node, make
from .liveness import Storage
from .rewrite import order_of


@dataclass(frozen=True)
class MemoryPlan:
    """What lowering needs of the final graph's liveness, by node id (no node is held: the
    table below is weak): planned peak, bytes updates copy, the updates in place, per
    position of toposort(roots) the storages that die there, per root whether its
    storage is its own (Storage.root_storage), and the slice writes whose value is computed
    into the slice (Storage.into)."""
    roots: tuple[int, ...]
    peak: int
    copied: int
    inplace: frozenset
    freed_after: list
    root_storage: tuple = ()
    into: frozenset = frozenset()


_PLANS: "weakref.WeakKeyDictionary[Node, MemoryPlan]" = weakref.WeakKeyDictionary()


def memory_plan(roots: list[Node], order: list[Node]) -> MemoryPlan:
    """The memory plan buffer assignment made for exactly these roots; where it did not run on
    them (the pass switched off), one built from the marks they carry. `order`: the roots'
    toposort. O(n)."""
    got = _PLANS.get(roots[0]) if roots else None
    if got is not None and got.roots == tuple(id(r) for r in roots):
        return got
    st = Storage(order, roots)
    inplace, copied = st.walk_updates(lambda n: bool(n.attr("inplace")),
                                      lambda n, k: n.attr("reuse") == k,
                                      lambda n: bool(n.attr("into")))
    return MemoryPlan(tuple(id(r) for r in roots), st.peak(), copied, frozenset(inplace),
                      st.freed_after(), st.root_storage(), frozenset(st.into))


def buffer_assignment(roots: list[Node]) -> list[Node]:
    """Buffer assignment. O(n) plus an O(body) walk per fusion (is it elementwise)."""
    order = order_of(roots)
    reuse: dict[int, int] = {}

    def take(n: Node, k: int) -> bool:
        reuse[id(n)] = k
        return True

    st = Storage(order, roots)
    inplace, copied = st.walk_updates(lambda n: True, take, lambda n: True)
    new: dict[int, Node] = {}
    for n in order:
        ins = tuple(new[id(i)] for i in n.inputs)
        attrs = n.attrs
        if id(n) in inplace and not n.attr("inplace"):
            attrs += (("inplace", True),)
        if id(n) in st.into and not n.attr("into"):
            attrs += (("into", True),)
        if id(n) in reuse and n.attr("reuse") is None:
            attrs += (("reuse", reuse[id(n)]),)
        if attrs is not n.attrs or any(a is not b for a, b in zip(ins, n.inputs)):
            new[id(n)] = make(n.op, ins, n.shape, n.dtype, attrs)
        else:
            new[id(n)] = n
    out = [new[id(r)] for r in roots]
    if out:  # the rebuilt graph has the same toposort order: positions carry over
        _PLANS[out[0]] = MemoryPlan(tuple(id(r) for r in out), st.peak(), copied,
                                    frozenset(id(new[i]) for i in inplace),
                                    [[id(new[s]) for s in at] for at in st.freed_after()],
                                    tuple(s if s is True or s is None else id(new[s])
                                          for s in st.root_storage()),
                                    frozenset(id(new[i]) for i in st.into))
    return out
