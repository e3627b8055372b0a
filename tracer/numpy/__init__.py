"""`import tracer.numpy as np`: the drop-in namespace.

Functions listed here record lazily. Any other NumPy function still works: it evaluates its
inputs, runs NumPy, warns once per call site and is counted (`tracer.stats().fallbacks`).
It only re-exports: the table of lazy functions is tracer/dispatch.py. Importing it installs
the lazy array's operators and methods (tracer's own names load it first). `random` and `fft` load at
their first use, as NumPy's own do: numpy.random takes about 15 ms to import.
"""
from __future__ import annotations

import importlib as _importlib
import sys as _sys

import numpy as _np

from .. import methods as _methods
from ..dask_chunks import when_dask_imported as _when_dask_imported
from ..dispatch import LAZY as _LAZY, asnumpy, can_cast, ndarray, result_type, ufunc  # noqa: F401
from ..fallback import fallback_getattr as _fallback_getattr
from ..array import ndarray as _ndarray
from ..graph import leaf_of as _leaf_of
from ..store import Var as _Var

_methods.install()  # the lazy array's operators and methods, before any array can be made
_when_dask_imported()  # tracer's array as a dask.array chunk type

from . import _array_api  # noqa: E402
_LAZY.update(_array_api.FUNCTIONS)  # NumPy's array-API functions, numpy.unstack(x) too
globals().update(_LAZY)
sort, argsort = _array_api.sort, _array_api.argsort  # with the standard's `descending`
from . import linalg  # noqa: E402,F401
from ..interchange import from_dlpack  # noqa: E402,F401

# constants and types come straight from NumPy
from numpy import (pi, e, inf, nan, newaxis, euler_gamma, dtype, finfo, iinfo,  # noqa: E402,F401
                   promote_types, bool_, int8, int16, int32, int64,
                   uint8, uint16, uint32, uint64, float16, float32, float64, complex64,
                   complex128, intp, uintp, integer, floating, number, generic, signedinteger,
                   unsignedinteger, inexact, complexfloating, errstate, seterr, geterr,
                   isdtype, broadcast_shapes)
bool = _np.bool  # noqa: A001
__array_api_version__ = "2024.12"  # (tracer's own claim, not NumPy's leaking through)
__array_namespace_info__ = _np.__array_namespace_info__  # the same devices and dtypes
float_ = _np.float64
int_ = _np.int_


_numpy_getattr = _fallback_getattr(_np)


def load(file, mmap_mode=None, allow_pickle=False, fix_imports=True, encoding="ASCII", **kw):
    """NumPy's load; inside tracer.cluster, a big .npy file becomes a value of the cluster's
    whose blocks the workers read from the file (tracer/dask_cluster.py)."""
    cluster = _sys.modules.get("tracer.dask_cluster")  # (no cluster before it is loaded)
    if cluster is not None and allow_pickle is False and fix_imports is True and \
            encoding == "ASCII":
        remote = cluster.load(file, mmap_mode, kw)
        if remote is not None:
            return _ndarray(_Var(_leaf_of(remote)))
    return _numpy_getattr("load")(file, mmap_mode, allow_pickle, fix_imports, encoding, **kw)


def __getattr__(name: str):
    if name in ("random", "fft"):  # submodules imported on first use (setting the attribute)
        return _importlib.import_module("." + name, __name__)
    return _numpy_getattr(name)


def __dir__() -> list[str]:
    return sorted({*globals(), "random", "fft"})
