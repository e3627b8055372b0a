"""Operators and methods of the lazy array, each a line that records through the lazy
functions; `install` puts them on the class."""
from __future__ import annotations

import numpy as np

from . import graph as G
from . import reductions as R
from . import building, eager, einsum, element, linalg, sorting
from .dispatch import LAZY
from .array import lazy, ndarray, stands_for_scalar
from .creation import zeros_like
from .manipulation import squeeze, swapaxes
from .products import dot, matmul
from .segments import reduceat
from .selection import clip, nonzero
from .recording import proxy, traced
from .view import laid_out
from .indexing import _is_scalar_key, _norm_key, getitem, quick_view, setitem
from .fallback import (FOREIGN_KINDS, _wrap, count_fallback, fallback_call, fallback_method, foreign_operand,
                       numpy_operator)
from .store import to_numpy
from .ufuncs import apply_ufunc, call_ufunc, record_binary
from .write import assign_full


def _binary(uf, dunder, reflected=False):
    def op(self, other):  # an operand neither a lazy array nor a number (eager.operator)
        if foreign_operand(other):
            return numpy_operator(self, dunder, other)  # strings, objects, Decimal, ...
        return apply_ufunc(uf, (other, self) if reflected else (self, other))
    return eager.operator(uf, record_binary, op, reflected)


def _unary(uf):
    def op(self):
        r = eager.ufunc(uf, (self,))
        return apply_ufunc(uf, (self,)) if r is eager.NO else r
    return op


def _inplace(uf, dunder):
    def op(self, other):
        if not isinstance(other, (ndarray, int, float, complex)) and foreign_operand(other):
            return numpy_operator(self, dunder, other)
        if stands_for_scalar(self):  # `s += x` rebinds s to a new scalar, as in NumPy
            r = eager.ufunc(uf, (self, other))
            return apply_ufunc(uf, (self, other)) if r is eager.NO else r
        if not element.update(uf, self, other):
            apply_ufunc(uf, (self, other), out=self)
        return self
    return op


def _getitem(self, key):
    """a[key] where element.indexer does not take it."""
    if self._view.shape and not _is_scalar_key(self, _norm_key(key)):
        v = quick_view(self, key)
        if v is not None:
            return v
        r = element.get_items(self, key)  # a view NumPy would make comes back NO: recorded
        if r is not eager.NO:
            return r
    return getitem(self, key)


def _divmod(self, other):
    return apply_ufunc(np.floor_divide, (self, other)), apply_ufunc(np.remainder, (self, other))


def _matmul(self, other):
    r = eager.binary(np.matmul, self, other)
    return matmul(self, other) if r is eager.NO else r


def _rmatmul(self, other):
    r = eager.binary(np.matmul, other, self)
    return matmul(other, self) if r is eager.NO else r


@traced
def _imatmul(self, other):
    other = lazy(other)
    if self.ndim < 1 or other.ndim < 2:
        raise ValueError("inplace matrix multiplication requires the first operand to have at "
                         "least one and the second at least two dimensions.")
    res = matmul(self, other)
    if res.shape != self.shape:
        from numpy.lib.stride_tricks import as_strided
        out = as_strided(np.zeros(1), self.shape, (0,) * self.ndim, writeable=True)
        np.matmul(proxy(self.shape), proxy(other.shape), out=out)  # NumPy's own message
        raise ValueError(f"matmul: output shape {self.shape} does not match {res.shape}")
    if not np.can_cast(res.dtype, self.dtype, "same_kind"):
        np.matmul(np.zeros((1, 1), self.dtype), np.zeros((1, 1), other.dtype),
                  out=np.zeros((1, 1), self.dtype))  # NumPy's own UFuncTypeError
        raise TypeError(f"Cannot cast matmul output from {res.dtype!r} to {self.dtype!r}")
    assign_full(self, G.cast(res._node, self.dtype))
    return self


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    dt = np.dtype(dtype)
    if dt.kind in FOREIGN_KINDS:  # strings, objects, dates: a NumPy array, as tracer makes them
        return np.asarray(self).astype(dt, order, casting, subok, copy)
    if not np.can_cast(self.dtype, dt, casting):
        raise TypeError(f"Cannot cast array data from {self.dtype!r} to {dt!r} according to the "
                        f"rule {casting!r}")
    if dt == self.dtype and not copy:
        return self
    with np.errstate(all="ignore"):
        return _copied_from(self, laid_out(ndarray._from_node(G.cast(self._node, dt)), order, self))


def _copy(self, order="C"):
    return _copied_from(self, laid_out(ndarray._from_node(self._node), order, self))


def _copied_from(src: ndarray, res: ndarray) -> ndarray:
    """A copy of a 0-d array is an array, of a scalar a scalar, as in NumPy."""
    if src.ndim == 0 and not stands_for_scalar(src):
        res._arr0 = True
    return res


def _fill(self, value):
    setitem(self, Ellipsis, value)


def _flatten(self, order="C"):
    return ndarray._from_node(self._ravel_order(order)._node)


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    if method == "__call__" and ufunc is np.matmul:
        return matmul(*inputs, **kwargs)
    if method == "__call__" and not any(map(foreign_operand, inputs[:ufunc.nin])):
        return call_ufunc(ufunc, inputs, kwargs)
    if method == "reduce" and ufunc in R._REDUCE_OP:
        return R.reduce(ufunc, *inputs, **kwargs)
    if method == "reduceat":
        return reduceat(ufunc, *inputs, **kwargs)
    return fallback_call(f"{ufunc.__name__}.{method}", getattr(ufunc, method), inputs, kwargs)


def _array_function(self, func, types, args, kwargs):
    impl = LAZY.get(func.__name__)
    if impl is not None and getattr(np, func.__name__, None) is func:
        return impl(*args, **kwargs)
    if getattr(func, "__module__", None) == "numpy.linalg" and \
            getattr(np.linalg, func.__name__, None) is func:
        return getattr(linalg, func.__name__)(*args, **kwargs)
    return fallback_call(func.__name__, func, args, kwargs)


def _getattr(self, name):
    if name.startswith("__") or not hasattr(np.ndarray, name):
        raise AttributeError(f"'tracer.ndarray' object has no attribute {name!r}")
    attr = getattr(np.ndarray, name)
    if not callable(attr):
        count_fallback(f"ndarray.{name}")
        return _wrap(getattr(np.array(to_numpy(self)), name))
    return fallback_method(self, name)


def install() -> None:
    """Install the operators and methods on the lazy array class (tracer.numpy calls it as it
    loads, once every module they use is loaded)."""
    for name, uf in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                     ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                     ("mod", np.remainder), ("pow", np.power), ("and", np.bitwise_and),
                     ("or", np.bitwise_or), ("xor", np.bitwise_xor), ("lshift", np.left_shift),
                     ("rshift", np.right_shift)]:
        setattr(ndarray, f"__{name}__", _binary(uf, f"__{name}__"))
        setattr(ndarray, f"__r{name}__", _binary(uf, f"__r{name}__", reflected=True))
        setattr(ndarray, f"__i{name}__", _inplace(uf, f"__i{name}__"))
    for name, uf in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                     ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
        setattr(ndarray, f"__{name}__", _binary(uf, f"__{name}__"))
    for name, uf in [("neg", np.negative), ("pos", np.positive), ("abs", np.absolute),
                     ("invert", np.invert)]:
        setattr(ndarray, f"__{name}__", _unary(uf))
    ndarray.__divmod__ = _divmod
    ndarray.__matmul__ = _matmul
    ndarray.__rmatmul__ = _rmatmul
    ndarray.__imatmul__ = _imatmul
    ndarray.__getitem__ = element.indexer(_getitem)
    ndarray.__setitem__ = element.writer(setitem)
    ndarray.__array_ufunc__ = _array_ufunc
    ndarray.__array_function__ = _array_function
    ndarray.astype = _astype
    ndarray.copy = _copy
    ndarray.fill = _fill
    ndarray.flatten = _flatten
    ndarray.ravel = lambda self, order="C": self._ravel_order(order)
    ndarray.squeeze = lambda self, axis=None: squeeze(self, axis)
    ndarray.swapaxes = lambda self, a, b: swapaxes(self, a, b)
    ndarray.clip = lambda self, min=None, max=None, out=None, **kw: clip(self, min, max, out)
    ndarray.dot = lambda self, b, out=None: dot(self, b, out)
    for n in ("sum", "prod", "max", "min", "any", "all", "mean", "var", "std", "argmax", "argmin"):
        setattr(ndarray, n, eager.method(n, getattr(R, n)))
    ndarray.__getattr__ = _getattr
    ndarray.real = property(lambda self: self if self.dtype.kind != "c" else
                            _getattr(self, "real"))
    ndarray.imag = property(lambda self: zeros_like(self) if self.dtype.kind != "c"
                            else _getattr(self, "imag"))
    ndarray.conj = ndarray.conjugate = _unary(np.conjugate)
    ndarray.round = lambda self, decimals=0, out=None: fallback_method(self, "round")(decimals)
    ndarray.__round__ = lambda self, ndigits=None: round(self.item(), ndigits) if self.ndim == 0 \
        else fallback_method(self, "round")(ndigits or 0)
    ndarray.nonzero = lambda self: nonzero(self)
    for mod in (sorting, building, einsum):
        for n, fn in mod.METHODS.items():
            setattr(ndarray, n, fn)
    for n in ("item", "tolist", "__float__", "__int__", "__complex__", "__bool__", "__index__"):
        setattr(ndarray, n, element.reader(n, vars(ndarray)[n]))
    ndarray.__iter__ = (lambda slow: lambda self: element.iterate(self, slow))(ndarray.__iter__)
    for n in ("dot", "clip", "copy", "cumsum", "cumprod", "trace", "nonzero", "round",
              "argsort", "searchsorted", "repeat", "take"):
        if n in vars(ndarray):  # methods that return new arrays: by NumPy where eager.call can
            setattr(ndarray, n, eager.method(n, vars(ndarray)[n]))
