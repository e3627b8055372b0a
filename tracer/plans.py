"""Plan cache (filled by tracer/engine.py): a graph evaluated again with the same structure reuses its optimized, lowered
program, so a loop that rebuilds the same expression pays neither the optimizer nor lowering
again (about 0.5 ms for a small graph); only the input buffers are rebound.

The key is everything a plan may depend on: each node's op, input positions, shape, dtype and
attributes, which leaves are the same buffer, each leaf's layout, the roots, the backend, the
passes switched off and whether a memory budget is active (the optimizer then keeps a split,
which does not depend on the budget's size). A cached plan holds `Slot` leaves, never the
user's buffers, so it keeps no data alive.

Two kinds of value stay out of the key, as sizes stay out of kernel keys: scalar constants
and slice starts (an integer index is a slice of length 1). The graph's first sighting is
planned with them as they are (the simplifier reads constants); a sighting with other values
plans once more, with the values that changed lifted into runtime parameters: a constant
becomes a 0-d leaf, a slice a `dynamic_slice` whose starts are an int64 leaf. That plan then
serves every value, so a loop whose body differs between iterations only in these values
optimizes twice and compiles at most two sets of kernels, however long it runs. The lifted
graph computes what the graph did (its ops see the same values, as leaves), so its results
are the same bits. Under a memory budget nothing is lifted: a budgeted run maps the plan's
split onto the user's graph node for node.
"""
from __future__ import annotations

import threading
import itertools

import numpy as np
from numpy import ndarray

from tracer.cuda_kernels.executor import buffer_contiguous
from tracer.ir.node import Buffer, Node, Slot, make
from tracer.ir.config import CONFIG
from . import budget

MAX_PLANS = 256  # graph structures kept (Family), and plans with constants kept in one
_INT64 = np.dtype(np.int64)


class Entry:
    __slots__ = ("program", "slots", "res", "slot_ids", "params", "param_ids", "lifted",
                 "fixed")

    def __init__(self, program, slots, res, params=(), lifted=(), n_values=0):
        self.program, self.slots, self.res = program, slots, res
        self.slot_ids = [id(s) for s in slots]  # the keys of a run's `bind`
        # the lifted values' leaves, and their positions among signature's `n_values` values
        # (the others: `fixed`)
        self.params, self.lifted = params, lifted
        lift = set(lifted)
        self.fixed = [k for k in range(n_values) if k not in lift]
        self.param_ids = [id(p) for p in params]

    def param_buffers(self, values: list) -> list[Buffer]:
        """The buffers of this graph's lifted values, for `params`."""
        out = []
        for p, k in zip(self.params, self.lifted):
            v = values[k]
            # a constant's value is the first of its attrs (node.make_const); starts a tuple
            out.append(Buffer(np.array(v, _INT64) if p.shape else
                              np.asarray(p.dtype.type(v[0][1]))))
        return out


class Family:
    """The plans of one graph structure (one key): by the values signature() keeps out of the
    key (`exact`, planned with them as constants), and the plan with the values that have
    changed lifted into parameters (`lifted`: it serves every values equal to `values` at its
    `fixed` positions)."""
    __slots__ = ("values", "exact", "lifted", "used")

    def __init__(self, values: list):
        self.values = values  # at the first sighting
        self.exact: dict[tuple, Entry] = {}
        self.lifted: Entry | None = None
        self.used = 0  # when it was last looked up (_CLOCK): the least recent goes first


_PLANS: dict = {}
_CLOCK = itertools.count()
_LOCK = threading.Lock()  # jit() looks plans up outside an evaluation, from any thread


def signature(roots: list[Node], backend: str
              ) -> tuple[tuple, list, list[Node], list[Node], list[Node], list]:
    """(key, values, their nodes, leaves in key order, order, the leaves' buffers): the
    plan-cache key of the roots' graph, built in the same walk as its toposort (`order`,
    toposort(roots)'s order node for node: each node after its inputs in their order, where
    leaves are placed as they are met and an inner input is walked before the inputs after
    it). `values`: what the key leaves out, a constant's attrs and a slice's starts, in walk
    order. The key may be unhashable (an attribute that is): `find` then raises TypeError."""
    pos: dict[Node, int] = {}  # (nodes hash and compare by identity)
    leaves: list[Node] = []
    bufs: list = []
    order: list[Node] = []
    values: list = []
    holders: list[Node] = []
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
                elif i.op == "const":
                    key.append((i.op, i.dtype))
                    values.append(i.attrs)
                    holders.append(i)
                else:
                    key.append((i.op, (), i.shape, i.dtype, i.attrs))
            if blocked:
                continue
            stack.pop()
            pos[n] = len(order)
            order.append(n)
            if len(ins) == 2:
                key.append((n.op, (pos[ins[0]], pos[ins[1]]), n.shape, n.dtype, n.attrs))
            elif n.op == "slice":  # its shape and steps, its starts a value
                sl = n.attrs[0][1]
                key.append((n.op, pos[ins[0]], n.shape, n.dtype, tuple([s[2] for s in sl])))
                values.append(tuple([s[0] for s in sl]))
                holders.append(n)
            elif len(ins) == 1:
                key.append((n.op, (pos[ins[0]],), n.shape, n.dtype, n.attrs))
            elif ins:
                key.append((n.op, tuple(map(pos.__getitem__, ins)), n.shape, n.dtype, n.attrs))
            elif n.op == "input":  # a root that is a leaf
                leaves.append(n)
                bufs.append(n.attrs[0][1])
                key.append((n.shape, n.dtype, buffer_contiguous(n.attrs[0][1])))
            elif n.op == "const":
                key.append((n.op, n.dtype))
                values.append(n.attrs)
                holders.append(n)
            else:
                key.append((n.op, (), n.shape, n.dtype, n.attrs))
    key.append((pos[roots[0]],) if len(roots) == 1 else tuple(map(pos.__getitem__, roots)))
    return tuple(key), values, holders, leaves, order, bufs


def with_slots(roots: list[Node], leaves: list[Node], order: list[Node],
               lift: list[Node] = ()) -> tuple[list[Node], list[Node], list[Node], list[Node]]:
    """(roots, slots, params, order): the graph with every leaf replaced by a Slot leaf of
    the same type and layout, and each node of `lift` (constants and slices, of signature's
    value holders) by a parameter: a constant by a 0-d Slot leaf (its param), a slice by a
    dynamic_slice reading its starts from an int64 Slot leaf (its param); and its toposort
    (`order`'s, node for node, the params placed before their users)."""
    new: dict[int, Node] = {}
    slots = []
    for leaf in leaves:
        s = make("input", (), leaf.shape, leaf.dtype,
                 (("buf", Slot(buffer_contiguous(leaf.attr("buf")))),))
        new[id(leaf)] = s
        slots.append(s)
    params = []
    param_of: dict[int, Node] = {}
    for n in lift:
        shape, dtype = ((), n.dtype) if n.op == "const" else ((n.ndim,), _INT64)
        p = make("input", (), shape, dtype, (("buf", Slot(True)),))
        param_of[id(n)] = p
        params.append(p)
    new_order = []
    for n in order:
        p = param_of.get(id(n))
        if p is not None and n.op == "const":
            m = p
        elif p is not None:
            new_order.append(p)
            m = make("dynamic_slice", (new[id(n.inputs[0])], p), n.shape, n.dtype,
                     (("lengths", n.shape), ("steps", tuple(s[2] for s in n.attr("slices")))))
        else:
            m = new.get(id(n))
            if m is None:
                m = make(n.op, tuple(new[id(i)] for i in n.inputs), n.shape, n.dtype, n.attrs)
        new[id(n)] = m
        new_order.append(m)
    return [new[id(r)] for r in roots], slots, params, new_order


def find(key, values: list) -> tuple[Entry, list] | None:
    """(the cached entry for this key and values, the buffers of its params), or None (a
    hit stamps it as used now: put evicts the least recently used). TypeError: the key is
    unhashable (the graph cannot be cached)."""
    fam = _PLANS.get(key)  # (one dict lookup: atomic, no lock needed)
    if fam is None:
        return None
    fam.used = next(_CLOCK)
    entry = fam.exact.get(tuple(values))
    if entry is not None:
        return entry, []
    entry = fam.lifted
    if entry is not None and CONFIG.lift != "none":
        first = fam.values
        for k in entry.fixed:
            if values[k] != first[k]:
                return None
        return entry, entry.param_buffers(values)
    return None


def to_lift(key, values: list) -> list[int]:
    """The positions of `values` a new plan for them lifts into parameters: none at a first
    sighting of the key (or under a memory budget), else every position whose value differs
    from the first sighting's or was lifted before (CONFIG.lift "changed"); every position
    under "all", none under "none"."""
    if budget.active() is not None or CONFIG.lift == "none":
        return []
    if CONFIG.lift == "all":
        return list(range(len(values)))
    fam = _PLANS.get(key)
    if fam is None:
        return []
    was = set(fam.lifted.lifted) if fam.lifted is not None else set()
    return [k for k, (v, w) in enumerate(zip(values, fam.values)) if v != w or k in was]


def put(key, values: list, entry: Entry) -> None:
    with _LOCK:
        fam = _PLANS.get(key)
        if fam is None:
            fam = _PLANS[key] = Family(values)
        fam.used = next(_CLOCK)
        if entry.params:
            fam.lifted = entry
        else:
            fam.exact[tuple(values)] = entry
            if len(fam.exact) > MAX_PLANS:  # (under a budget, which lifts nothing)
                del fam.exact[next(iter(fam.exact))]
        if len(_PLANS) > MAX_PLANS:
            oldest = min(_PLANS, key=lambda k: _PLANS[k].used)
            del _PLANS[oldest]


def entries() -> list[Entry]:
    """Every cached plan."""
    return [e for fam in list(_PLANS.values())
            for e in [*fam.exact.values(), *([fam.lifted] if fam.lifted else [])]]
