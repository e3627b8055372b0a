"""The lazy array.

A lazy array is a base variable (`Var`, whose `node` is the base buffer's current value) plus a view:
a chain of movement steps applied to it. Reading applies the chain; writing through a view records
an update of the base (functionalization), so every view of the same base sees the write.
"""
from __future__ import annotations

import builtins
import importlib
import math
import operator
import weakref
from typing import Any

import numpy as np

from tracer.ir.config import CONFIG
from tracer.ir.node import Node, _set_site
from . import graph as G
from .recording import proxy, shape_str, traced
from . import store as _store
from .debug import CURRENT, ERR_STATE, LAST_STATE, errstate_raises
from .mapped import held, leaf
from .store import _PENDING, BORROWED_SET, Var, evaluate_vars, reads_borrowed, to_numpy
from .view import (Flags, View, apply_step, bitcast, c_strides, contiguous, f_strides, laid_out,
                   nocopy_reshape)


def _buffer_strides(node: Node) -> tuple[int, ...]:
    """A new array's strides: a host leaf in Fortran order keeps it (np.asarray of an F-order
    array is F-order); anything else is C order."""
    v = node.attr("buf").value if node.op == "input" else None
    if isinstance(v, np.ndarray) and v.ndim > 1 and v.flags.f_contiguous and \
            not v.flags.c_contiguous:
        return f_strides(node.shape)
    return c_strides(node.shape)


class ndarray:
    """A lazy array: shape, dtype, ndim, size, nbytes and T never evaluate."""

    # _arr0: set on a 0-d array (np.array(5.), np.where, a[...], views of one); any other 0-d
    # result stands for the NumPy scalar NumPy returns there, and its repr is that scalar's
    # _hmemo: (base version, NumPy view of the values) for eager reads (tracer.eager.host)
    __slots__ = ("_var", "_view", "_memo", "_hmemo", "_arr0", "__weakref__")
    __array_priority__ = 100

    def __init__(self, var: Var, view: View | None = None):
        self._var = var
        if view is None:
            view = View((), var.node.shape, _buffer_strides(var.node))
            if var.owner is None:
                var.owner = weakref.ref(self)
        self._view = view
        self._memo: tuple | None = None
        self._hmemo: tuple | None = None

    # ---- the node behind this array
    @property
    def _node(self) -> Node:
        var = self._var
        if not self._view.steps:
            return var.node
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
        if cls is ndarray and node.op != "input":
            return fresh(node)
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
        self._view, self._memo, self._hmemo = r._view, None, None

    @property
    def dtype(self) -> np.dtype:
        memo = self._hmemo  # NumPy's view of the values, even an old one: the dtype stays
        if memo is not None:
            return memo[1].dtype
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
        shape, st = self._view.shape, self._view.strides  # transpose(), without its checks
        if len(shape) < 2:
            return self._alias()
        out = self._derive("transpose", tuple(range(len(shape)))[::-1], shape[::-1], st[::-1])
        memo = self._hmemo  # NumPy's view of the values, for eager reads (tracer.eager.host)
        if memo is not None and memo[0] == self._var.version:
            out._hmemo = (memo[0], memo[1].T)
        return out

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
        from fractions import Fraction  # here: fractions and decimal take ms to import
        strides = tuple(s // dt.itemsize if s % dt.itemsize == 0 else Fraction(s, dt.itemsize)
                        for s in out.strides)
        return self._derive("bitcast", dt, out.shape, strides)

    def _ravel_order(self, order) -> "ndarray":
        """ravel in `order`: a view only where NumPy's ravel gives one (the array is contiguous
        in that order: length-1 axes' strides, negative ones too, never count), else a copy, as
        reshape(-1) would not be."""
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
        if contiguous(x.shape, xs, "C"):
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
        a = to_numpy(self)
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        if copy:
            return a.copy()
        return a

    # ---- the array API (2024.12): the namespace, and the device, known without evaluating
    def __array_namespace__(self, *, api_version=None):
        if api_version is not None and api_version not in _API_VERSIONS:
            raise ValueError(f'Version "{api_version}" of the Array API Standard is not '
                             "supported.")
        return importlib.import_module("tracer.numpy._array_api").namespace()

    @property
    def device(self) -> str:
        return "cpu"  # as NumPy's: values come to the host when read, whatever the backend

    def to_device(self, device, /, stream=None):
        if stream is not None:
            raise ValueError("The stream argument in to_device() is not supported")
        if device != "cpu":
            raise ValueError(f"Unsupported device: {device}. Only 'cpu' is accepted.")
        return self

    # ---- DLPack and the CUDA array interface (tracer/interchange.py), zero-copy
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return _interchange().to_dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return _interchange().dlpack_device(self)

    @property
    def __cuda_array_interface__(self) -> dict:
        return _interchange().cuda_array_interface(self)

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
        if self._view.shape or self.dtype.kind not in "biufc":  # (a 0-d number cannot fail)
            self._probe(bool)
        return bool(self.__array__())

    def __float__(self) -> float:
        if self._view.shape or self.dtype.kind not in "biuf":
            self._probe(float)
        return float(self.__array__())

    def __int__(self) -> int:
        if self._view.shape or self.dtype.kind not in "biuf":
            self._probe(int)
        return int(self.__array__())

    def __complex__(self) -> complex:
        if self._view.shape or self.dtype.kind not in "biufc":
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

    def __reduce__(self):
        """pickle (joblib, multiprocessing, dask): the values, evaluated now, as NumPy pickles
        them (its layout kept), with the flags; unpickled, a realized array of its own: a view
        comes back independent of its base, as a NumPy view does."""
        return _unpickle, (to_numpy(self), self.flags.writeable, getattr(self, "_arr0", False))


def _unpickle(value: np.ndarray, writeable: bool, arr0: bool) -> ndarray:
    importlib.import_module("tracer.numpy")  # installs the methods: a worker may import no more
    out = ndarray(Var(G.leaf(value)))
    if arr0:
        out._arr0 = True  # (any other 0-d array stands for NumPy's scalar, as it did)
    if not writeable:
        out.flags.writeable = False
    return out


def _interchange():
    return importlib.import_module("tracer.interchange")  # (it imports this module)


_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")
_new = object.__new__
_C_VIEWS: dict[tuple[int, ...], View] = {}  # shape -> a new C-order array's view (views are
                                            # never changed in place: one serves them all)


def fresh(node: Node) -> ndarray:
    """ndarray(Var(node)) for a node just recorded (no leaf): a new array in C order that
    owns its base."""
    # Var(node)'s steps (debug.recorded, store._note_pending), inline
    if node.site is None:  # (set_site, inline)
        site = CURRENT[0]
        if site is not None:
            _set_site(node, site)
    state = _err_state()  # debug.errstate_raises(), its usual case inline
    if (LAST_STATE[1] if state is LAST_STATE[0] else errstate_raises()) or CONFIG.eager:
        return ndarray(Var(node))  # run now (debug.recorded): a leaf, laid out as it came
    var = _new(Var)
    var.node = node
    var.version = 0
    _PENDING[id(var)] = _ref(var)  # store._note_pending, inline
    pending = _store._pending_nodes + 1
    _store._pending_nodes = pending
    if pending > CONFIG.flush_nodes:
        var.owner = None  # (set below; the evaluation may read it)
        _store.flush()
    out = _new(ndarray)
    out._var = var
    view = _C_VIEWS.get(node.shape)
    out._view = c_view(node.shape) if view is None else view
    out._memo = out._hmemo = None
    var.owner = _ref(out)
    if BORROWED_SET and reads_borrowed(node):  # (see store.reads_borrowed)
        evaluate_vars([var])
    return out


def c_view(shape: tuple[int, ...]) -> View:
    """The view of a new C-order array of this shape (shared: views never change in place)."""
    view = _C_VIEWS.get(shape)
    if view is None:
        if len(_C_VIEWS) > 1024:
            _C_VIEWS.clear()
        view = _C_VIEWS[shape] = View((), shape, c_strides(shape))
    return view


_ref = weakref.ref
_err_state = ERR_STATE.get  # (a method of an imported name is looked up at every call)


def stands_for_scalar(a: "ndarray") -> bool:
    """A 0-d result where NumPy gives an immutable scalar (a[1], a.sum(), np.add(a0, 1)): not
    an array the user built or NumPy returns as a 0-d array (`_arr0`), nor a view of one."""
    return a.ndim == 0 and not getattr(a, "_arr0", False) and not a._view.steps


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


def asarray_node(x: Any) -> Node:
    """The node for an operand: lazy arrays give theirs, anything else becomes a leaf."""
    if isinstance(x, ndarray):
        return x._node
    a = held(x)
    if a.dtype.kind in "OUSV":
        raise TypeError(f"tracer: unsupported operand of dtype {a.dtype}")
    if a.ndim == 0:
        return G.const(a[()], a.dtype)
    return leaf(a)


def evaluate(*arrays):
    """Compute these arrays together as one graph; returns them (now realized)."""
    evaluate_vars([a._var for a in arrays if isinstance(a, ndarray)])
    return arrays[0] if len(arrays) == 1 else arrays


def lazy(a) -> ndarray:
    """An operand as a lazy array: itself, or a new one holding it."""
    return a if isinstance(a, ndarray) else ndarray._from_node(asarray_node(a))
