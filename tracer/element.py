"""Element access on realized arrays: `a[i, j]`, `a[i, j] = v`, `a op= b`, `for v in a`,
`a.item()`, `a.tolist()` go straight to the realized host buffer (after one evaluation of
whatever is pending for it), at a cost close to NumPy's. Adaptive laziness's other half
(tracer/eager.py runs small ops at once).

A basic view of a realized array (`a[i, :j]`) is a lazy view, so writes reach its base, that
carries NumPy's view of the buffer for reads (`_hmemo`, kept while the base's version stays);
its steps are worked out only when asked (view.KeyView). A write goes into a buffer the
array's base owns (copied once on the first write) when no pending graph could read it;
otherwise it is recorded. Each hook hands the call to its fallback where it does not apply.
"""
from __future__ import annotations

import numpy as np

from tracer.ir.node import Buffer, make
from tracer.ir.config import CONFIG
from . import budget
from .array import ndarray, stands_for_scalar
from .eager import _NUMBERS, NO, _argument, _new, _realized, call, host, operand
from .interchange import Alias
from .store import _PENDING, LOCK, Var, any_pending, flush, own
from .view import KeyView


def readable(a: ndarray) -> np.ndarray | None:
    """NumPy's view of a's values where eager reads may take it (evaluating a small pending
    base first, as _realized), for a caller that hands out no view of it; else None."""
    if not CONFIG.eager_ops:
        return None
    memo = a._hmemo  # (host(a), its usual case inline)
    return memo[1] if memo is not None and memo[0] == a._var.version else _realized(a)


def reader(name: str, fallback):
    """The lazy array's method `name` (item, tolist, __float__, ...: each gives Python or
    NumPy scalars, no view), NumPy's on the realized values where readable() gives them."""
    numpy_method = getattr(np.ndarray, name)

    def m(self, *args):
        h = readable(self)
        return fallback(self, *args) if h is None else numpy_method(h, *args)
    m.__name__ = name
    return m


def iterate(a: ndarray, fallback):
    """`for v in a` over a realized 1-d array: NumPy's scalars (rows of a larger one are
    views, so writes through them reach a)."""
    if len(a._view.shape) == 1:
        h = readable(a)
        if h is not None:
            return iter(h)
    return fallback(a)


def indexer(fallback):
    """The lazy array's `__getitem__`: for a key of integers and slices on a realized host
    array, NumPy's indexing: NumPy's scalar for an element (evaluating a pending base first,
    as _realized), else a view of the array (writes through it reach it) that comes with
    NumPy's view for reads (a KeyView: its steps are worked out when first asked). Any other
    key, or a view of a pending or device array: fallback."""
    def __getitem__(self, key):
        if not CONFIG.eager_ops:
            return fallback(self, key)
        t = type(key)
        if t is tuple:
            for k in key:
                t = type(k)
                if t is not int and t is not slice and not isinstance(k, np.integer):
                    return fallback(self, key)
        elif t is not int and t is not slice and not isinstance(key, np.integer):
            return fallback(self, key)
        var = self._var
        memo = self._hmemo  # (host(self), its usual case inline)
        if memo is not None and memo[0] == var.version:
            h = memo[1]
        else:
            h = host(self)
            if h is None:
                k = key if type(key) is tuple else (key,)
                if len(k) != len(self._view.shape) or any(type(i) is slice for i in k):
                    return fallback(self, key)  # a view of a pending value: recorded
                h = _realized(self)  # an element of it: evaluated first
                return fallback(self, key) if h is None else h[key]
            memo = self._hmemo
        r = h[key]  # NumPy's errors, NumPy's scalar
        if type(r) is not np.ndarray:
            return r
        view = self._view
        kv = _new(KeyView)  # (KeyView(view, key, r.shape), inline)
        kv._src = (view, key if type(key) is tuple else (key,))
        kv.shape, kv.writeable = r.shape, view.writeable
        out = _new(ndarray)
        out._var, out._view, out._memo = var, kv, None
        # NumPy's view for reads, unless h is a copy host() did not keep
        out._hmemo = (var.version, r) if memo is not None and memo[1] is h else None
        return out
    return __getitem__


_BASIC = (int, np.integer, type(None), type(Ellipsis))


def _basic_key(key) -> bool:
    """key is NumPy basic indexing by integers and slices with integer bounds (no arrays)."""
    for k in (key if type(key) is tuple else (key,)):
        if isinstance(k, slice):
            if not all(isinstance(b, _BASIC) and not isinstance(b, type(Ellipsis))
                       for b in (k.start, k.stop, k.step)):
                return False
        elif not isinstance(k, _BASIC) or isinstance(k, bool):
            return False
    return True


def get_items(a: ndarray, key):
    """a[key] for a key with integer or boolean arrays (a copy in NumPy): NumPy's result
    where a and the key's arrays are realized and small; NO otherwise."""
    return call(_getitem, (a, key), {})


def _getitem(x, key):
    return x[key]


def writer(fallback):
    """The lazy array's `__setitem__`: a number written at a key of integers and slices into
    a buffer the array's base owns, nothing pending (_owned's usual case, inline), is NumPy's
    write; any other write by set_element, or else fallback (recorded)."""
    def __setitem__(self, key, value):
        if not CONFIG.eager_ops:
            return fallback(self, key, value)
        view = self._view
        if isinstance(value, _NUMBERS) and not view.steps and view.writeable:
            t = type(key)
            if t is tuple:
                for k in key:
                    t = type(k)
                    if t is not int and t is not slice and not isinstance(k, np.integer):
                        break
                else:
                    t = int
            if t is int or t is slice or isinstance(key, np.integer):
                var = self._var
                _acquire()
                try:
                    if not _PENDING and type(var) is Var:
                        node = var.node
                        buf = node.attrs[0][1] if node.op == "input" else None
                        # (a buffer on the device is written there: its host copy never)
                        if buf is not None and buf.owner == id(var) and buf.value is buf.host:
                            buf.host[key] = value
                            return None
                finally:
                    _release()
        if not set_element(self, key, value):
            fallback(self, key, value)
    return __setitem__


_acquire, _release = LOCK.acquire, LOCK.release  # (not `with LOCK`: three times the cost)


def set_element(a: ndarray, key, value) -> bool:
    """a[key] = value by NumPy into a's buffer (see _owned), for a key and a value NumPy may
    take now (see call); False where the write is recorded."""
    if not CONFIG.eager_ops or isinstance(value, (list, tuple)):
        return False  # a sequence NumPy converts as it writes: recorded, nothing half-written
    seen: list = []
    if not _basic_key(key):  # integer or boolean arrays: NumPy checks them before writing
        key = _argument(key, seen)
        if key is NO:
            return False
    v = _argument(value, seen)
    if v is NO:
        v = _pending_small(value, a)
        if v is None:
            return False
    with LOCK:
        h = _owned(a)
        if h is None:
            return False
        h[key] = v
    return True


def _pending_small(value, a: ndarray) -> np.ndarray | None:
    """A small pending value written into a small realized array (`out[k] = x[m].sum()` in a
    loop) is evaluated now, so `a` stays realized: recorded, each write would keep the graph
    behind its value alive and `a`'s chain would grow by one write per iteration, all of it
    evaluated (and planned anew) at the first read."""
    if type(value) is not ndarray or value.size > CONFIG.eager_size or host(a) is None or \
            a.size > CONFIG.eager_size:
        return None
    h = _realized(value)
    # a 0-d value standing for NumPy's scalar (a.sum()) writes as that scalar: NumPy checks a
    # scalar's value (OverflowError) where a 0-d array casts
    return h[()] if h is not None and stands_for_scalar(value) else h


def update(uf, a: ndarray, other) -> bool:
    """a op= other by NumPy's in-place ufunc into a's buffer (see _owned), a small array;
    False where it is recorded."""
    if not CONFIG.eager_ops:
        return False
    o = operand(other)
    if o is NO:
        return False
    _acquire()
    try:
        h = _owned(a)
        if h is None or h.size > CONFIG.eager_size:
            return False
        uf(h, o, out=h)
    finally:
        _release()
    return True


def _owned(a: ndarray) -> np.ndarray | None:
    """a's values as a writable NumPy view of a buffer that a's base alone holds (copied
    here on the first write), when no pending graph could read the buffer; else None. The
    caller holds LOCK."""
    view = a._view
    if not view.writeable:
        return None
    var = a._var
    if not _PENDING and type(var) is Var and not view.steps:  # the usual write: into a
        node = var.node  # buffer it owns (an owned buffer is a writeable copy)
        buf = node.attrs[0][1] if node.op == "input" else None
        if buf is not None and buf.owner == id(var) and buf.value is buf.host:
            return buf.host
    if _bitcast(view.steps) or type(var) is Alias:
        return None  # a view through a dtype change may be a copy on the host; borrowed
        # memory is written by Alias.assign (recorded, then evaluated at once)
    if _realized(a) is None:
        return None
    if any_pending():  # a pending graph may read this buffer: its value is computed first
        if budget.active() is not None:
            return None
        flush()
        if any_pending():  # a value whose evaluation failed (it raises where it is read)
            return None
    buf = var.node.attrs[0][1]
    # copy on the first write, and where the values are on the device (their host copy
    # would go stale)
    if buf.owner != id(var) or buf.value is not buf.host or not buf.host.flags.writeable:
        leaf = var.node
        buf = Buffer(np.array(buf.host, copy=True))
        var.node = make("input", (), leaf.shape, leaf.dtype, (("buf", buf),))
        var.version += 1
        own(buf, var)
    h = host(a)
    if a._view.steps and (a._hmemo is None or a._hmemo[1] is not h):
        return None  # NumPy's copy (see host): the write is recorded
    return h


def _bitcast(steps: tuple) -> bool:
    return any(kind == "bitcast" for kind, _ in steps)
