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
from tracer import opt
from tracer.ir import Buffer, Node, format_graph, make, toposort
from tracer.ir.interp import run_graph
from tracer.ir.config import CONFIG
from tracer.ir.stats import STATS
from . import budget, debug, plans
from .array import LOCK, Var, ndarray, pending_vars, apply_view_numpy
from .functions import FOREIGN_KINDS


class TracerFallbackWarning(UserWarning):
    """A NumPy function ran eagerly on evaluated inputs because tracer has no lazy version."""


_FALLBACK_SITES: dict[tuple[str, str, int], int] = {}
user_frame = debug.user_frame


def backend() -> str:
    return cuda_kernels.default_backend(CONFIG.backend)


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
            bufs = execute(nodes, small)
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
    """(variables, small) for each evaluation: on cpu outside a budget, the variables whose
    every value has at most CONFIG.small_graph elements apart from the rest, so they run by
    NumPy (see execute) instead of being compiled along with a big one."""
    limit = CONFIG.small_graph
    if not limit or budget.active() is not None or backend() != "cpu":
        return [(vars_, False)]
    big: dict[int, bool] = {}
    for n in toposort(roots):
        big[id(n)] = n.size > limit or any(big[id(i)] for i in n.inputs)
    small = [v for v, r in zip(vars_, roots) if not big[id(r)]]
    rest = [v for v, r in zip(vars_, roots) if big[id(r)]]
    return [(g, g is small) for g in (small, rest) if g]


_PHASES = ("trace_s", "optimize_s", "codegen_s", "load_s", "compile_s", "run_s")
_TRACE_AT = [0.0]  # stats().trace_s at the end of the last evaluation


def execute(roots: list[Node], small: bool = False) -> list:
    """The roots' values. `small`: every value is small (evaluate_vars decides): run them by
    NumPy op by op, unoptimized, where optimizing and compiling would cost more."""
    STATS.evaluations += 1
    if small:
        return _interpret(roots)
    phases0 = [getattr(STATS, p) for p in _PHASES] if CONFIG.debug >= 1 else None
    if phases0:
        phases0[0] = min(_TRACE_AT[0], STATS.trace_s)  # tracing happened before this call
    t0 = time.perf_counter()
    program, res, bind = plans.plan(roots, backend())
    # the optimizer's own time (lowering's codegen and compiles are counted apart), or the
    # plan cache lookup
    STATS.optimize_s += res.seconds if res is not None else time.perf_counter() - t0
    STATS.plan_cache_hits += res is None
    _RUNNING[0] += 1
    try:
        bufs = _run(roots, program, bind)
    except Exception as e:
        if _RUNNING[0] == 1:  # the user's graph, not a chunk of it
            debug.locate_error(roots, e)
        raise
    finally:
        _RUNNING[0] -= 1
    if CONFIG.check_nans and not _RUNNING[0]:
        debug.check_outputs(roots, [cuda_kernels.to_host(b) for b in bufs])
    if CONFIG.debug >= 1:
        how = "cached plan" if res is None else "new plan"
        spent = ", ".join(f"{p[:-2]} {(getattr(STATS, p) - v) * 1e3:.2f} ms"
                          for p, v in zip(_PHASES, phases0))
        print(f"[tracer] evaluated {len(roots)} outputs: {len(program.kernels)} kernels, {how}; "
              f"{spent}", file=sys.stderr)
        _TRACE_AT[0] = STATS.trace_s
    if res is None:
        return bufs
    if CONFIG.debug >= 2:
        print(format_graph(res.roots), file=sys.stderr)
    if CONFIG.debug >= 3:
        for name, sec, changed in res.passes:
            print(f"[tracer]   pass {name:<20} {sec * 1e3:8.3f} ms {'changed' if changed else ''}",
                  file=sys.stderr)
    if CONFIG.debug >= 4:
        for k in program.kernels:
            print(f"[tracer] kernel {k.name}\n{k.source}", file=sys.stderr)
    return bufs


_RUNNING = [0]  # nesting of execute(): a budget runs chunks through it


def _interpret(roots: list[Node]) -> list:
    """Run a small graph op by op with NumPy, unoptimized: a few microseconds an op, where
    optimizing it and compiling its kernels would take milliseconds to seconds."""
    t0 = time.perf_counter()
    STATS.small_graphs += 1
    try:
        vals = run_graph(roots, leaf=debug.host_value)
    except Exception as e:
        debug.locate_error(roots, e)
        raise
    STATS.run_s += time.perf_counter() - t0
    if CONFIG.check_nans:
        debug.check_outputs(roots, vals)
    return [Buffer(np.asarray(v)) for v in vals]


def _run(roots: list[Node], program, bind) -> list:
    limit = budget.active()
    if limit is not None:
        return budget.run(roots, program, bind, limit, backend(), execute)
    return cuda_kernels.run(program, bind)


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


# ------------------------------------------------------------------ explain

class Plan:
    """What evaluating some arrays would do: graphs, passes, kernels and their source."""

    def __init__(self, before: list[Node], res, program):
        self.graph_before = _Graph(before)
        self.graph_after = _Graph(res.roots)
        self.passes = res.passes
        self.pass_effects = res.effects  # [PassEffect]: nodes and op histogram around each pass
        self.kernels = program.kernels
        self.peak_bytes = program.peak_bytes
        self.bytes_copied = program.bytes_copied
        self.backend = program.backend
        self._kernel_of = program.kernel_of

    def to_dot(self, before: bool = False) -> str:
        """The graph after optimization (or `before` it) as Graphviz DOT text; each fused
        kernel is a cluster."""
        from .drawing import to_dot
        if before:
            return to_dot(self.graph_before.roots, title="tracer: before")
        return to_dot(self.graph_after.roots, self._kernel_of, title="tracer: after")

    def save(self, path: str, before: bool = False) -> str:
        """Draw the graph to `path` (svg, png, pdf... by Graphviz; the DOT text when Graphviz
        is not installed or the path ends in .dot). Returns the path written."""
        from .drawing import save
        return save(self.to_dot(before), path)

    def __str__(self) -> str:
        out = [f"== graph before ({len(toposort(self.graph_before.roots))} nodes)",
               str(self.graph_before), "== passes"]
        out += [f"  {e}" for e in self.pass_effects]
        out += [f"== graph after ({len(self.kernels)} kernels, backend {self.backend})",
                str(self.graph_after), f"== peak_bytes {self.peak_bytes}, "
                f"bytes_copied {self.bytes_copied}"]
        for k in self.kernels:
            out += [f"== kernel {k.name} ({k.kind}, {k.backend})", k.source]
        return "\n".join(out)

    __repr__ = __str__


class _Graph:
    def __init__(self, roots):
        self.roots = list(roots)

    def __str__(self) -> str:
        return format_graph(self.roots)

    __repr__ = __str__


def explain(*arrays) -> Plan:
    roots = [a._node for a in arrays]
    res = opt.optimize(roots, record=True)
    program = cuda_kernels.lower(res.roots, backend())
    return Plan(roots, res, program)


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
