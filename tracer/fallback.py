"""The NumPy fallback: a function or operator tracer has no lazy version of runs NumPy on the
evaluated inputs, counted (`coverage_report`) and warned once per call site (not where there
is nothing to fuse: file I/O, other libraries' ufuncs); what NumPy wrote into a lazy argument
is written back through the write primitive."""
from __future__ import annotations

import numbers
import warnings
from typing import Any, Callable

import numpy as np

from tracer.ir.node import Node
from tracer.ir.stats import STATS
from . import debug
from .array import ndarray
from .mapped import held, leaf
from .store import Var, to_numpy
from .write import write_all

FOREIGN_KINDS = "OSUVMm"  # dtype kinds tracer does not record: NumPy runs on them


class TracerFallbackWarning(UserWarning):
    """A NumPy function ran eagerly on evaluated inputs because tracer has no lazy version."""


_FALLBACK_SITES: dict[tuple[str, str, int], int] = {}



def count_fallback(name: str, quiet: bool = False) -> None:
    """Count a fallback at the user's line, and warn the first time at that line unless
    `quiet`: the call has nothing tracer could fuse (file I/O, a ufunc of another library)."""
    STATS.fallbacks += 1
    f = debug.user_frame()
    key = (name, f.f_code.co_filename, f.f_lineno)
    first = key not in _FALLBACK_SITES
    _FALLBACK_SITES[key] = _FALLBACK_SITES.get(key, 0) + 1
    if first and not quiet:
        warnings.warn_explicit(
            f"tracer: {name} has no lazy implementation; it ran NumPy on evaluated inputs",
            TracerFallbackWarning, f.f_code.co_filename, f.f_lineno,
            module=f.f_globals.get("__name__", "?"))


# reading and writing files: nothing to fuse, so no warning (still counted)
QUIET = frozenset({"save", "savez", "savez_compressed", "savetxt", "load", "loadtxt",
                   "genfromtxt", "fromfile", "fromregex", "ndarray.tofile", "ndarray.dump",
                   "ndarray.dumps"})


def _nothing_to_fuse(name: str, fn, args=()) -> bool:
    """File I/O, a ufunc that is not NumPy's own (scipy.special's, say) or its method, or a call
    that another library's array in `args` takes over (a pandas Series: the result is its own)."""
    if name in QUIET or any(map(_of_another_library, args)):
        return True
    uf = fn if isinstance(fn, np.ufunc) else getattr(fn, "__self__", None)
    return isinstance(uf, np.ufunc) and getattr(np, uf.__name__, None) is not uf


def _of_another_library(x) -> bool:
    """An object that answers NumPy's protocols itself (pandas, xarray, dask): not NumPy's
    array or scalar, not tracer's."""
    return (hasattr(type(x), "__array_ufunc__") or hasattr(type(x), "__array_function__")) \
        and not isinstance(x, (np.ndarray, np.generic, ndarray))


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
    count_fallback(f"ndarray.{dunder}", _of_another_library(other))
    if r is host:
        write_all(a, host)
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
    return leaf(held(a))


def fallback_call(name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
    count_fallback(name, _nothing_to_fuse(name, fn, (*args, *kwargs.values())))
    out = kwargs.get("out")
    if isinstance(out, ndarray):  # NumPy fills a host copy, written back through the lazy array
        host = np.array(to_numpy(out))
        r = fn(*_to_host(args), **_to_host({**kwargs, "out": host}))
        write_all(out, host)
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
        for x, h, before in copies:  # only what NumPy wrote: an unchanged copy of a view of a
            if h.flags.writeable and h.tobytes() != before:  # written base stays out (bits:
                write_all(x, h)                               # -0.0 too)
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


def fallback_method(self, name):
    """Any other ndarray method runs NumPy on the evaluated array (warned and counted). An
    in-place method (sort, partition, ...) writes its result back into this array."""
    meth = getattr(np.ndarray, name)

    def call(*args, **kwargs):
        count_fallback(f"ndarray.{name}", f"ndarray.{name}" in QUIET)
        host = np.array(to_numpy(self), copy=True)
        host.flags.writeable = self._view.writeable  # NumPy's own error for in-place methods
        out = meth(host, *_to_host(args), **_to_host(kwargs))
        if out is None or out is host:  # in place (byteswap(inplace=True) returns the array)
            if self._view.writeable:
                write_all(self, host)
            return None if out is None else self
        return _wrap(out)
    return call
