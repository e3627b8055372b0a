"""The lazy array.

A lazy array is a base variable (`Var`, whose `node` is the base buffer's current value) plus a view:
a chain of movement steps applied to it. Reading applies the chain; writing through a view records
an update of the base (functionalization), so every view of the same base sees the write.
"""
from __future__ import annotations

import builtins
import math
import operator
import os
import threading
import weakref
from fractions import Fraction
from typing import Any

import numpy as np

from tracer.cuda_kernels import snapshot
from tracer.ir import Node
from tracer.ir.config import CONFIG
from tracer.ir.catalogue import py_slice
from . import debug
from . import graph as G

_PENDING: "weakref.WeakSet[Var]" = weakref.WeakSet()
_pending_nodes = 0
LOCK = threading.RLock()  # the Var store and the pending set; an evaluation holds it throughout


_depth = [0]
_NUMPY_DIR = os.path.dirname(np.__file__) + os.sep


def _trim_numpy_tail(tb) -> None:
    """Cut NumPy's own Python frames off the end of a traceback: when tracer asks NumPy to
    check shapes or axes, the error then ends at tracer's call under the user's line."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    keep = len(entries)
    while keep > 1 and entries[keep - 1].tb_frame.f_code.co_filename.startswith(_NUMPY_DIR):
        keep -= 1
    if keep < len(entries):
        entries[keep - 1].tb_next = None


def traced(fn):
    """Adds the time spent recording to stats().trace_s (outermost call only), and ends the
    traceback of an error raised while recording in tracer's frames, not NumPy's."""
    import functools
    import time as _time
    from tracer.ir.stats import STATS

    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _depth[0]:
            return fn(*args, **kwargs)
        _depth[0] = 1
        t0 = _time.perf_counter()
        debug.CURRENT[0] = debug.caller_site(name)
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            _trim_numpy_tail(e.__traceback__)
            raise
        finally:
            _depth[0] = 0
            debug.CURRENT[0] = None
            STATS.trace_s += _time.perf_counter() - t0
    return wrapper


class Var:
    """A base buffer: its current value as a node. Writes replace `node` and bump `version`."""

    __slots__ = ("node", "version", "owner", "__weakref__")

    def __init__(self, node: Node):
        if node.op != "input":
            node = debug.recorded(node)
        self.node = node
        self.owner = None  # the array that owns this buffer (weak): views' `.base`
        self.version = 0
        if node.op != "input":
            _note_pending(self)

    def assign(self, node: Node) -> None:
        if node.op != "input":
            node = debug.recorded(node)
        with LOCK:
            self.node = node
            self.version += 1
            if node.op != "input":
                _note_pending(self)


def _note_pending(v: Var) -> None:
    global _pending_nodes
    with LOCK:
        _PENDING.add(v)
        _pending_nodes += 1
        if _pending_nodes > CONFIG.flush_nodes:
            flush()


def flush() -> None:
    """Evaluate every pending base, so a long loop never grows the graph without bound."""
    global _pending_nodes
    from .runtime import evaluate_vars
    with LOCK:
        _pending_nodes = 0
        live = [v for v in list(_PENDING) if v.node.op != "input"]
        _PENDING.clear()
        if live:
            evaluate_vars(live, strict=False)  # a failed value keeps its error until read


def pending_vars() -> list[Var]:
    with LOCK:
        return [v for v in list(_PENDING) if v.node.op != "input"]


def c_strides(shape) -> tuple[int, ...]:
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= max(d, 1)
    return tuple(reversed(st))


def f_strides(shape) -> tuple[int, ...]:
    return c_strides(tuple(shape)[::-1])[::-1]


def contiguous(shape, strides, order: str) -> bool:
    """NumPy's C_CONTIGUOUS / F_CONTIGUOUS flag: length-1 axes' strides never count."""
    if math.prod(shape) <= 1:
        return True
    want = c_strides(shape) if order == "C" else f_strides(shape)
    return all(d == 1 or s == w for d, s, w in zip(shape, strides, want))


def _buffer_strides(node: Node) -> tuple[int, ...]:
    """A new array's strides: a host leaf in Fortran order keeps it (np.asarray of an F-order
    array is F-order); anything else is C order."""
    v = node.attr("buf").value if node.op == "input" else None
    if isinstance(v, np.ndarray) and v.ndim > 1 and v.flags.f_contiguous and \
            not v.flags.c_contiguous:
        return f_strides(node.shape)
    return c_strides(node.shape)


def order_strides(shape, order, like: "ndarray | None" = None) -> tuple[int, ...]:
    """The strides NumPy gives a new array of memory order `order` ('A' and 'K' follow `like`,
    when it has this shape)."""
    shape = tuple(shape)
    if order in ("A", "K") and like is not None and like.shape == shape:
        st = like._view.strides
        if contiguous(shape, st, "C") or order == "A" and not contiguous(shape, st, "F"):
            return c_strides(shape)
        if contiguous(shape, st, "F"):
            return f_strides(shape)
        perm = sorted(range(len(shape)), key=lambda i: -abs(st[i]))  # NumPy keeps stride order
        packed = c_strides([shape[p] for p in perm])
        out = [0] * len(shape)
        for p, s in zip(perm, packed):
            out[p] = s
        return tuple(out)
    return f_strides(shape) if order == "F" else c_strides(shape)


def laid_out(a: "ndarray", order, like: "ndarray | None" = None) -> "ndarray":
    """`a`, a new array, with the strides of memory order `order` (None is 'K'; 'A' and 'K'
    without `like`: as it is): they decide its flags and which later reshapes are views."""
    order = "K" if order is None else order.upper()
    if a._view.steps or order in ("A", "K") and like is None:
        return a
    a._view = View((), a.shape, order_strides(a.shape, order, like), a._view.writeable)
    return a


def nocopy_reshape(shape, strides, newshape):
    """NumPy's _attempt_nocopy_reshape on element strides: new strides, or None if a copy is needed."""
    old = [(d, s) for d, s in zip(shape, strides) if d != 1]
    if math.prod(shape) == 0:
        return c_strides(newshape)
    oldn = len(old)
    newn = len(newshape)
    newst = [0] * newn
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < newn and oi < oldn:
        np_ = newshape[ni]
        op_ = old[oi][0]
        while np_ != op_:
            if np_ < op_:
                np_ *= newshape[nj]
                nj += 1
            else:
                op_ *= old[oj][0]
                oj += 1
        for ok in range(oi, oj - 1):
            if old[ok][1] != old[ok + 1][0] * old[ok + 1][1]:
                return None
        newst[nj - 1] = old[oj - 1][1]
        for nk in range(nj - 1, ni, -1):
            newst[nk - 1] = newst[nk] * newshape[nk]
        ni, nj = nj, nj + 1
        oi, oj = oj, oj + 1
    last = newst[ni - 1] if ni >= 1 else 1
    for nk in range(ni, newn):
        newst[nk] = last
    return tuple(newst)


class View:
    """Movement steps from the base to this array, plus the abstract layout NumPy would have."""

    __slots__ = ("steps", "shape", "strides", "writeable")

    def __init__(self, steps: tuple, shape: tuple, strides: tuple, writeable: bool = True):
        self.steps, self.shape, self.strides, self.writeable = steps, shape, strides, writeable

    def then(self, kind: str, arg, shape, strides, writeable=None) -> "View":
        return View(self.steps + ((kind, arg),), tuple(shape), tuple(strides),
                    self.writeable if writeable is None else writeable)


def apply_step(node: Node, kind: str, arg) -> Node:
    if kind == "slice":
        return G.slice_(node, arg)
    if kind == "transpose":
        return G.transpose(node, arg)
    if kind == "reshape":
        return G.reshape(node, arg)
    if kind == "broadcast":
        return G.broadcast(node, arg)
    if kind == "bitcast":
        return bitcast(node, arg)
    raise AssertionError(kind)


def bitcast(node: Node, dtype: np.dtype) -> Node:
    """The bytes of `node` read as `dtype` (its last axis regrouped where the sizes differ)."""
    if node.dtype == dtype:
        return node
    return G._typed("bitcast", (node,), (("dtype", dtype.str), ("src", node.dtype.str)))


def apply_step_numpy(a: np.ndarray, kind: str, arg) -> np.ndarray:
    if kind == "slice":
        return a[tuple(py_slice(*s) for s in arg)]
    if kind == "transpose":
        return a.transpose(arg)
    if kind == "reshape":
        return a.reshape(arg)
    if kind == "broadcast":
        return np.broadcast_to(a, arg)
    if kind == "bitcast":
        try:
            return a.view(arg)
        except ValueError:  # a base laid out otherwise than the view assumed: the same values
            return np.ascontiguousarray(a).view(arg)
    raise AssertionError(kind)


def apply_view_numpy(a: np.ndarray, steps: tuple) -> np.ndarray:
    """NumPy's view of `a` (the base's value) that a lazy view's steps describe."""
    for kind, arg in steps:
        a = apply_step_numpy(a, kind, arg)
    return a


def write_through(base: Node, steps: tuple, region: Node) -> Node:
    """The base's new value after the view `steps` of it is replaced by `region`."""
    if not steps:
        return region
    kind, arg = steps[0]
    inner = apply_step(base, kind, arg)
    new_inner = write_through(inner, steps[1:], region)
    if kind == "slice":
        return G.setslice(base, new_inner, arg)
    if kind == "transpose":
        inv = tuple(int(i) for i in np.argsort(arg))
        return G.transpose(new_inner, inv)
    if kind == "reshape":
        return G.reshape(new_inner, base.shape)
    if kind == "bitcast":
        return bitcast(new_inner, base.dtype)
    raise ValueError("assignment destination is read-only")


class ndarray:
    """A lazy array: shape, dtype, ndim, size, nbytes and T never evaluate."""

    # _arr0: set on a 0-d array (np.array(5.), np.where, a[...], views of one); any other 0-d
    # result stands for the NumPy scalar NumPy returns there, and its repr is that scalar's
    __slots__ = ("_var", "_view", "_memo", "_arr0", "__weakref__")
    __array_priority__ = 100

    def __init__(self, var: Var, view: View | None = None):
        self._var = var
        if view is None:
            view = View((), var.node.shape, _buffer_strides(var.node))
            if var.owner is None:
                var.owner = weakref.ref(self)
        self._view = view
        self._memo: tuple | None = None

    # ---- the node behind this array
    @property
    def _node(self) -> Node:
        var = self._var
        memo = self._memo
        if memo is not None and memo[0] == var.version and memo[1] is var.node:
            return memo[2]
        n = var.node
        for kind, arg in self._view.steps:
            n = apply_step(n, kind, arg)
        self._memo = (var.version, var.node, n)
        return n

    @classmethod
    def _from_node(cls, node: Node) -> "ndarray":
        return cls(Var(node))

    # ---- metadata (never evaluates)
    @property
    def shape(self) -> tuple[int, ...]:
        return self._view.shape

    @shape.setter
    def shape(self, value) -> None:
        """NumPy's in-place reshape: allowed where the new shape is a view of this one."""
        r = self.reshape(value)
        if r._var is not self._var or len(r._view.steps) < len(self._view.steps):
            raise AttributeError("Incompatible shape for in-place modification. Use "
                                 "`.reshape()` to make a copy with the desired shape.")
        self._view, self._memo = r._view, None

    @property
    def dtype(self) -> np.dtype:
        for kind, arg in reversed(self._view.steps):
            if kind == "bitcast":
                return arg
        return self._var.node.dtype

    @property
    def ndim(self) -> int:
        return len(self._view.shape)

    @property
    def size(self) -> int:
        return math.prod(self._view.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def T(self) -> "ndarray":
        return self.transpose()

    @property
    def mT(self) -> "ndarray":
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return self.swapaxes(-1, -2)

    @property
    def base(self):
        """NumPy's base: None for an array that owns its buffer, else the owner."""
        if not self._view.steps:
            return None
        owner = self._var.owner() if self._var.owner is not None else None
        return owner if owner is not None else ndarray(self._var)

    @property
    def flags(self) -> "Flags":
        return Flags(self)

    # ---- views
    def _alias(self, view: View | None = None) -> "ndarray":
        """Another array over the same data (a no-op view): a 0-d array stays an array, a
        scalar a scalar, as NumPy's views of them."""
        out = ndarray(self._var, self._view if view is None else view)
        if getattr(self, "_arr0", False):
            out._arr0 = True
        return out

    def _derive(self, kind: str, arg, shape, strides, writeable=None) -> "ndarray":
        return ndarray(self._var, self._view.then(kind, arg, shape, strides, writeable))

    @traced
    def transpose(self, *axes) -> "ndarray":
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        if not axes:
            perm = tuple(range(self.ndim))[::-1]
        else:
            np.transpose(proxy(self.shape), axes)  # NumPy's own errors for bad axes
            perm = tuple(int(a) % self.ndim for a in axes)
        if perm == tuple(range(self.ndim)):
            return self._alias()
        st = self._view.strides
        return self._derive("transpose", perm, [self.shape[p] for p in perm], [st[p] for p in perm])

    @traced
    def reshape(self, *shape, order="C", copy=None) -> "ndarray":
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        order = _reshape_order(order, self)
        if order == "F":  # NumPy's F-order reshape is the C-order reshape of the reversed axes
            rev = tuple(shape)[::-1] if shape else shape
            return self.transpose().reshape(rev, copy=copy).transpose()
        newshape = _infer_shape(self.size, tuple(operator.index(s) for s in shape))
        if newshape == self.shape:
            return self._alias()
        strides = nocopy_reshape(self.shape, self._view.strides, newshape)
        if strides is None and copy is False:
            raise ValueError("Unable to avoid creating a copy while reshaping.")
        if strides is None or copy:  # NumPy reshapes a C-order copy: a view of that copy
            c = laid_out(ndarray._from_node(self._node), "C")
            return c._derive("reshape", newshape, newshape, c_strides(newshape))
        return self._derive("reshape", newshape, newshape, strides)

    @traced
    def view(self, dtype=None, type=None) -> "ndarray":
        """NumPy's view: the same base read as another dtype; writes reach the base."""
        if type is None and isinstance(dtype, builtins.type) and issubclass(dtype, np.ndarray):
            dtype, type = None, dtype
        dt = self.dtype if dtype is None else np.dtype(dtype)
        # a NumPy subclass, or data tracer does not record: NumPy's view of a copy
        lazy_type = type is None or issubclass(ndarray, type)  # tracer.numpy.ndarray is one
        if not lazy_type or dt.kind in "OSUVMm" or self.dtype.kind in "OSUVMm":
            args = () if dtype is None else (dtype,)
            kwargs = {} if type is None else {"type": type}
            return builtins.type(self).__getattr__(self, "view")(*args, **kwargs)
        if stands_for_scalar(self) and dt.itemsize == self.itemsize:  # NumPy: a scalar
            return self._alias() if dt == self.dtype else \
                ndarray._from_node(bitcast(self._node, dt))
        if dt == self.dtype:  # a view all the same (its base is this array's): a no-op step
            return self._derive("reshape", self.shape, self.shape, self._view.strides)
        # NumPy's own errors and result layout, from a stand-in with this array's strides
        st = tuple(int(s * self.itemsize) for s in self._view.strides)
        out = np.lib.stride_tricks.as_strided(np.zeros(1, self.dtype), self.shape, st).view(dt)
        strides = tuple(s // dt.itemsize if s % dt.itemsize == 0 else Fraction(s, dt.itemsize)
                        for s in out.strides)
        return self._derive("bitcast", dt, out.shape, strides)

    def _ravel_order(self, order) -> "ndarray":
        """ravel in `order`: a view only where NumPy's ravel gives one (the array is contiguous
        in that order, with positive strides), else a copy, as reshape(-1) would not be."""
        if order not in (None, "C", "F", "A", "K"):
            raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
        st = self._view.strides
        if order == "A":
            order = "F" if contiguous(self.shape, st, "F") and \
                not contiguous(self.shape, st, "C") else "C"
        if order == "K":
            perm = sorted(range(self.ndim), key=lambda i: -abs(st[i]))
            x = self.transpose(perm)
            order = "C"
        else:
            x = self.transpose() if order == "F" else self
        xs = x._view.strides
        if contiguous(x.shape, xs, "C") and all(s >= 0 for s in xs):
            return x.reshape(-1)
        return ndarray._from_node(G.reshape(x._node, (x.size,)))

    def _broadcast_view(self, shape) -> "ndarray":
        shape = tuple(shape)
        if shape == self.shape:  # a read-only view; NumPy's 0-d result is an array
            out = self._alias(View(self._view.steps, self.shape, self._view.strides, False))
            if out.ndim == 0:
                out._arr0 = True
            return out
        pad = len(shape) - self.ndim
        st = (0,) * pad + tuple(0 if s == 1 and d != 1 else t for s, d, t in
                                zip(self.shape, shape[pad:], self._view.strides))
        return self._derive("broadcast", shape, shape, st, writeable=False)

    # ---- evaluation
    def __array__(self, dtype=None, copy=None):
        from .runtime import to_numpy
        a = to_numpy(self)
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        if copy:
            return a.copy()
        return a

    def get(self) -> np.ndarray:
        return np.array(self.__array__())

    @traced
    def _probe(self, fn):
        """Run fn on a zero-byte stand-in first: errors NumPy raises from the shape or dtype
        alone (size != 1, bad index) come without evaluating anything."""
        fn(proxy(self.shape, self.dtype))

    def tolist(self):
        return self.__array__().tolist()

    def item(self, *args):
        self._probe(lambda p: p.item(*args))
        return self.__array__().item(*args)

    def __repr__(self) -> str:
        if self.ndim == 0 and not getattr(self, "_arr0", False):
            return repr(self.__array__()[()])
        return repr(self.__array__())

    def __str__(self) -> str:
        return str(self.__array__())

    def __format__(self, spec: str) -> str:
        return format(self.__array__()[()] if self.ndim == 0 else self.__array__(), spec)

    def __bool__(self) -> bool:
        self._probe(bool)
        return bool(self.__array__())

    def __float__(self) -> float:
        self._probe(float)
        return float(self.__array__())

    def __int__(self) -> int:
        self._probe(int)
        return int(self.__array__())

    def __complex__(self) -> complex:
        self._probe(complex)
        return complex(self.__array__())

    def __index__(self) -> int:
        self._probe(lambda p: p.__index__())
        return self.__array__().__index__()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self):
        # a 0-d result stands for a NumPy scalar, which hashes (evaluates, like bool())
        if self.ndim == 0 and not getattr(self, "_arr0", False):
            return hash(self.item())
        raise TypeError("unhashable type: 'tracer.ndarray'")

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()


class Flags:
    """The NumPy flags a lazy array can answer from its view (attributes or keys)."""

    _KEYS = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous",
             "OWNDATA": "owndata", "WRITEABLE": "writeable", "ALIGNED": "aligned",
             "WRITEBACKIFCOPY": "writebackifcopy", "C": "c_contiguous", "F": "f_contiguous",
             "W": "writeable", "O": "owndata", "A": "aligned", "FNC": "fnc", "FORC": "forc"}

    def __init__(self, a: "ndarray"):
        object.__setattr__(self, "_a", a)

    @property
    def c_contiguous(self) -> bool:
        return contiguous(self._a.shape, self._a._view.strides, "C")

    @property
    def f_contiguous(self) -> bool:
        return contiguous(self._a.shape, self._a._view.strides, "F")

    @property
    def fnc(self) -> bool:
        return self.f_contiguous and not self.c_contiguous

    @property
    def forc(self) -> bool:
        return self.f_contiguous or self.c_contiguous

    @property
    def owndata(self) -> bool:
        return not self._a._view.steps

    @property
    def writeable(self) -> bool:
        return self._a._view.writeable

    aligned = True
    writebackifcopy = False

    def __setattr__(self, name: str, value) -> None:
        if name != "writeable":
            raise AttributeError(f"cannot set flag {name!r} of a lazy array")
        v = self._a._view
        if value and not v.writeable and v.steps and v.steps[-1][0] == "broadcast":
            raise ValueError("cannot set WRITEABLE flag to True of this array")
        self._a._view = View(v.steps, v.shape, v.strides, bool(value))

    def __getitem__(self, key: str):
        return getattr(self, self._KEYS[key.upper()])

    def __setitem__(self, key: str, value) -> None:
        setattr(self, self._KEYS[key.upper()], value)

    def __repr__(self) -> str:
        return "\n".join(f"  {k} : {self[k]}" for k in ("C_CONTIGUOUS", "F_CONTIGUOUS",
                                                        "OWNDATA", "WRITEABLE", "ALIGNED",
                                                        "WRITEBACKIFCOPY")) + "\n"


def stands_for_scalar(a: "ndarray") -> bool:
    """A 0-d result where NumPy gives an immutable scalar (a[1], a.sum(), np.add(a0, 1)): not
    an array the user built or NumPy returns as a 0-d array (`_arr0`), nor a view of one."""
    return a.ndim == 0 and not getattr(a, "_arr0", False) and not a._view.steps


def proxy(shape, dtype=np.int8) -> np.ndarray:
    """A zero-byte array of any shape: run NumPy's checks on it to get NumPy's exact errors."""
    return np.broadcast_to(np.zeros((), dtype), tuple(shape))


def _reshape_order(order, a: "ndarray") -> str:
    if order is None:
        return "C"
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if order == "K":
        raise ValueError("order 'K' is not permitted for reshaping")
    if order == "A":
        shape, st = a.shape, a._view.strides
        return "F" if contiguous(shape, st, "F") and not contiguous(shape, st, "C") else "C"
    return order


def _infer_shape(size: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's rules: any negative entry is the one unknown dimension."""
    neg = [i for i, s in enumerate(shape) if s < 0]
    if len(neg) > 1:
        raise ValueError("can only specify one unknown dimension")
    known = math.prod(s for s in shape if s >= 0)
    if neg:
        if known == 0 or size % known:
            _reshape_error(size, shape)
        shape = tuple(size // known if s < 0 else s for s in shape)
    if math.prod(shape) != size:
        _reshape_error(size, shape)
    return shape


def _reshape_error(size, shape):
    """NumPy's own message: reshaping a zero-byte array of the same size raises it."""
    proxy((size,)).reshape(shape)
    raise ValueError(f"cannot reshape array of size {size} into shape {shape_str(shape)}")


def shape_str(shape) -> str:
    """A shape as NumPy writes it in messages: (3,4), (5,)."""
    return "(" + ",".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def asarray_node(x: Any) -> Node:
    """The node for an operand: lazy arrays give theirs, anything else becomes a leaf."""
    if isinstance(x, ndarray):
        return x._node
    a = snapshot(x)
    if a.dtype.kind in "OUSV":
        raise TypeError(f"tracer: unsupported operand of dtype {a.dtype}")
    if a.ndim == 0:
        return G.const(a[()], a.dtype)
    return G.leaf(a)


