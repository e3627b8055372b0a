"""`import tracer.numpy as np`: the drop-in namespace.

Functions listed here record lazily. Any other NumPy function still works: it evaluates its
inputs, runs NumPy, warns once per call site and is counted (`tracer.stats().fallbacks`).
"""
from __future__ import annotations

import builtins as _builtins

import numpy as _np

from .. import functions as _F
from .. import reductions as _R
from .. import shaping as _S
from .. import statfuncs as _ST
from .. import sorting as _SO
from .. import building as _B
from .. import einsum as _E
from .. import methods as _methods  # noqa: F401  (installs the operators)
from ..array import ndarray  # noqa: F401  (tracer.numpy.ndarray is the lazy array type)
from ..ufuncs import call_ufunc as _call_ufunc
from ..runtime import fallback_call as _fallback_call, fallback_getattr as _fallback_getattr


class ufunc:
    """A NumPy ufunc that records lazily (calls, reduce, at); other methods (outer, ...) fall
    back to NumPy."""

    def __init__(self, uf: _np.ufunc):
        self._uf = uf
        self.__name__ = uf.__name__
        self.__doc__ = uf.__doc__

    def __call__(self, *args, **kwargs):
        return _call_ufunc(self._uf, args, kwargs)

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, initial=_np._NoValue,
               where=True):
        return _R.reduce(self._uf, array, axis, dtype, out, keepdims, initial, where)

    def at(self, a, indices, b=None):
        """NumPy's unbuffered in-place `ufunc.at`: duplicate indices accumulate. Lazy (a
        scatter) for binary ufuncs into lazy arrays; otherwise NumPy runs it."""
        from ..gather import ufunc_at
        if not ufunc_at(self._uf, a, indices, b):
            args = (a, indices) if b is None else (a, indices, b)
            _fallback_call(f"{self.__name__}.at", self._uf.at, args, {})

    def __getattr__(self, name):
        attr = getattr(self._uf, name)
        if callable(attr):
            return lambda *a, **k: _fallback_call(f"{self.__name__}.{name}", attr, a, k)
        return attr

    def __repr__(self) -> str:
        return f"<tracer ufunc '{self.__name__}'>"


_UFUNCS = {}
for _name in dir(_np):
    _obj = getattr(_np, _name)
    if isinstance(_obj, _np.ufunc):
        _UFUNCS[_name] = ufunc(_obj)
globals().update(_UFUNCS)

_LAZY = dict(_UFUNCS)
for _mod, _names in [
    (_F, "array asarray full zeros ones empty zeros_like ones_like empty_like full_like arange "
         "linspace eye identity reshape transpose permute_dims swapaxes moveaxis expand_dims "
         "squeeze broadcast_to broadcast_arrays ravel atleast_1d atleast_2d flip flipud fliplr "
         "copy concatenate stack vstack hstack where clip astype matmul dot vdot size shape ndim "
         "nonzero argwhere shares_memory may_share_memory"),
    (_R, "sum prod max min any all mean var std argmax argmin"),
    (_S, " ".join(_S.NAMES)),
    (_ST, " ".join(_ST.NAMES)),
    (_SO, " ".join(_SO.NAMES)),
    (_B, " ".join(_B.NAMES)),
    (_E, " ".join(_E.NAMES)),
]:
    for _n in _names.split():
        _LAZY[_n] = getattr(_mod, _n)
_LAZY.update(amax=_R.max, amin=_R.min, concat=_F.concatenate)


def _foreign(x, depth: int = 0) -> bool:
    """Data tracer does not record: a NumPy array of strings, objects, records or dates, or a
    list of strings (a string argument itself is an option, such as mode="constant")."""
    if isinstance(x, _np.ndarray):
        return x.dtype.kind in _F.FOREIGN_KINDS
    if isinstance(x, (list, tuple)) and depth < 2:
        return _builtins.any(isinstance(i, (str, bytes)) or _foreign(i, depth + 1) for i in x)
    return False


def _guarded(name: str, fn):
    """fn, except that foreign data (see _foreign) runs NumPy's function (a fallback)."""
    npfn = getattr(_np, name, None)
    if npfn is None:
        return fn

    def call(*args, **kwargs):
        if _builtins.any(map(_foreign, args)) or _builtins.any(map(_foreign, kwargs.values())):
            return _fallback_call(name, npfn, args, kwargs)
        return fn(*args, **kwargs)
    call.__name__, call.__doc__, call.__wrapped__ = name, fn.__doc__, fn
    return call


# array and asarray hand foreign data back as NumPy arrays themselves, without a fallback
_LAZY.update({n: _guarded(n, f) for n, f in _LAZY.items()
              if not isinstance(f, ufunc) and n not in ("array", "asarray")})
globals().update(_LAZY)
from . import linalg, random  # noqa: E402,F401

# constants and types come straight from NumPy
from numpy import (pi, e, inf, nan, newaxis, euler_gamma, dtype, finfo, iinfo,  # noqa: E402,F401
                   promote_types, bool_, int8, int16, int32, int64,
                   uint8, uint16, uint32, uint64, float16, float32, float64, complex64,
                   complex128, intp, uintp, integer, floating, number, generic, signedinteger,
                   unsignedinteger, inexact, complexfloating, errstate, seterr, geterr)
bool = _np.bool  # noqa: A001
float_ = _np.float64
int_ = _np.int_


def result_type(*arrays_and_dtypes):
    """NumPy's result_type; a lazy array stands for its dtype (no evaluation)."""
    return _np.result_type(*[a.dtype if isinstance(a, ndarray) else a for a in arrays_and_dtypes])


def can_cast(from_, to, casting="safe"):
    return _np.can_cast(from_.dtype if isinstance(from_, ndarray) else from_, to, casting)


_LAZY.update(result_type=result_type, can_cast=can_cast)  # numpy.result_type(lazy) comes here


def asnumpy(a):
    """The values of a lazy array as a NumPy array (evaluates)."""
    return _np.asarray(a)


__getattr__ = _fallback_getattr(_np)
