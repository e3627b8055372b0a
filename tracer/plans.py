"""Plan cache (filled by tracer/engine.py): a graph evaluated again with the same structure reuses its optimized, lowered
program, so a loop that rebuilds the same expression pays neither the optimizer nor lowering
again (about 0.5 ms for a small graph); only the input buffers are rebound.

The key is everything a plan may depend on: each node's op, input positions, shape, dtype and
attributes (constant values included: the simplifier reads them), which leaves are the same
buffer, each leaf's layout, the roots, the backend, the passes switched off and whether a memory
budget is active (the optimizer then keeps a split, which does not depend on the budget's
size). A cached plan holds `Slot` leaves, never the user's buffers, so it keeps no data alive.
"""
from __future__ import annotations

import threading
import itertools

from numpy import ndarray

from tracer.cuda_kernels.executor import buffer_contiguous
from tracer.ir.node import Node, Slot, make
from tracer.ir.config import CONFIG
from . import budget

MAX_PLANS = 256


class Entry:
    __slots__ = ("program", "slots", "res", "slot_ids", "used")

    def __init__(self, program, slots, res):
        self.program, self.slots, self.res = program, slots, res
        self.slot_ids = [id(s) for s in slots]  # the keys of a run's `bind`
        self.used = 0  # when it was last looked up (_CLOCK): the least recent goes first


_PLANS: dict = {}
_CLOCK = itertools.count()
_LOCK = threading.Lock()  # jit() looks plans up outside an evaluation, from any thread


def signature(roots: list[Node], backend: str
              ) -> tuple[tuple, list[Node], list[Node], list]:
    """(key, leaves in key order, order, the leaves' buffers): the plan-cache key of the roots'
    graph, built in the same walk as its toposort (`order`, toposort(roots)'s order node for
    node: each node after its inputs in their order, where leaves are placed as they are met
    and an inner input is walked before the inputs after it). The key may be unhashable (an
    attribute that is): `get` then raises TypeError."""
    pos: dict[Node, int] = {}  # (nodes hash and compare by identity)
    leaves: list[Node] = []
    bufs: list = []
    order: list[Node] = []
    disabled = CONFIG.disable_passes
    key: list = [backend, tuple(sorted(disabled)) if disabled else (),
                 budget.active() is not None]
    for root in roots:
        stack = [root]
        while stack:
            n = stack[-1]
            if n in pos:
                stack.pop()
                continue
            ins = n.inputs
            blocked = False
            for i in ins:  # n's inputs in order: a leaf placed at once, an inner one first
                if i in pos:
                    continue
                if i.inputs:
                    stack.append(i)
                    blocked = True
                    break
                pos[i] = len(order)
                order.append(i)
                if i.op == "input":
                    leaves.append(i)
                    buf = i.attrs[0][1]
                    bufs.append(buf)
                    v = buf.value
                    key.append((i.shape, i.dtype, v.flags.c_contiguous if type(v) is ndarray
                                else buffer_contiguous(buf)))
                else:
                    key.append((i.op, (), i.shape, i.dtype, i.attrs))
            if blocked:
                continue
            stack.pop()
            pos[n] = len(order)
            order.append(n)
            if len(ins) == 2:
                key.append((n.op, (pos[ins[0]], pos[ins[1]]), n.shape, n.dtype, n.attrs))
            elif ins:
                key.append((n.op, tuple(map(pos.__getitem__, ins)), n.shape, n.dtype, n.attrs))
            elif n.op == "input":  # a root that is a leaf
                leaves.append(n)
                bufs.append(n.attrs[0][1])
                key.append((n.shape, n.dtype, buffer_contiguous(n.attrs[0][1])))
            else:
                key.append((n.op, (), n.shape, n.dtype, n.attrs))
    key.append((pos[roots[0]],) if len(roots) == 1 else tuple(map(pos.__getitem__, roots)))
    return tuple(key), leaves, order, bufs


def with_slots(roots: list[Node], leaves: list[Node], order: list[Node]
               ) -> tuple[list[Node], list[Node], list[Node]]:
    """(roots, slots, order): the graph with every leaf replaced by a Slot leaf of the same
    type and layout, and its toposort (`order`'s, node for node)."""
    new: dict[int, Node] = {}
    slots = []
    for leaf in leaves:
        s = make("input", (), leaf.shape, leaf.dtype,
                 (("buf", Slot(buffer_contiguous(leaf.attr("buf")))),))
        new[id(leaf)] = s
        slots.append(s)
    for n in order:
        if id(n) not in new:
            new[id(n)] = make(n.op, tuple(new[id(i)] for i in n.inputs), n.shape, n.dtype,
                              n.attrs)
    return [new[id(r)] for r in roots], slots, [new[id(n)] for n in order]


def get(key):
    """The cached entry for this key, or None (a hit stamps it as used now: put evicts the
    least recently used). TypeError: the key is unhashable (the graph cannot be cached)."""
    entry = _PLANS.get(key)  # (one dict lookup: atomic, no lock needed)
    if entry is not None:
        entry.used = next(_CLOCK)
    return entry


def put(key, entry: Entry) -> None:
    with _LOCK:
        entry.used = next(_CLOCK)
        _PLANS[key] = entry
        if len(_PLANS) > MAX_PLANS:
            oldest = min(_PLANS, key=lambda k: _PLANS[k].used)
            del _PLANS[oldest]
