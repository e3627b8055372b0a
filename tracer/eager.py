"""Adaptive laziness: where recording cannot pay, NumPy runs at once.

An op whose inputs are realized host values of at most `CONFIG.eager_size` elements each runs
through NumPy when it is called and returns NumPy's result: a realized array (its buffer owned
by the new array), or the NumPy scalar NumPy returns. No node is recorded, nothing is left to
evaluate; the values are NumPy's own bits. Ops on pending or large values stay lazy.

Element access goes straight to the realized buffer: `a[i, j]` returns NumPy's scalar;
`a[i, j] = v` writes into a buffer the array owns (copied once on the first write) when no
pending graph could read it.

Each entry point returns `NO` where it does not apply; the caller then records as usual.
"""
from __future__ import annotations

import weakref

import numpy as np

from tracer.ir.node import Buffer, host_leaf, make
from tracer.ir.config import CONFIG
from . import budget
from .array import ndarray
from .view import View, c_strides, f_strides
from .store import LOCK, Var, any_pending, apply_view_numpy, evaluate_vars, flush, own

NO = object()
_OFF = [0]  # > 0 while tracer.jit traces a function: every op must be recorded


def enabled() -> bool:  # check_nans: every op recorded, so that evaluation finds the NaN's op
    return CONFIG.eager_size > 0 and not _OFF[0] and not CONFIG.eager and not CONFIG.check_nans


class recording_all:
    """`with recording_all():` every op is recorded (a trace that replays later)."""

    def __enter__(self):
        _OFF[0] += 1

    def __exit__(self, *exc):
        _OFF[0] -= 1


def host(a: ndarray) -> np.ndarray | None:
    """a's values as NumPy's view of its realized host buffer (read only by callers), or None
    while a is pending or its buffer is on a device."""
    node = a._var.node
    if node.op != "input":
        return None
    h = node.attrs[0][1].host
    if h is None:
        return None
    steps = a._view.steps
    if not steps:
        return h
    memo = a._hmemo
    if memo is not None and memo[0] is h:
        return memo[1]
    v = apply_view_numpy(h, steps)
    a._hmemo = (h, v)
    return v


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
    if isinstance(x, (int, float, complex, np.generic)):
        return x
    if type(x) is np.ndarray and x.dtype.kind in "biufc" and x.size <= CONFIG.eager_size:
        return x
    return NO


def wrap(r):
    """NumPy's result as tracer returns it: a realized array (whose first in-place write
    copies it, see _owned), a scalar as it is, a tuple of either."""
    if type(r) is np.ndarray:
        if r.dtype.kind not in "biufc":  # strings, objects, records: NumPy's, as tracer's are
            return r
        shape = r.shape
        var = _new(Var)  # Var(leaf) and ndarray(var), without their general checks: the
        var.node, var.version = host_leaf(r), 0  # buffer is new, its layout NumPy's
        out = _new(ndarray)
        out._var, out._memo, out._hmemo = var, None, None
        if not r.flags.c_contiguous:  # NumPy's layout: order K keeps an operand's axis order
            strides = f_strides(shape) if r.flags.f_contiguous else \
                tuple(s // r.itemsize for s in r.strides)
        else:
            strides = _C_STRIDES.get(shape)
            if strides is None:
                strides = _C_STRIDES[shape] = c_strides(shape)
                if len(_C_STRIDES) > 4096:
                    _C_STRIDES.clear()
        out._view = View((), shape, strides)
        var.owner = weakref.ref(out)
        if not shape:  # NumPy gave a 0-d array, not a scalar: an array it stays
            out._arr0 = True
        return out
    if isinstance(r, tuple):
        return tuple(wrap(x) for x in r)
    return r


_new = object.__new__
_C_STRIDES: dict[tuple, tuple] = {}  # shape -> C-order element strides (shapes repeat in loops)


def binary(uf, x, y):
    """uf(x, y) by NumPy when both operands are realized and small (ufunc(), for the
    operators' two operands without keywords); NO otherwise."""
    if _OFF[0] or CONFIG.eager_size <= 0 or CONFIG.eager or CONFIG.check_nans:
        return NO
    hx = operand(x)
    if hx is NO:
        return NO
    hy = operand(y)
    if hy is NO:
        return NO
    return wrap(uf(hx, hy))


def ufunc(uf, args, kwargs=None):
    """A ufunc call by NumPy when every operand is realized and small; NO otherwise."""
    if not enabled() or len(args) != uf.nin or kwargs and kwargs.get("out") is not None:
        return NO
    hs = []
    for x in args:
        h = operand(x)
        if h is NO:
            return NO
        hs.append(h)
    if kwargs:
        where = kwargs.get("where", True)
        if where is not True:
            where = operand(where)
            if where is NO:
                return NO
            kwargs = dict(kwargs, where=where)
    return wrap(uf(*hs, **kwargs) if kwargs else uf(*hs))


def call(fn, args, kwargs):
    """fn(*args, **kwargs), a NumPy function that writes into none of its arguments, by
    NumPy: where a lazy array is among the arguments and every array is realized and small
    (a list or tuple argument is looked into one level). NO otherwise, where an `out` is given
    (by keyword or by position), and where NumPy's result is a view of an argument (a lazy
    view records it)."""
    if not enabled() or kwargs.get("out") is not None:
        return NO
    at = _out_at(fn)
    if len(args) > at and args[at] is not None:  # out given by position
        return NO
    seen: list[np.ndarray] = []
    hs = [_argument(x, seen) for x in args]
    kw = {k: _argument(v, seen) for k, v in kwargs.items()}
    if not seen or _has_no(hs) or _has_no(kw.values()) or budget.active() is not None:
        return NO
    r = fn(*hs, **kw)
    for x in (r if isinstance(r, tuple) else (r,)):
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
    if not enabled() or size > CONFIG.eager_size or kwargs.get("like") is not None:
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
        if not args and not kwargs and enabled():  # a.sum(): the common call, in short
            h = host(self)
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


def read_only(a: ndarray) -> np.ndarray | None:
    """A read-only NumPy view of a's values where eager reads may take it (evaluating a
    small pending base first, as _realized), else None."""
    if not enabled():
        return None
    h = _realized(a)
    if h is None:
        return None
    h = h.view()
    h.flags.writeable = False
    return h


def reader(name: str, fallback):
    """The lazy array's method `name` (item, tolist, __float__, ...), NumPy's on the realized
    values where read_only() gives them."""
    numpy_method = getattr(np.ndarray, name)

    def m(self, *args):
        h = read_only(self)
        return fallback(self, *args) if h is None else numpy_method(h, *args)
    m.__name__ = name
    return m


def iterate(a: ndarray, fallback):
    """`for v in a` over a realized 1-d array: NumPy's scalars (rows of a larger one are
    lazy views, so writes through them reach a)."""
    if len(a._view.shape) == 1:
        h = read_only(a)
        if h is not None:
            return iter(h)
    return fallback(a)


def _int_key(a: ndarray, key) -> tuple | None:
    """key as a tuple of Python/NumPy integers, one per axis of a, else None."""
    if type(key) is int:
        key = (key,)
    elif type(key) is not tuple:
        if isinstance(key, np.integer):
            key = (key,)
        else:
            return None
    if len(key) != len(a._view.shape):
        return None
    for k in key:
        if type(k) is not int and not (isinstance(k, np.integer)):
            return None
    return key


def get_element(a: ndarray, key):
    """a[i, j] of a realized array: NumPy's scalar (its IndexError where out of range)."""
    if not enabled():
        return NO
    k = _int_key(a, key)
    if k is None:
        return NO
    h = _realized(a)
    if h is None:
        return NO
    return h[k]


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


def set_element(a: ndarray, key, value) -> bool:
    """a[key] = value by NumPy into a's buffer (see _owned), for a key and a value NumPy may
    take now (see call); False where the write is recorded."""
    if not enabled() or isinstance(value, (list, tuple)):
        return False  # a sequence NumPy converts as it writes: recorded, nothing half-written
    seen: list = []
    if not _basic_key(key):  # integer or boolean arrays: NumPy checks them before writing
        key = _argument(key, seen)
        if key is NO:
            return False
    v = _argument(value, seen)
    if v is NO:
        return False
    with LOCK:
        h = _owned(a)
        if h is None:
            return False
        h[key] = v
    return True


def update(uf, a: ndarray, other) -> bool:
    """a op= other by NumPy's in-place ufunc into a's buffer (see _owned), a small array;
    False where it is recorded."""
    if not enabled():
        return False
    o = operand(other)
    if o is NO:
        return False
    with LOCK:
        h = _owned(a)
        if h is None or h.size > CONFIG.eager_size:
            return False
        uf(h, o, out=h)
    return True


def _owned(a: ndarray) -> np.ndarray | None:
    """a's values as a writable NumPy view of a buffer that a's base alone holds (copied
    here on the first write), when no pending graph could read the buffer; else None. The
    caller holds LOCK."""
    if not a._view.writeable or any(kind == "bitcast" for kind, _ in a._view.steps):
        return None  # a view through a dtype change may be a copy on the host
    if _realized(a) is None:
        return None
    if any_pending():  # a pending graph may read this buffer: its value is computed first
        if budget.active() is not None:
            return None
        flush()
        if any_pending():  # a value whose evaluation failed (it raises where it is read)
            return None
    var = a._var
    buf = var.node.attrs[0][1]
    if buf.owner != id(var) or not buf.host.flags.writeable:  # copy on the first write
        leaf = var.node
        buf = Buffer(np.array(buf.host, copy=True))
        var.node = make("input", (), leaf.shape, leaf.dtype, (("buf", buf),))
        var.version += 1
        own(buf, var)
    return host(a)
