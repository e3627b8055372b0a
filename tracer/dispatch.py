"""The dispatch table of the drop-in namespace: NumPy's names mapped to tracer's lazy functions
(`LAZY`; `methods.py` reads it for `__array_function__`), the namespace's `ufunc` wrapper and
`ndarray` type. tracer.numpy only re-exports what is defined here.
"""
from __future__ import annotations

import builtins as _builtins
import math as _math
import inspect as _inspect
from types import FunctionType as _FunctionType

import numpy as _np

from . import creation as _CR
from . import manipulation as _MA
from . import products as _PR
from . import queries as _Q
from . import selection as _SE
from . import reductions as _R
from . import shaping as _S
from . import statfuncs as _ST
from . import orderstats as _OS
from . import sorting as _SO
from . import building as _B
from . import einsum as _E
from . import eager as _eager
from .array import ndarray as _Lazy
from .ufuncs import call_ufunc as _call_ufunc
from .fallback import (FOREIGN_KINDS as _FOREIGN_KINDS, fallback_call as _fallback_call,
                       foreign as _foreign, foreign_operand as _foreign_operand)
from .gather import ufunc_at_or_numpy as _ufunc_at
from .segments import reduceat as _reduceat


class _NdarrayType(type):
    """The type of `tracer.numpy.ndarray`. Lazy arrays and NumPy's own arrays are its instances;
    calling it is NumPy's constructor; a class deriving from it derives from NumPy's ndarray, so
    a user's subclass is a NumPy subclass, run by NumPy (tracer's functions fall back on it)."""

    def __new__(mcs, name, bases, namespace, **kwargs):
        if bases == (_np.ndarray,):  # tracer.numpy.ndarray itself
            return super().__new__(mcs, name, bases, namespace)
        bases = tuple(_np.ndarray if isinstance(b, _NdarrayType) else b for b in bases)
        return type(name, bases, dict(namespace), **kwargs)

    def __instancecheck__(cls, x) -> bool:
        return isinstance(x, (_Lazy, _np.ndarray))

    def __subclasscheck__(cls, c) -> bool:
        return issubclass(c, (_Lazy, _np.ndarray))

    def __call__(cls, shape, dtype=float, buffer=None, offset=0, strides=None, order=None):
        """NumPy's uninitialized array is zeros here; one over a buffer is NumPy's own, as it
        shares the buffer's memory."""
        if buffer is None and strides is None and _np.dtype(dtype).kind not in _FOREIGN_KINDS:
            return _CR.zeros(shape, dtype, order or "C")
        if isinstance(buffer, _Lazy):
            buffer = _np.asarray(buffer)
        return _np.ndarray(shape, dtype, buffer, offset, strides, order)

    def __getattribute__(cls, name):
        """Unbound methods and properties are the lazy array's: ndarray.sum(x), ndarray.shape."""
        if not name.startswith("_"):
            try:
                return getattr(_Lazy, name)
            except AttributeError:
                pass
        return super().__getattribute__(name)


class ndarray(_np.ndarray, metaclass=_NdarrayType):
    """NumPy's ndarray for isinstance, subclassing and construction; lazy arrays are
    `tracer.ndarray`. It derives from NumPy's ndarray only so that NumPy takes it as a type:
    `x.view(np.ndarray)` in a subclass's code."""

    def __repr__(self) -> str:
        return repr(self.view(_np.ndarray))


class ufunc:
    """A NumPy ufunc that records lazily (calls, reduce, reduceat, at); other methods (outer,
    ...) fall back to NumPy."""

    def __init__(self, uf: _np.ufunc):
        self._uf = uf
        self.__name__ = uf.__name__
        self.__doc__ = uf.__doc__

    def __call__(self, *args, **kwargs):
        r = _eager.ufunc(self._uf, args, kwargs)
        if r is not _eager.NO:
            return r
        if _builtins.any(map(_foreign_operand, args[:self._uf.nin])) or \
                _foreign_dtype(kwargs.get("dtype", _MISSING)):
            return _fallback_call(self.__name__, self._uf, args, kwargs)
        return _call_ufunc(self._uf, args, kwargs)

    def reduce(self, array, axis=0, dtype=None, out=None, keepdims=False, initial=_np._NoValue,
               where=True):
        return _R.reduce(self._uf, array, axis, dtype, out, keepdims, initial, where)

    def reduceat(self, array, indices, axis=0, dtype=None, out=None):
        return _reduceat(self._uf, array, indices, axis, dtype, out)

    def at(self, a, indices, b=None):
        """NumPy's unbuffered in-place `ufunc.at`: duplicate indices accumulate. Lazy (a
        scatter) for binary ufuncs into lazy arrays; otherwise NumPy runs it."""
        _ufunc_at(self._uf, a, indices, b)

    def __getattr__(self, name):
        attr = getattr(self._uf, name)
        if callable(attr):
            return lambda *a, **k: _fallback_call(f"{self.__name__}.{name}", attr, a, k)
        return attr

    def __repr__(self) -> str:
        return f"<tracer ufunc '{self.__name__}'>"


UFUNCS = {}
for _name, _obj in list(vars(_np).items()):  # not dir()+getattr: that imports numpy's lazy
    if isinstance(_obj, _np.ufunc):            # submodules (f2py, ma, testing, ...)
        UFUNCS[_name] = ufunc(_obj)

LAZY = dict(UFUNCS)
for _mod, _names in [
    (_CR, " ".join(_CR.NAMES)),
    (_MA, " ".join(_MA.NAMES)),
    (_SE, " ".join(_SE.NAMES)),
    (_PR, " ".join(_PR.NAMES)),
    (_Q, " ".join(_Q.NAMES)),
    (_R, "sum prod max min any all mean var std argmax argmin"),
    (_S, " ".join(_S.NAMES)),
    (_ST, " ".join(_ST.NAMES)),
    (_SO, " ".join(_SO.NAMES)),
    (_OS, " ".join(_OS.NAMES)),
    (_B, " ".join(_B.NAMES)),
    (_E, " ".join(_E.NAMES)),
]:
    for _n in _names.split():
        LAZY[_n] = getattr(_mod, _n)
LAZY.update(amax=_R.max, amin=_R.min, concat=_MA.concatenate)


# functions NumPy may run at once on small realized arrays (tracer.eager): each returns a new
# array or a scalar and writes into none of its arguments
_EAGER = frozenset("""all allclose amax amin any argmax argmin argpartition argsort argwhere around
    array_equal average bincount choose clip column_stack concat concatenate copy corrcoef
    count_nonzero cov cumprod cumsum diag diff digitize dot dstack ediff1d einsum fix histogram
    hstack in1d inner intersect1d isclose isin kron matmul max mean median min nanargmax
    nanargmin nancumprod nancumsum nanmax nanmean nanmedian nanmin nanpercentile nanprod
    nanquantile nanstd nansum nanvar nonzero outer pad partition percentile prod ptp quantile
    repeat roll round searchsorted select setdiff1d setxor1d sort stack std sum take
    take_along_axis tensordot tile trace tril triu union1d unique var vdot vstack where
    block full_like ones_like zeros_like empty_like""".split())

def _shape_size(shape) -> int:
    if isinstance(shape, (int, _np.integer)) and not isinstance(shape, bool):
        return int(shape)
    if type(shape) in (tuple, list) and _builtins.all(
            isinstance(d, (int, _np.integer)) and not isinstance(d, bool) for d in shape):
        return _math.prod(shape)
    raise TypeError  # not a shape: the lazy function raises NumPy's error


def _arange_size(*args, **kw):
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args + (1,))[:3]
    return _math.ceil((stop - start) / step)


# creation functions by NumPy at once where their result is small: its size from the arguments
_CREATION_SIZE = {
    "zeros": lambda shape, *a, **k: _shape_size(shape),
    "ones": lambda shape, *a, **k: _shape_size(shape),
    "empty": lambda shape, *a, **k: _shape_size(shape),
    "full": lambda shape, *a, **k: _shape_size(shape),
    "arange": _arange_size,
    "linspace": lambda start, stop, num=50, *a, **k: int(num),
    "eye": lambda N, M=None, *a, **k: int(N) * int(N if M is None else M),
    "identity": lambda n, *a, **k: int(n) * int(n),
}


def _size_or_big(size_of, args, kwargs) -> float:
    """The result's size, or infinity where the arguments do not tell it simply."""
    try:
        return size_of(*args, **kwargs)
    except Exception:  # odd arguments: the lazy function takes them and raises NumPy's error
        return _math.inf


# parameters where a string, None or any other object is data to hold, not an option
_DATA_PARAMS = ("fill_value", "x", "y")
_MISSING = object()


ndarray.__module__ = ufunc.__module__ = "tracer.numpy"  # where users meet them


def _positions(fn) -> dict[str, int]:
    """Where fn takes `dtype` and its data parameters (-1: by keyword only). Read from the code
    of a plain function (inspect.signature of each of the namespace's functions would cost a
    few milliseconds at import); anything else is left to inspect."""
    while not hasattr(fn, "__signature__") and hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    if not isinstance(fn, _FunctionType) or hasattr(fn, "__signature__"):
        try:
            params = _inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            return {}
        return {p.name: i if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else -1
                for i, p in enumerate(params) if p.name == "dtype" or p.name in _DATA_PARAMS}
    code = fn.__code__
    n = code.co_argcount  # positional parameters, then the keyword-only ones
    names = code.co_varnames[:n + code.co_kwonlyargcount]
    return {p: i if i < n else -1 for i, p in enumerate(names)
            if p == "dtype" or p in _DATA_PARAMS}


def _foreign_dtype(dtype) -> bool:
    try:
        return dtype is not _MISSING and dtype is not None and \
            _np.dtype(dtype).kind in _FOREIGN_KINDS
    except TypeError:  # not a dtype: the lazy function raises NumPy's error
        return False


def _guarded(name: str, fn):
    """fn, except that foreign data (see fallback.foreign), a dtype of strings, objects, records
    or dates, or an object as fill value runs NumPy's function (a fallback)."""
    npfn = getattr(_np, name, None)
    if npfn is None:
        return fn
    at = _positions(fn)
    dtype_at = at.pop("dtype", None)

    def argument(args, kwargs, name, i):
        return kwargs.get(name, args[i] if 0 <= i < len(args) else _MISSING)

    def for_numpy(args, kwargs) -> bool:
        if _builtins.any(map(_foreign, args)) or _builtins.any(map(_foreign, kwargs.values())):
            return True
        if dtype_at is not None and _foreign_dtype(argument(args, kwargs, "dtype", dtype_at)):
            return True
        values = (argument(args, kwargs, n, i) for n, i in at.items())
        return _builtins.any(v is not _MISSING and _foreign_operand(v) for v in values)

    now = name in _EAGER
    size_of = _CREATION_SIZE.get(name)

    def call(*args, **kwargs):
        if now:
            r = _eager.call(npfn, args, kwargs)
            if r is not _eager.NO:
                return r
        elif size_of is not None:
            r = _eager.create(npfn, _size_or_big(size_of, args, kwargs), args, kwargs)
            if r is not _eager.NO:
                return r
        if for_numpy(args, kwargs):
            return _fallback_call(name, npfn, args, kwargs)
        return fn(*args, **kwargs)
    call.__name__, call.__doc__, call.__wrapped__ = name, fn.__doc__, fn
    return call


# the array constructors hand foreign data back as NumPy arrays themselves, without a fallback
LAZY.update({n: _guarded(n, f) for n, f in LAZY.items() if not isinstance(f, ufunc)
              and n not in ("array", "asarray", "asanyarray", "ascontiguousarray")})


def result_type(*arrays_and_dtypes):
    """NumPy's result_type; a lazy array stands for its dtype (no evaluation)."""
    return _np.result_type(*[a.dtype if isinstance(a, _Lazy) else a for a in arrays_and_dtypes])


def can_cast(from_, to, casting="safe"):
    return _np.can_cast(from_.dtype if isinstance(from_, _Lazy) else from_, to, casting)


LAZY.update(result_type=result_type, can_cast=can_cast)  # numpy.result_type(lazy) comes here


def asnumpy(a):
    """The values of a lazy array as a NumPy array (evaluates)."""
    return _np.asarray(a)
