"""Call sites, errors at the user's line, TRACER_EAGER and TRACER_CHECK_NANS.

Every user-level call records where it was made (a raw site: file, line, entry point, module,
made into a `Site` only where one is read), and the nodes it produces remember it (`Node.site`:
it dies with the node). An error raised while a lazy graph runs is
traced back to the op that caused it by running the unoptimized graph again, op by op, with
NumPy (only on that error path); it is then raised again from the user's line of that op, with a
note naming the op. Eager mode (TRACER_EAGER=1, or any op recorded under an `np.errstate` that
raises) runs each op with NumPy as it is recorded, so errors and NumPy's floating-point warnings
surface at the line itself.
"""
from __future__ import annotations

import os
import sys
import warnings
import weakref
from typing import Any

import numpy as np

from tracer.cuda_kernels.backends import to_host
from tracer.cuda_kernels.base import ERROR_HOOKS
from tracer.ir import node as node_module
from tracer.ir.node import Node, make, set_site, toposort, users
from tracer.ir.config import CONFIG
from tracer.ir.interp import apply_ref, eval_node
from . import graph as G

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OUR_DIRS = tuple(os.path.join(_PKG_DIR, d) + os.sep for d in ("tracer", "ir", "opt", "cuda_kernels"))
_NUMPY_PART = os.sep + "numpy" + os.sep
_INTERNAL: dict[str, bool] = {}


def internal(filename: str) -> bool:
    """Whether a frame of this file belongs to tracer or to NumPy's dispatch (cached)."""
    r = _INTERNAL.get(filename)
    if r is None:
        fn = os.path.abspath(filename)
        r = _INTERNAL[filename] = fn.startswith(_OUR_DIRS) or _NUMPY_PART in fn
    return r


def user_frame(depth: int = 1):
    """The innermost frame outside tracer's packages and NumPy's dispatch."""
    f = start = sys._getframe(depth + 1)
    while f is not None and internal(f.f_code.co_filename):
        f = f.f_back
    return f if f is not None else start


class Site:
    """Where the user called tracer: file, line, the entry point called, and the caller's
    module name (its globals hold NumPy's warnings registry). Not the globals themselves: a
    node's site lives as long as the node, and an exec'd namespace holding the node's array
    would then never be freed."""

    __slots__ = ("file", "line", "func", "module")

    def __init__(self, file: str, line: int, func: str, module: str | None):
        self.file, self.line, self.func, self.module = file, line, func, module

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


# the user call being recorded (set by recording.traced): its raw site, a tuple (code object,
# f_lasti, entry point, module) that `site_from_raw` makes a Site of (the line is worked out
# from the code only then). The node layer's own holder: every node built while it is set
# keeps it.
CURRENT: list[tuple | None] = node_module.SITE


def caller_site(func: str) -> tuple:
    """The raw site of the user's call of `func` (see CURRENT)."""
    f = user_frame(2)
    return (f.f_code, f.f_lasti, func, f.f_globals.get("__name__"))


def _line(code, lasti: int) -> int:
    """The line of the instruction at byte offset lasti (as frame.f_lineno reads it)."""
    line = code.co_firstlineno
    for start, end, ln in code.co_lines():
        if start <= lasti < end:
            return ln if ln is not None else line
        if ln is not None:
            line = ln
    return line


def site_from_raw(raw: tuple) -> Site:
    code, lasti, func, module = raw
    return Site(code.co_filename, _line(code, lasti), func, module)


def node_site(n: Node) -> Site | None:
    """Where n was recorded, if it was."""
    raw = n.site
    return None if raw is None else site_from_raw(raw)


# NumPy's error state lives in a context variable whose value is replaced by errstate/seterr;
# whether it raises is cached per value
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _ERR_VAR
except ImportError:  # pragma: no cover - a NumPy without it: ask geterr every time
    _ERR_VAR = None


class _NoState:
    @staticmethod
    def get():
        return None


ERR_STATE = _ERR_VAR if _ERR_VAR is not None else _NoState  # .get(): the state object
_RAISING: dict[int, tuple[Any, bool]] = {}


# the last error state asked about (ERR_STATE.get()) and whether it raises (a state without
# _ERR_VAR is never the last one)
LAST_STATE: list = [object(), False]


def errstate_raises() -> bool:
    if _ERR_VAR is None:
        return "raise" in np.geterr().values()
    obj = _ERR_VAR.get()
    if obj is LAST_STATE[0]:
        return LAST_STATE[1]
    hit = _RAISING.get(id(obj))
    if hit is None or hit[0] is not obj:
        hit = _RAISING[id(obj)] = (obj, "raise" in np.geterr().values())
    LAST_STATE[:] = hit
    return hit[1]


def recorded(node: Node) -> Node:
    """The value a base variable takes for a node just recorded: the node itself, with its call
    site noted, or (eager mode) a leaf holding its value."""
    site = CURRENT[0]
    if site is not None and node.site is None:
        set_site(node, site)
    if CONFIG.eager or errstate_raises():
        return run_now(node, None if site is None else site_from_raw(site))
    return node


# ------------------------------------------------------------------ running op by op

def host_value(n: Node):
    """A leaf's value on the host."""
    return to_host(n.attr("buf"))


def _nonfinite(x) -> str | None:
    x = np.asarray(x)
    if x.dtype.kind not in "fc" or x.size == 0:
        return None
    with np.errstate(all="ignore"):
        if np.isnan(x).any():
            return "nan"
        if np.isinf(x).any():
            return "inf"
    return None


def run_now(node: Node, site: Site | None) -> Node:
    """Compute `node` with NumPy at once (its inputs are leaves or nodes of the same call), under
    the caller's error state; NumPy's warnings are re-issued at the user's line."""
    vals: dict[int, Any] = {}
    state = np.geterr()
    for n in toposort([node]):
        if n.op == "input":
            vals[id(n)] = host_value(n)
            continue
        args = [vals[id(i)] for i in n.inputs]
        with warnings.catch_warnings(record=True) as caught, np.errstate(**state):
            warnings.simplefilter("always")
            vals[id(n)] = apply_ref(n, args)
        for w in caught:
            _warn_at(w, site)
        kind = _made(vals[id(n)], args) if CONFIG.check_nans else None
        if kind is not None:
            _raise_made(n, kind, site)
    return G.leaf(np.asarray(vals[id(node)]))


def _warn_at(w: warnings.WarningMessage, site: Site | None) -> None:
    if site is None:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return
    mod = sys.modules.get(site.module) if site.module else None
    reg = vars(mod).setdefault("__warningregistry__", {}) if mod is not None else \
        _REGISTRIES.setdefault(site.file, {})
    warnings.warn_explicit(w.message, w.category, site.file, site.line, module=site.module,
                           registry=reg)


_REGISTRIES: dict[str, dict] = {}  # warnings registries of code that is no module (exec)


def _made(value, args) -> str | None:
    """"nan" or "inf" if value holds one and no argument did (this op made it), else None."""
    kind = _nonfinite(value)
    return kind if kind is not None and not any(_nonfinite(a) for a in args) else None


def _raise_made(n: Node, kind: str, site: Site | None) -> None:
    """TRACER_CHECK_NANS' error, raised at the op's line."""
    what = "invalid value (nan)" if kind == "nan" else "overflow or divide by zero (inf)"
    err = FloatingPointError(f"{what} encountered in {n.op} (TRACER_CHECK_NANS)")
    if site is None:
        raise err
    raise_at(err, site, n.op)


# ------------------------------------------------------------------ errors found at evaluation

def site_of(n: Node, order: list[Node]) -> Site | None:
    """n's own call site, else that of the nearest node reading it (n was built inside one
    user call, as part of its result)."""
    site = node_site(n)
    if site is not None:
        return site
    use = users(order)
    frontier, seen = [n], {id(n)}
    while frontier:
        nxt = []
        for m in frontier:
            for u in use.get(id(m), ()):
                s = node_site(u)
                if s is not None:
                    return s
                if id(u) not in seen:
                    seen.add(id(u))
                    nxt.append(u)
        frontier = nxt
    return None


def replay(roots: list[Node], stop) -> tuple[Node, list[Node]] | None:
    """Run the graph op by op with NumPy; the first node for which stop(node, value, args) is
    true or which raises `stop` (an exception type), with the order."""
    order = toposort(roots)
    last = {id(i): k for k, n in enumerate(order) for i in n.inputs}
    vals: dict[int, Any] = {}
    for k, n in enumerate(order):
        args = [vals[id(i)] for i in n.inputs]
        if n.op == "input":
            vals[id(n)] = host_value(n)
        elif isinstance(stop, type):
            try:
                vals[id(n)] = eval_node(n, args)
            except stop:
                return n, order
        else:
            vals[id(n)] = eval_node(n, args)
            if stop(n, vals[id(n)], args):
                return n, order
        for i in n.inputs:
            if last.get(id(i)) == k:
                vals.pop(id(i), None)
    return None


def mark_located(exc: BaseException, n: Node) -> None:
    """exc was raised by op n (found without a replay: a device kernel flagged it)."""
    exc.tracer_op = weakref.ref(n)


def locate_error(roots: list[Node], exc: BaseException) -> None:
    """Raise `exc` again from the user's line of the op that raised it, if a replay finds it."""
    if not isinstance(exc, Exception) or isinstance(exc, MemoryError) or \
            getattr(exc, "tracer_op", None) is not None:  # located already (mark_located)
        return
    try:
        found = replay(roots, type(exc))
    except Exception:
        found = None
    if found is not None:
        n, order = found
        exc.tracer_op = weakref.ref(n)  # failed_op: the values that depend on it failed
        site = site_of(n, order)
        if site is not None:
            raise_at(exc, site, n.op)
    # NumPy does not raise it (a failed kernel): name what was being computed
    sites = {str(s): s for s in map(node_site, roots) if s is not None}
    if sites:
        exc.add_note("tracer: raised while evaluating values recorded at " +
                     ", ".join(f"{k} ({s.func})" for k, s in sites.items()))


def failed_op(exc: BaseException) -> Node | None:
    """The op locate_error found raising exc (None when the replay did not raise it)."""
    ref = getattr(exc, "tracer_op", None)
    return ref() if ref is not None else None


def nonfinite(values) -> bool:
    """Whether any of the values holds NaN or inf."""
    return any(_nonfinite(v) for v in values)


def rebind(roots: list[Node], leaves: list[Node], new_leaves: list[Node]) -> list[Node]:
    """The graph with each of `leaves` replaced by the matching new leaf; the call sites stay
    with the rebuilt nodes (a jit replay locates its errors on it)."""
    new: dict[int, Node] = {id(leaf): n for leaf, n in zip(leaves, new_leaves)}
    for n in toposort(roots):
        if id(n) not in new:
            new[id(n)] = make(n.op, tuple(new[id(i)] for i in n.inputs), n.shape, n.dtype,
                              n.attrs)
        if n.site is not None:
            set_site(new[id(n)], n.site)
    return [new[id(r)] for r in roots]


def check_outputs(roots: list[Node], values: list) -> None:
    """TRACER_CHECK_NANS: if an output holds NaN or inf, find the first op that made one from
    finite inputs and raise FloatingPointError at its line."""
    if not any(_nonfinite(v) for v in values):
        return
    kinds: list[str] = []

    def stop(n, v, args):
        kind = _made(v, args) if n.op != "const" else None
        if kind is not None:
            kinds.append(kind)
        return kind is not None
    found = replay(roots, stop)
    if found is not None:
        n, order = found
        _raise_made(n, kinds[0], site_of(n, order))


def evaluation_site() -> tuple:
    """The raw site of the user's line running tracer now (an evaluation)."""
    f = user_frame()
    return (f.f_code, f.f_lasti, "evaluation", f.f_globals.get("__name__"))


def raise_device_error(exc: Exception, n: Node, graph, raw: tuple | None):
    """Raise an error a kernel flagged on the device for op `n` (a program's node, which
    has no call site), found at a later wait: at the user's line of the op a NumPy replay of
    the evaluation's `graph` (its roots, or a function that builds them; None: not known)
    finds raising it, else at the line that evaluated it (`raw`: its raw site)."""
    mark_located(exc, n)
    if graph is not None:
        roots = graph if isinstance(graph, list) else graph()
        found = replay(roots, type(exc))
        site = site_of(*found) if found is not None else None
        if site is not None:
            raise_at(exc, site, n.op)
    if raw is None:
        raise exc
    site = site_from_raw(raw)
    raise_at(exc, site, n.op, f"tracer: raised by `{n.op}` (flagged on the device) in the "
                              f"evaluation at {site}")


ERROR_HOOKS.user_site, ERROR_HOOKS.raise_error = evaluation_site, raise_device_error


def raise_at(exc: BaseException, site: Site, op: str, note: str | None = None):
    """Raise exc from a frame at the user's line, so the traceback ends there."""
    exc.add_note(note or f"tracer: raised by `{op}`, recorded at {site} ({site.func})")
    code = compile("\n" * (site.line - 1) + "raise __tracer_error__", site.file, "exec")
    code = code.replace(co_name=f"<tracer: {op} recorded here>")
    if CONFIG.debug < 1:
        exc = exc.with_traceback(None)  # tracer's own frames only with TRACER_DEBUG
    exec(code, {"__tracer_error__": exc})
