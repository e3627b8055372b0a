"""Adaptive laziness: where recording cannot pay, NumPy runs at once.

An op whose inputs are realized host values of at most `CONFIG.eager_size` elements each runs
through NumPy when it is called and returns NumPy's result: a realized array (its buffer owned
by the new array), or the NumPy scalar NumPy returns. No node is recorded, nothing is left to
evaluate; the values are NumPy's own bits (held by a store.HostVar: no leaf node until one
is asked for). Ops on pending or large values stay lazy.

Element access and in-place writes on realized arrays are in tracer/element.py.

Each entry point returns `NO` where it does not apply (or hands the call to its fallback);
the caller then records as usual. The operators and indexing hooks are built here, their
usual case inline: a Python call costs as much as the checks.
"""
from __future__ import annotations

import weakref

import numpy as np

from tracer.ir.config import CONFIG
from . import budget
from .array import _C_VIEWS, c_view, ndarray
from .view import View, c_strides, f_strides
from .store import NODE_SLOT, HostVar, evaluate_vars
from .view import apply_view_numpy

NO = object()


class recording_all:
    """`with recording_all():` every op is recorded (a trace that replays later)."""

    def __enter__(self):
        CONFIG.recording_all += 1

    def __exit__(self, *exc):
        CONFIG.recording_all -= 1


def host(a: ndarray) -> np.ndarray | None:
    """a's values as NumPy's view of its realized host buffer (read only by callers), or None
    while a is pending or its buffer is on a device. Kept in a._hmemo with the base's version:
    a new value of the base (a recorded write, a copy on the first eager write) bumps it, and
    a value becomes realized only from a pending one (for which no view is kept)."""
    var = a._var
    memo = a._hmemo
    if memo is not None and memo[0] == var.version:
        return memo[1]
    if type(var) is HostVar:
        h = _held(var)
    else:
        node = var.node
        if node.op != "input":
            return None
        h = node.attrs[0][1].host
        if h is None:
            return None
    steps = a._view.steps
    if steps:
        base, h = h, apply_view_numpy(h, steps)
        if _may_copy(steps) and not np.may_share_memory(h, base):
            return h  # NumPy's copy (a reshape of another layout): not kept, as in-place
    a._hmemo = (var.version, h)  # writes into the base would not reach it
    return h


def _may_copy(steps: tuple) -> bool:
    """Whether NumPy may replay these steps as a copy: a reshape where the buffer's layout
    is not the one the view assumed, a bitcast of a non-contiguous buffer."""
    return any(kind == "reshape" or kind == "bitcast" for kind, _ in steps)


def _realized(a: ndarray) -> np.ndarray | None:
    """host(a), evaluating a's base first where it is pending (a loop reading elements of a
    value it just computed); None on a device, or under a memory budget (which may need to
    split that evaluation with what follows)."""
    h = host(a)
    if h is not None:
        return h
    var = a._var
    if var.node.op == "input" or budget.active() is not None:
        return None
    evaluate_vars([var])
    return host(a)


def operand(x):
    """x as a NumPy ufunc takes it, or NO: a lazy array that is pending, large or on a device,
    an array too large, or something tracer converts in its own way."""
    if type(x) is ndarray:
        h = host(x)
        return NO if h is None or h.size > CONFIG.eager_size else h
    if isinstance(x, _NUMBERS):
        return x
    if type(x) is np.ndarray and x.dtype.kind in "biufc" and x.size <= CONFIG.eager_size:
        return x
    return NO


_NUMBERS = (int, float, complex, np.generic)


def wrap(r):
    """NumPy's result as tracer returns it: a realized array (whose first in-place write
    copies it, see _owned), a scalar as it is, a tuple of either."""
    if type(r) is np.ndarray:
        if r.dtype.kind not in "biufc":  # strings, objects, records: NumPy's, as tracer's are
            return r
        var = _new(HostVar)  # a HostVar over r and ndarray(var), without the general
        _hold(var, r)  # checks: the buffer is new, its layout NumPy's
        var.version = 0
        out = _new(ndarray)
        out._var, out._memo, out._hmemo = var, None, (0, r)
        shape = r.shape
        if not r.flags.c_contiguous:  # Fortran order, order="K"'s, a strided 1-d result
            out._view = View((), shape, _layout(r))
        else:
            view = _C_VIEWS.get(shape)
            out._view = c_view(shape) if view is None else view
        var.owner = _ref(out)
        if not shape:  # NumPy gave a 0-d array, not a scalar: an array it stays
            out._arr0 = True
        return out
    if isinstance(r, tuple):
        return tuple(wrap(x) for x in r)
    return r


def _layout(r: np.ndarray) -> tuple[int, ...]:
    """The element strides of a new NumPy array laid out in other than C order."""
    if r.flags.f_contiguous:
        return f_strides(r.shape)
    st = r.strides
    if all(s > 0 and s % r.itemsize == 0 for s in st):
        return tuple(s // r.itemsize for s in st)
    return c_strides(r.shape)  # (zero or negative strides: the flags C order's)


_new = object.__new__
_ref = weakref.ref
_held, _hold = NODE_SLOT.__get__, NODE_SLOT.__set__


def binary(uf, x, y):
    """uf(x, y) by NumPy when both operands are realized and small (ufunc(), for the
    operators' two operands without keywords); NO otherwise."""
    if not CONFIG.eager_ops:
        return NO
    if type(x) is ndarray:  # operand(), its usual case inline (host's too)
        memo = x._hmemo
        hx = memo[1] if memo is not None and memo[0] == x._var.version else host(x)
        if hx is None or hx.size > CONFIG.eager_size:
            return NO
    else:
        hx = operand(x)
        if hx is NO:
            return NO
    if type(y) is ndarray:
        memo = y._hmemo
        hy = memo[1] if memo is not None and memo[0] == y._var.version else host(y)
        if hy is None or hy.size > CONFIG.eager_size:
            return NO
    else:
        hy = operand(y)
        if hy is NO:
            return NO
    return wrap(uf(hx, hy))


def operator(uf, record, fallback, reflected: bool = False):
    """The lazy array's operator for binary ufunc uf (`reflected`: `other <op> self`):
    binary()'s usual case inline (self, then other), else record(uf, a, b) for an operand
    that is a lazy array or a Python number (no frame between the user's and the recording's:
    it looks for the user's), fallback(self, other) for any other."""
    def op(self, other):
        if CONFIG.eager_ops:
            memo = self._hmemo
            h = memo[1] if memo is not None and memo[0] == self._var.version else host(self)
            if h is not None and h.size <= CONFIG.eager_size:
                if type(other) is ndarray:
                    memo = other._hmemo
                    o = memo[1] if memo is not None and memo[0] == other._var.version \
                        else host(other)
                    if o is not None and o.size <= CONFIG.eager_size:
                        return wrap(uf(o, h) if reflected else uf(h, o))
                else:
                    o = operand(other)
                    if o is not NO:
                        return wrap(uf(o, h) if reflected else uf(h, o))
        if isinstance(other, _OPERANDS):
            return record(uf, other, self) if reflected else record(uf, self, other)
        return fallback(self, other)
    return op


_OPERANDS = (ndarray, int, float, complex)


def ufunc(uf, args, kwargs=None):
    """A ufunc call by NumPy when every operand is realized and small; NO otherwise."""
    if not CONFIG.eager_ops or len(args) != uf.nin:
        return NO
    if kwargs:
        if kwargs.get("out") is not None:
            return NO
        where = kwargs.get("where", True)
        if where is not True:
            where = operand(where)
            if where is NO:
                return NO
            kwargs = dict(kwargs, where=where)
    if len(args) == 1:
        h = operand(args[0])
        if h is NO:
            return NO
        return wrap(uf(h, **kwargs) if kwargs else uf(h))
    hs = []
    for x in args:
        h = operand(x)
        if h is NO:
            return NO
        hs.append(h)
    return wrap(uf(*hs, **kwargs) if kwargs else uf(*hs))


def call(fn, args, kwargs):
    """fn(*args, **kwargs), a NumPy function that writes into none of its arguments, by
    NumPy: where a lazy array is among the arguments and every array is realized and small
    (a list or tuple argument is looked into one level). NO otherwise, where an `out` is given
    (by keyword or by position), and where NumPy's result is a view of an argument (a lazy
    view records it)."""
    if not CONFIG.eager_ops or budget.active() is not None:
        return NO
    at = _out_at(fn)
    if len(args) > at and args[at] is not None:  # out given by position
        return NO
    seen: list[np.ndarray] = []
    hs = []
    for x in args:
        if type(x) is ndarray:  # (_argument's usual case inline, host's too)
            memo = x._hmemo
            h = memo[1] if memo is not None and memo[0] == x._var.version else host(x)
            if h is None or h.size > CONFIG.eager_size:
                return NO
            seen.append(h)
        else:
            h = _argument(x, seen)
            if h is NO:
                return NO
        hs.append(h)
    if kwargs:
        if kwargs.get("out") is not None:
            return NO
        kw = {k: _argument(v, seen) for k, v in kwargs.items()}
        if not seen or _has_no(kw.values()):
            return NO
        r = fn(*hs, **kw)
    elif seen:
        r = fn(*hs)
    else:
        return NO
    if type(r) is np.ndarray:
        if r.base is not None and any(np.may_share_memory(r, h) for h in seen):
            return NO
    elif isinstance(r, tuple):
        for x in r:
            if isinstance(x, np.ndarray) and x.base is not None and \
                    any(np.may_share_memory(x, h) for h in seen):
                return NO
    return wrap(r)


def _out_at(fn) -> int:
    """The position of fn's `out` parameter (a NumPy function or ndarray method)."""
    at = _OUT_AT.get(fn)
    if at is None:
        if isinstance(fn, np.ufunc):
            at = fn.nin
        else:
            import inspect  # at the first positional-out call: inspect costs ~10 ms at import
            try:
                params = list(inspect.signature(fn).parameters.values())
                at = next((i for i, p in enumerate(params) if p.name == "out" and p.kind in
                           (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)), 1 << 30)
            except (TypeError, ValueError):  # no signature: only the first argument by position
                at = 1
        _OUT_AT[fn] = at
    return at


_OUT_AT: dict = {}


def _argument(x, seen: list):
    """An argument for NumPy: a lazy array as its realized values (noted in `seen`), a list
    or tuple looked into, NO for a value that cannot go to NumPy now."""
    if type(x) is ndarray:  # (call's functions write into none of their arguments)
        h = host(x)
        if h is None or h.size > CONFIG.eager_size:
            return NO
        seen.append(h)
        return h
    if type(x) is np.ndarray and x.size > CONFIG.eager_size:
        return NO
    if type(x) in (list, tuple) and any(isinstance(v, (ndarray, list, tuple)) for v in x):
        out = [_argument(v, seen) for v in x]
        return NO if _has_no(out) else type(x)(out)
    return x


def _has_no(xs) -> bool:
    return any(x is NO for x in xs)  # not `in`: == on an array is elementwise


def create(fn, size: int, args, kwargs):
    """A creation function (zeros, full, arange, ...) by NumPy, for a result of `size`
    elements at most CONFIG.eager_size; NO otherwise."""
    if not CONFIG.eager_ops or size > CONFIG.eager_size or kwargs.get("like") is not None:
        return NO
    seen: list = []
    hs = [_argument(x, seen) for x in args]
    kw = {k: _argument(v, seen) for k, v in kwargs.items()}
    if _has_no(hs) or _has_no(kw.values()):
        return NO
    return wrap(fn(*hs, **kw))


def method(name: str, fallback):
    """The lazy array's method `name`, run by NumPy's ndarray method where call() can."""
    numpy_method = getattr(np.ndarray, name)

    def m(self, *args, **kwargs):
        if not args and not kwargs and CONFIG.eager_ops:  # a.sum(): the common call, in short
            memo = self._hmemo  # (host(self), its usual case inline)
            h = memo[1] if memo is not None and memo[0] == self._var.version else host(self)
            if h is not None and h.size <= CONFIG.eager_size:
                r = numpy_method(h)
                if type(r) is not np.ndarray or r.base is None:  # not a view of h
                    return wrap(r)
        r = call(numpy_method, (self, *args), kwargs)
        return fallback(self, *args, **kwargs) if r is NO else r
    m.__name__ = name
    return m


def function(fn, numpy_fn):
    """fn, run by NumPy's numpy_fn where call() can."""
    def f(*args, **kwargs):
        r = call(numpy_fn, args, kwargs)
        return fn(*args, **kwargs) if r is NO else r
    f.__name__, f.__doc__, f.__wrapped__ = fn.__name__, fn.__doc__, fn
    return f
