"""Materialization: optimize, lower to kernels, run; plus explain() and the NumPy fallback."""
from __future__ import annotations

import numbers
import sys
import time
import warnings
import weakref
from typing import Any, Callable

import numpy as np

from tracer import cuda_kernels
from tracer.ir import Node, format_graph, make, toposort
from tracer.ir.stats import STATS
from . import budget, debug, engine
from .array import LOCK, Var, ndarray, pending_vars, apply_view_numpy
from .functions import FOREIGN_KINDS


class TracerFallbackWarning(UserWarning):
    """A NumPy function ran eagerly on evaluated inputs because tracer has no lazy version."""


_FALLBACK_SITES: dict[tuple[str, str, int], int] = {}
user_frame = debug.user_frame


# ------------------------------------------------------------------ evaluation

def _leaf_for(node: Node, buf) -> Node:
    return make("input", (), node.shape, node.dtype, (("buf", buf),))


def evaluate_vars(vars_: list[Var], strict: bool = True) -> None:
    """Compute the variables and make their nodes realized leaves. An evaluation error stays
    with the variables whose value depends on the op that raised it: they stay as they are
    (reading one raises it again), the others are computed. `strict`: raise the error of a
    variable asked for (a read), else keep it for later (a flush)."""
    with LOCK:
        targets: list[Var] = []
        seen = set()
        for v in vars_:
            if v.node.op != "input" and id(v) not in seen and (strict or not _failed(v)):
                seen.add(id(v))
                targets.append(v)
        if not targets:
            return
        allv = targets + _extras(targets, seen)
        failed: dict[int, Exception] = {}
        for group, small in _by_size([v.node for v in allv], allv):
            failed.update(_realize(group, small))
    errors = [failed[id(v)] for v in targets if id(v) in failed]
    if strict and errors:
        raise errors[0]


def _extras(targets: list[Var], seen: set[int]) -> list[Var]:
    """Live arrays whose value is computed on the way, kept too so they are not recomputed;
    not under a memory budget, where keeping them (the N x M distances behind a min) could
    need all the memory the budget saves. Also kept: live arrays a few ops past the graph
    (`w -= lr * g` after evaluating `g`): a loop that checks a value each step would otherwise
    recompute their whole history. Arrays whose evaluation failed are left alone."""
    if budget.active() is not None:
        return []
    in_graph = {id(n) for n in toposort([v.node for v in targets])}
    return [v for v in pending_vars() if id(v) not in seen and not _failed(v)
            and v.node.op not in ("const", "broadcast_to")
            and (id(v.node) in in_graph or _near(v.node, in_graph))]


# variable -> its node whose evaluation failed (both weak: neither is kept alive)
_FAILED: "weakref.WeakKeyDictionary[Var, weakref.ref]" = weakref.WeakKeyDictionary()


def _failed(v: Var) -> bool:
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
        nodes = [v.node for v in group]
        try:
            bufs = engine.execute(nodes, small)
        except Exception as e:
            hit = _depends_on(nodes, debug.failed_op(e))
            for v, n, h in zip(group, nodes, hit):
                if h:
                    failed[id(v)] = e
                    _FAILED[v] = weakref.ref(n)
            group = [v for v, h in zip(group, hit) if not h]
            continue
        for v, n, buf in zip(group, nodes, bufs):
            if v.node is n:
                v.node = _leaf_for(n, buf)
        break
    return failed


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


def _by_size(roots: list[Node], vars_: list) -> list[tuple[list, bool]]:
    """(variables, small) for each evaluation: the variables whose values run by NumPy op by op
    (engine.small_roots) apart from the rest, so they are not compiled along with a big one."""
    small = engine.small_roots(roots)
    if not any(small):
        return [(vars_, False)]
    groups = ([v for v, s in zip(vars_, small) if s], [v for v, s in zip(vars_, small) if not s])
    return [(g, g is groups[0]) for g in groups if g]


def evaluate(*arrays):
    """Compute these arrays together as one graph; returns them (now realized)."""
    evaluate_vars([a._var for a in arrays if isinstance(a, ndarray)])
    return arrays[0] if len(arrays) == 1 else arrays


def to_numpy(a: ndarray) -> np.ndarray:
    with LOCK:  # another thread may assign the variable once it is realized
        evaluate_vars([a._var])
        buf = a._var.node.attr("buf")
    host = cuda_kernels.to_host(buf)
    out = apply_view_numpy(host, a._view.steps).view()
    out.flags.writeable = False
    return out


# ------------------------------------------------------------------ fallback to NumPy

def count_fallback(name: str) -> None:
    STATS.fallbacks += 1
    f = user_frame()
    key = (name, f.f_code.co_filename, f.f_lineno)
    first = key not in _FALLBACK_SITES
    _FALLBACK_SITES[key] = _FALLBACK_SITES.get(key, 0) + 1
    if first:
        warnings.warn_explicit(
            f"tracer: {name} has no lazy implementation; it ran NumPy on evaluated inputs",
            TracerFallbackWarning, f.f_code.co_filename, f.f_lineno,
            module=f.f_globals.get("__name__", "?"))


def coverage_report() -> str:
    if not _FALLBACK_SITES:
        return "no NumPy fallbacks"
    lines = [f"{n:>5}x {name}  at {fn}:{ln}" for (name, fn, ln), n in
             sorted(_FALLBACK_SITES.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines)


def _to_host(x):
    if isinstance(x, ndarray):
        return np.asarray(to_numpy(x))
    # a container with no lazy array in it is passed as is: NumPy may change it in place
    if isinstance(x, (list, tuple)):
        items = [_to_host(i) for i in x]
        if all(a is b for a, b in zip(items, x)):
            return x
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)  # namedtuple
    if isinstance(x, dict):
        items = {k: _to_host(v) for k, v in x.items()}
        return x if all(items[k] is v for k, v in x.items()) else items
    return x


def foreign(x, depth: int = 0) -> bool:
    """Data tracer does not record, so NumPy runs on it: NumPy arrays and scalars of strings,
    objects, records or dates; NumPy subclass arrays (masked, record, user subclasses; a memmap
    is plain data); numbers NumPy holds as objects (Decimal, Fraction); lists of such data or of
    strings."""
    if isinstance(x, np.ndarray):
        return x.dtype.kind in FOREIGN_KINDS or type(x) not in (np.ndarray, np.memmap)
    if isinstance(x, np.generic):
        return x.dtype.kind in FOREIGN_KINDS
    if isinstance(x, (list, tuple)):
        return depth < 2 and any(isinstance(i, (str, bytes)) or foreign(i, depth + 1) for i in x)
    return isinstance(x, numbers.Number) and not isinstance(x, (int, float, complex))


def foreign_operand(x) -> bool:
    """An operand of a ufunc or operator that NumPy must take: foreign data, or any object that
    is not a number, a list or an array (a string, None, an object with NumPy protocols)."""
    if isinstance(x, (np.ndarray, np.generic, list, tuple)):
        return foreign(x)
    return not isinstance(x, (ndarray, int, float, complex))


def numpy_operator(a: ndarray, dunder: str, other):
    """`a <op> other` with a foreign operand: NumPy's operator on a's values (a counted
    fallback), NotImplemented where NumPy defers to `other`; an in-place one writes back."""
    host = np.array(to_numpy(a))
    host.flags.writeable = a._view.writeable
    if a.ndim == 0 and not getattr(a, "_arr0", False):  # it stands for NumPy's scalar
        host = host[()]
        dunder = dunder.replace("__i", "__", 1)  # which has no in-place operators
    r = getattr(host, dunder)(other)
    if r is NotImplemented:
        return r
    count_fallback(f"ndarray.{dunder}")
    if r is host:
        from .indexing import setitem
        setitem(a, Ellipsis, host)
        return a
    return _wrap(r)


def _wrap(x):
    if isinstance(x, np.ndarray):  # strings, objects, subclasses: NumPy's array, as tracer's are
        return x if foreign(x) else ndarray(Var(_leaf_from_numpy(x)))
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):  # NumPy 2's result namedtuples
        return type(x)(*map(_wrap, x))
    if isinstance(x, tuple):
        return tuple(_wrap(i) for i in x)
    if isinstance(x, list):
        return [_wrap(i) for i in x]
    return x


def _leaf_from_numpy(a: np.ndarray) -> Node:
    from . import graph as G
    return G.leaf(cuda_kernels.snapshot(a))


def fallback_call(name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
    count_fallback(name)
    out = kwargs.get("out")
    if isinstance(out, ndarray):  # NumPy fills a host copy, written back through the lazy array
        from .indexing import setitem
        host = np.array(to_numpy(out))
        r = fn(*_to_host(args), **_to_host({**kwargs, "out": host}))
        setitem(out, Ellipsis, host)
        return out if r is host else _wrap(r)
    # lazy arguments go in as writeable copies (as writeable as their view): a NumPy function
    # that writes into one (place, copyto, fill_diagonal, ...) has it written back
    copies: list[tuple[ndarray, np.ndarray, bytes]] = []

    def arg(x):
        if not isinstance(x, ndarray):
            return _to_host(x)
        h = np.array(to_numpy(x))
        h.flags.writeable = x._view.writeable
        copies.append((x, h, h.tobytes()))
        return h
    r = fn(*map(arg, args), **{k: arg(v) for k, v in kwargs.items()})
    if copies:
        from .indexing import setitem
        for x, h, before in copies:  # only what NumPy wrote: an unchanged copy of a view of a
            if h.flags.writeable and h.tobytes() != before:  # written base stays out (bits:
                setitem(x, Ellipsis, h)                       # -0.0 too)
    return out if out is not None and r is out else _wrap(r)  # NumPy's out= is returned as is


def fallback_getattr(module, prefix: str = ""):
    """A module `__getattr__` for tracer.numpy and its submodules: NumPy's attribute, with its
    functions run as counted fallbacks."""
    def __getattr__(name: str):
        obj = getattr(module, name)
        if callable(obj) and not isinstance(obj, type):
            def fallback(*args, **kwargs):
                return fallback_call(prefix + name, obj, args, kwargs)
            fallback.__name__ = name
            fallback.__doc__ = getattr(obj, "__doc__", None)
            return fallback
        return obj
    return __getattr__
