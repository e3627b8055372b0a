"""tracer.numpy.random: NumPy's random streams, drawn on the host at call time.

Every function and method here runs NumPy's own generator the moment it is called and returns
the numbers as a lazy leaf (a NumPy scalar or Python number stays one, as NumPy returns it).
Drawing at call time, not when the graph is evaluated, is what keeps the stream exact: the
numbers come out in program order whatever gets evaluated later, or never, and a seeded script
gives NumPy's numbers. The legacy functions (`np.random.rand`, `seed`, ...) draw from NumPy's
global RandomState, so tracer.numpy.random and numpy.random share one stream, as two imports of
numpy would. Lazy arguments (loc=, p=, the array to choose from) are evaluated first; shuffle
and out= compute on a host copy and write it back through the lazy array, so every view of the
same base sees it. None of this counts as a fallback; anything else in numpy.random (not
defined here) runs NumPy and is counted.
"""
from __future__ import annotations

import inspect

import numpy as _np
from numpy.random import (BitGenerator, MT19937, PCG64, PCG64DXSM, Philox,  # noqa: F401
                          SeedSequence, SFC64, get_bit_generator, set_bit_generator)

from ..array import ndarray as _ndarray
from ..store import Var as _Var
from ..graph import leaf_of as _leaf_of
from ..fallback import _to_host, _wrap, fallback_getattr as _fallback_getattr
from ..indexing import setitem as _setitem
from ..store import to_numpy as _to_numpy
from ..view import apply_view_numpy as _apply_view_numpy


def _public_methods(numpy_cls, skip=()) -> list[str]:
    return [n for n in dir(numpy_cls)
            if not n.startswith("_") and n not in skip and callable(getattr(numpy_cls, n))]


# the methods with an out= (random, standard_normal, permuted, ...): their signatures place it
_SIGNATURES = {n: inspect.signature(getattr(_np.random.Generator, n))
               for n in _public_methods(_np.random.Generator)}
_OUT_SIGNATURES = {n: s for n, s in _SIGNATURES.items() if "out" in s.parameters}


def _host_out(out: _ndarray) -> _np.ndarray:
    """A host buffer laid out as `out` is (the same view steps on a base of the same shape), so
    NumPy accepts or rejects it (contiguity, dtype, shape) exactly as it would `out`."""
    buf = _apply_view_numpy(_np.empty(out._var.node.shape, out._var.node.dtype), out._view.steps)
    if not out._view.writeable:
        buf.flags.writeable = False
    return buf


def _shuffle(fn, args: tuple, kwargs: dict) -> None:
    """NumPy shuffles `x` in place: a lazy x as a host copy that is then written back through
    it, anything else (a NumPy array, a list) as given."""
    x = args[0] if args else kwargs.get("x")
    if not isinstance(x, _ndarray):
        return fn(*args, **kwargs)
    host = _np.array(_to_numpy(x))
    if not x._view.writeable:  # NumPy's "array is read-only", raised before anything is drawn
        host.flags.writeable = False
    if args:
        args = (host,) + args[1:]
    else:
        kwargs = {**kwargs, "x": host}
    fn(*_to_host(args), **_to_host(kwargs))
    _setitem(x, Ellipsis, host)


def _draw(fn, name: str, args: tuple, kwargs: dict):
    """Run NumPy's `fn` now on host values; arrays come back as lazy leaves."""
    if name == "shuffle":
        return _shuffle(fn, args, kwargs)
    if name in _OUT_SIGNATURES:
        try:
            bound = _OUT_SIGNATURES[name].bind(None, *args, **kwargs)
        except TypeError:
            bound = None  # NumPy raises its own error below
        out = None if bound is None else bound.arguments.get("out")
        if isinstance(out, _ndarray):
            bound.arguments["out"] = host = _host_out(out)
            fn(*_to_host(bound.args[1:]), **_to_host(bound.kwargs))
            _setitem(out, Ellipsis, host)
            return out
        if out is not None:  # a NumPy out= is filled and returned as NumPy does
            return fn(*_to_host(args), **_to_host(kwargs))
    gen = getattr(fn, "__self__", None)
    if isinstance(gen, _np.random.Generator):  # a big draw inside tracer.cluster: on workers
        from tracer import dask_cluster  # (with the engine: loaded at the first evaluation)
        remote = dask_cluster.draw(gen, name, args, kwargs)
        if remote is not None:
            return _ndarray(_Var(_leaf_of(remote)))
    res = fn(*_to_host(args), **_to_host(kwargs))
    # the state is NumPy's own tuple or dict, for set_state to take back
    return res if name == "get_state" else _wrap(res)


class _Drawing:
    """A NumPy RandomState or Generator (`_host`) whose public methods return lazy arrays."""

    __slots__ = ("_host",)

    def __str__(self) -> str:
        return str(self._host)

    def __repr__(self) -> str:
        return f"{self} at 0x{id(self):X}"

    def __reduce__(self):
        return _around, (type(self), self._host)


def _around(cls, host):
    """A tracer RandomState or Generator drawing from the NumPy object `host` (no copy)."""
    self = object.__new__(cls)
    self._host = host
    return self


def _install(cls, numpy_cls, names) -> None:
    for name in names:
        setattr(cls, name, _method(cls, numpy_cls, name))


def _method(cls, numpy_cls, name: str):
    def method(self, *args, **kwargs):
        return _draw(getattr(self._host, name), name, args, kwargs)
    method.__name__, method.__qualname__ = name, f"{cls.__name__}.{name}"
    method.__doc__ = getattr(numpy_cls, name).__doc__
    return method


class RandomState(_Drawing):
    """numpy.random.RandomState whose draws are lazy arrays (the same stream as NumPy's)."""

    __slots__ = ()

    def __init__(self, seed=None):
        self._host = _np.random.RandomState(_to_host(seed))


class Generator(_Drawing):
    """numpy.random.Generator whose draws are lazy arrays (the same stream as NumPy's)."""

    __slots__ = ()

    def __init__(self, bit_generator):
        self._host = _np.random.Generator(bit_generator)

    @property
    def bit_generator(self):
        return self._host.bit_generator

    def spawn(self, n_children):
        return [Generator(g.bit_generator) for g in self._host.spawn(n_children)]

    spawn.__doc__ = _np.random.Generator.spawn.__doc__


_install(RandomState, _np.random.RandomState, _public_methods(_np.random.RandomState))
_install(Generator, _np.random.Generator, _public_methods(_np.random.Generator, ("spawn",)))


def default_rng(seed=None) -> Generator:
    """numpy.random.default_rng whose Generator draws lazy arrays. A tracer Generator comes back
    unaltered; a NumPy one is wrapped around the same bit generator (one shared stream)."""
    if isinstance(seed, Generator):
        return seed
    return Generator(_np.random.default_rng(_to_host(seed)).bit_generator)


# the legacy functions are bound methods of NumPy's global RandomState, as in numpy.random
_global = _around(RandomState, _np.random.mtrand._rand)
globals().update({n: getattr(_global, n) for n in _public_methods(_np.random.RandomState)
                  if hasattr(_np.random, n)})
ranf = sample = random_sample  # noqa: F821  (NumPy's aliases; installed just above)


__getattr__ = _fallback_getattr(_np.random, "random.")
