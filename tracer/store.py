"""The lazy value store and its evaluation, below the array class.

A `Var` is a base buffer: its current value as a node (a realized leaf, or a graph still to
compute). Vars whose value is pending are kept (weakly) so a long loop flushes them; evaluation
computes a set of Vars through the engine and makes each a realized leaf. `to_numpy` reads an
array's values (its Var evaluated, its view steps replayed by NumPy).
"""
from __future__ import annotations

import operator
import threading
import weakref

import numpy as np

from tracer.cuda_kernels import backends
from tracer.cuda_kernels.backends import to_host
from tracer.cuda_kernels.cuda.memory import LIVE as _BORROWED, Borrowed, overlaps_borrowed
from tracer.ir.node import Buffer, Node, host_leaf, make_leaf, toposort
from tracer.ir.config import CONFIG
from . import budget, debug
from .view import apply_view_numpy

engine = None  # tracer.engine once _engine() has imported it


def _engine():
    """tracer.engine, imported at the first evaluation: it loads the optimizer, lowering and
    the kernel executor, which `import tracer.numpy` and a program whose ops all run eagerly
    never need."""
    global engine
    if engine is None:
        import tracer.engine as engine  # lazy: loaded on the first evaluation (startup cost)
    return engine

# id(variable) -> a weak reference to it: the variables whose value may be a graph still to
# compute. No callbacks (a dead variable costs nothing): its entry stays until a walk over the
# table drops it (_live) or a variable made at the same address replaces it, and flush()
# empties the table at least every CONFIG.flush_nodes records.
_PENDING: dict[int, weakref.ref] = {}
_ref = weakref.ref
_pending_nodes = 0
LOCK = threading.RLock()  # the Var store and the pending set; an evaluation holds it throughout


class Var:
    """A base buffer: its current value as a node. Writes replace `node` and bump `version`."""

    __slots__ = ("node", "version", "owner", "__weakref__")
    borrows = False  # whether a Borrowed leaf is this base's own memory (interchange.Alias)

    def __init__(self, node: Node):
        if node.op != "input":
            node = debug.recorded(node)
        else:
            if BORROWED_SET:
                node = _unborrowed(node, self)
            shared(node.attrs[0][1], self)
        self.node = node
        self.owner = None  # the array that owns this buffer (weak): views' `.base`
        self.version = 0
        if node.op != "input":
            _note_pending(self)

    def assign(self, node: Node) -> None:
        if node.op != "input":
            node = debug.recorded(node)
        else:
            if BORROWED_SET:
                node = _unborrowed(node, self)
            shared(node.attrs[0][1], self)
        with LOCK:
            self.node = node
            self.version += 1
            if node.op != "input":
                _note_pending(self)


NODE_SLOT = Var.node  # Var's own slot, under HostVar's property


def _unborrowed(leaf: Node, var: Var) -> Node:
    """leaf, or a leaf holding a copy of it where it is memory another library owns and var
    is not the base over it (`x.copy()` of such a base, which the optimizer made the leaf
    itself): only that base sees the producer's later writes."""
    buf = leaf.attrs[0][1]
    if var.borrows or type(buf) is not Borrowed:
        return leaf
    return make_leaf(leaf.shape, leaf.dtype, copy_of(buf.value))


def copy_of(v) -> Buffer:
    """A buffer holding a copy of host or device array v, on the same side."""
    if isinstance(v, np.ndarray):
        return Buffer(np.array(v, copy=True))
    be = backends.get("cuda")
    out = be.empty(tuple(v.shape), v.dtype)
    out.copy_to_device(be.contiguous(v), stream=be.stream())
    return Buffer(out)


class HostVar(Var):
    """A Var over a new NumPy array (tracer.eager.wrap) whose leaf node is made when first
    asked for; until then its `node` slot holds the array (tracer.eager.host reads it). Most
    small results are only read by NumPy and dropped: they never need a node. Asked, it
    becomes a Var."""

    __slots__ = ()

    @property
    def node(self) -> Node:
        with LOCK:
            if type(self) is HostVar:
                NODE_SLOT.__set__(self, host_leaf(NODE_SLOT.__get__(self)))
                self.__class__ = Var
        return NODE_SLOT.__get__(self)

    @node.setter
    def node(self, node: Node) -> None:
        NODE_SLOT.__set__(self, node)
        self.__class__ = Var


# ---- buffers one Var alone holds, which tracer.eager writes into in place
# id(host array) -> the Buffer that owns it (weak: an entry goes with its buffer)
_OWNED: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()


def own(buf, var: Var) -> None:
    """var alone holds buf: it may write into it."""
    buf.owner = id(var)
    mem = id(buf.host if buf.host is not None else buf.value)  # (a device array: its value)
    old = _OWNED.get(mem)
    if old is not None and old is not buf:  # a leaf written in place: its buffer is buf's now
        old.owner = None
    _OWNED[mem] = buf


def shared(buf, var: "Var | None" = None) -> None:
    """buf (held now by var, or by a result) may share memory with an owned buffer: its owner
    must copy before it writes again."""
    if buf.owner is not None and buf.owner != id(var):
        buf.owner = None
    if not _OWNED.data:  # (no buffer is owned: the usual case where eager mode is off)
        return
    h = buf.host
    while h is not None:
        o = _OWNED.get(id(h))
        if o is not None and o is not buf:
            o.owner = None
        h = h.base if isinstance(h.base, np.ndarray) else None


def any_pending() -> bool:
    """Whether some variable's value is still a graph to compute (one that may read any
    realized buffer). Realized ones found on the way leave the pending set."""
    if not _PENDING:
        return False
    with LOCK:
        for k, r in list(_PENDING.items()):
            v = r()
            if v is not None and v.node.op != "input":
                return True
            if _PENDING.get(k) is r:
                del _PENDING[k]
    return False


def _is_pending(v: Var) -> bool:
    r = _PENDING.get(id(v))
    return r is not None and r() is v


def _alone(v: Var) -> bool:
    """Whether v is the only variable pending. A short table is cleaned on the way: the
    temporaries of `(a * b + c).sum()` have died but are still in it."""
    if len(_PENDING) == 1:
        return _is_pending(v)
    if len(_PENDING) > 8:  # (then _extras walks the table)
        return False
    live = _live()
    return len(live) == 1 and live[0] is v


def _live() -> list[Var]:
    """The variables whose value is a graph still to compute; the table loses the others."""
    out = []
    for k, r in list(_PENDING.items()):
        v = r()
        if v is not None and v.node.op != "input":
            out.append(v)
        elif _PENDING.get(k) is r:
            del _PENDING[k]
    return out


# the threads that recorded a graph (thread idents): one may hold a node of it in a local,
# outside any variable, while another evaluates (store.writable_leaves)
_RECORDERS: set[int] = set()
_ident = threading.get_ident


def _note_pending(v: Var) -> None:
    """v's value is a graph now. (No lock: one dict store; flush() takes only what it saw.)"""
    global _pending_nodes
    _RECORDERS.add(_ident())
    _PENDING[id(v)] = _ref(v)
    _pending_nodes += 1
    if _pending_nodes > CONFIG.flush_nodes:
        flush()
    if BORROWED_SET and reads_borrowed(v.node):
        evaluate_vars([v])


# ---- memory other libraries own (tracer/interchange.py)
BORROWED_SET = _BORROWED.data  # (the WeakSet's own set: a cheap test in the hot paths)
_CLEAN: "weakref.WeakSet[Node]" = weakref.WeakSet()  # graph nodes found to read none of it


def reads_borrowed(node: Node) -> bool:
    """Whether node's value reads memory another library owns (a Borrowed leaf): such a value
    is computed when it is recorded, as NumPy computes it, for the producer may write the
    memory at any time after. Each node is walked once (_CLEAN)."""
    stack, seen, walked = list(node.inputs), set(), [node]
    while stack:
        n = stack.pop()
        if id(n) in seen or n in _CLEAN:
            continue
        seen.add(id(n))
        if n.op == "input":
            if type(n.attrs[0][1]) is Borrowed:
                return True
            continue
        walked.append(n)
        stack.extend(n.inputs)
    for n in walked:
        _CLEAN.add(n)
    return False


def flush() -> None:
    """Evaluate every pending base, so a long loop never grows the graph without bound."""
    global _pending_nodes
    with LOCK:
        _pending_nodes = 0
        live = _live()
        for v in live:  # (a variable another thread records meanwhile stays)
            _PENDING.pop(id(v), None)
        if live:
            evaluate_vars(live, strict=False)  # a failed value keeps its error until read


def evaluate_vars(vars_: list[Var], strict: bool = True) -> None:
    """Compute the variables and make their nodes realized leaves. An evaluation error stays
    with the variables whose value depends on the op that raised it: they stay as they are
    (reading one raises it again), the others are computed. `strict`: raise the error of a
    variable asked for (a read), else keep it for later (a flush)."""
    with LOCK:
        if len(vars_) == 1:  # (the usual read)
            v = vars_[0]
            if v.node.op == "input" or not strict and _failed(v):
                return
            targets = [v]
            if not CONFIG.small_graph and _alone(v):
                failed = _realize(targets, False)  # nothing else pending: no extras
                if strict and failed:
                    raise failed[id(v)]
                return
            seen = {id(v)}
        else:
            targets = []
            seen = set()
            for v in vars_:
                if v.node.op != "input" and id(v) not in seen and (strict or not _failed(v)):
                    seen.add(id(v))
                    targets.append(v)
            if not targets:
                return
        allv = targets + _extras(targets, seen)
        failed: dict[int, Exception] = {}
        for group, small in _by_size(allv):
            failed.update(_realize(group, small))
    if strict and failed:
        errors = [failed[id(v)] for v in targets if id(v) in failed]
        if errors:
            raise errors[0]


def _extras(targets: list[Var], seen: set[int]) -> list[Var]:
    """Live arrays whose value is computed on the way, kept too so they are not recomputed;
    not under a memory budget, where keeping them (the N x M distances behind a min) could
    need all the memory the budget saves. Also kept: live arrays a few ops past the graph
    (`w -= lr * g` after evaluating `g`): a loop that checks a value each step would otherwise
    recompute their whole history. Arrays whose evaluation failed are left alone."""
    if budget.active() is not None:
        return []
    if len(_PENDING) <= len(targets) and all(map(_is_pending, targets)):
        return []  # nothing pending but the targets (distinct, so they are all of it)
    others = [v for v in _live() if id(v) not in seen]  # (LOCK is held)
    if not others:
        return []
    in_graph = {id(n) for n in toposort([v.node for v in targets])}
    return [v for v in others if not _failed(v)
            and v.node.op not in ("const", "broadcast_to")
            and (id(v.node) in in_graph or _near(v.node, in_graph))]


# variable -> its node whose evaluation failed (both weak: neither is kept alive)
_FAILED: "weakref.WeakKeyDictionary[Var, weakref.ref]" = weakref.WeakKeyDictionary()


def _failed(v: Var) -> bool:
    if not _FAILED:
        return False
    ref = _FAILED.get(v)
    return ref is not None and ref() is v.node


def _realize(group: list[Var], small: bool) -> dict[int, Exception]:
    """Evaluate the group's variables together and make each a realized leaf unless it was
    assigned meanwhile (compare and set on the node evaluated: LOCK keeps other threads out,
    but it is reentrant). On an error, the variables that depend on the op that raised it are
    set aside with it and the rest are evaluated again. Returns {id(var): error} for those set
    aside."""
    failed: dict[int, Exception] = {}
    while group:
        nodes = list(map(_node_of, group))
        try:
            # the run may write into what the group alone holds, and the group owns the new
            # buffers no other holds
            bufs = _engine().execute(nodes, small, writable_leaves(group),
                                     lambda i, buf: own(buf, group[i]))
        except Exception as e:
            hit = _depends_on(nodes, debug.failed_op(e))
            for v, n, h in zip(group, nodes, hit):
                if h:
                    failed[id(v)] = e
                    _FAILED[v] = weakref.ref(n)
            group = [v for v, h in zip(group, hit) if not h]
            continue
        for v, n, buf in zip(group, nodes, bufs):
            if BORROWED_SET and overlaps_borrowed(buf):  # a result is never memory another
                buf = copy_of(buf.value)  # library may write
            if buf.owner is not None or _OWNED.data:
                shared(buf, v)  # an output may be an input's buffer, or a view of it
            if v.node is n:
                v.node = make_leaf(n.shape, n.dtype, buf)
                _PENDING.pop(id(v), None)
        break
    global _pending_nodes  # what is left pending since the last flush: at most what remains
    _pending_nodes = min(_pending_nodes, len(_PENDING))  # (a warm loop flushed mid-way else)
    return failed


# nodes walked, at most, to find whether another pending value reads a leaf (a longer walk
# costs more than the copy it would save)
READERS_WALK = 4096


def writable_leaves(holders: list[Var]):
    """A predicate on the leaves of the holders' graph: whether an evaluation that gives the
    holders their new values may write into the leaf's buffer. It may where a holder alone
    holds the buffer (Buffer.owner: no other variable, view or result shares it) and no
    other pending value, nor one whose evaluation failed (kept to raise again), reads it,
    and no other thread records graphs; that the graph itself reads it no more is the
    caller's part (ir.interp.inplace_updates, opt/liveness.py). The caller holds LOCK. What
    it needs is found at the first leaf a holder owns (most evaluations ask of none)."""
    state: list = []  # [the holders' ids, or None; the other values' leaves, or None]

    def may_write(leaf: Node) -> bool:
        if leaf.op != "input" or leaf.attrs[0][1].owner is None:
            return False
        if not state:
            state.append({id(v) for v in holders} if _no_other_recorder() else None)
        ids = state[0]
        if ids is None or leaf.attrs[0][1].owner not in ids:
            return False
        if len(state) == 1:
            state.append(_leaves_read(
                [v.node for v in _live() if id(v) not in ids]
                + [v.node for v in list(_FAILED.keys()) if id(v) not in ids]))
        return state[1] is not None and id(leaf) not in state[1]
    return may_write


def _no_other_recorder() -> bool:
    """Whether no other live thread has recorded a graph: a node it holds in a local (a value
    it is about to write, or a read it is about to store) may read any leaf."""
    me = _ident()
    if _RECORDERS == {me} or not _RECORDERS:
        return True
    _RECORDERS.intersection_update({t.ident for t in threading.enumerate()})
    return _RECORDERS <= {me}


def _leaves_read(roots: list[Node]) -> set[int] | None:
    """ids of the input leaves the roots' graphs read; None past READERS_WALK nodes."""
    seen: set[int] = set()
    leaves: set[int] = set()
    stack = [r for r in roots if r.op != "const"]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if len(seen) > READERS_WALK:
            return None
        if n.op == "input":
            leaves.add(id(n))
        stack.extend(n.inputs)
    return leaves


def _depends_on(roots: list[Node], bad: Node | None) -> list[bool]:
    """Per root, whether its value reads `bad` (every root when the failed op is unknown)."""
    if bad is None:
        return [True] * len(roots)
    hit: dict[int, bool] = {}
    for n in toposort(roots):
        hit[id(n)] = n is bad or any(hit[id(i)] for i in n.inputs)
    got = [hit[id(r)] for r in roots]
    return got if any(got) else [True] * len(roots)


NEAR_OPS = 8  # "a few ops past the graph"


def _near(root: Node, in_graph: set[int]) -> bool:
    """Whether root reads the graph and needs at most NEAR_OPS nodes beyond it (leaves aside)."""
    stack, seen, reads = [root], set(), False
    while stack:
        n = stack.pop()
        if id(n) in in_graph:
            # a computed value: consts and their broadcasts are shared by unrelated graphs
            reads = reads or n.op not in ("input", "const", "broadcast_to", "reshape",
                                          "transpose")
            continue
        if id(n) in seen or n.op in ("input", "const"):
            continue
        seen.add(id(n))
        if len(seen) > NEAR_OPS:
            return False
        stack.extend(n.inputs)
    return reads


_node_of = operator.attrgetter("node")


def _by_size(vars_: list[Var]) -> list[tuple[list, bool]]:
    """(variables, small) for each evaluation: the variables whose values run by NumPy op by op
    (engine.small_roots) apart from the rest, so they are not compiled along with a big one."""
    if not CONFIG.small_graph:
        return [(vars_, False)]
    small = _engine().small_roots(list(map(_node_of, vars_)))
    if not any(small):
        return [(vars_, False)]
    groups = ([v for v, s in zip(vars_, small) if s], [v for v, s in zip(vars_, small) if not s])
    return [(g, g is groups[0]) for g in groups if g]


def to_numpy(a) -> np.ndarray:
    """The values of lazy array `a` (read-only NumPy array): its Var evaluated, its view's
    steps replayed by NumPy."""
    with LOCK:  # another thread may assign the variable once it is realized
        var = a._var
        if var.node.op != "input":
            evaluate_vars([var])
        buf = var.node.attrs[0][1]
    steps = a._view.steps
    if steps and buf.host is None and hasattr(buf, "fetch"):  # held on a cluster: the view's
        out = buf.fetch(steps)  # elements only (tracer/dask_cluster.py)
    else:
        host = to_host(buf)
        out = apply_view_numpy(host, steps).view() if steps else host.view()
    out.flags.writeable = False
    return out
