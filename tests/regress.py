"""What the regression tests of NumPy behaviour share: the modes they run in, quiet fallback
warnings, and comparing a program's outcome under NumPy and under tracer.numpy."""
from __future__ import annotations

import warnings

import numpy
import pytest

import tracer
import tracer.numpy as np

MODES = {"small": dict(small_graph=4096), "compiled": dict(small_graph=0, compile_mode="sync"),
         "tiered": dict(small_graph=0, compile_mode="tiered")}


def modes(*names: str):
    """Parametrize a test's `mode` over these modes (all three by default)."""
    names = names or tuple(MODES)
    return pytest.mark.parametrize("mode", [MODES[n] for n in names], ids=names)


@pytest.fixture(autouse=True)
def quiet():
    """Fallbacks and NumPy's value warnings are expected here; the results are what count."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tracer.TracerFallbackWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", numpy.exceptions.ComplexWarning)
        yield


def outcome(fn, m):
    """fn(m)'s result as NumPy values (arrays and NumPy scalars compared by dtype, shape and
    bits) or its exception (type and message)."""
    try:
        r = fn(m)
    except Exception as e:  # noqa: BLE001  (the exception is the result compared)
        return type(e), str(e)
    rs = r if isinstance(r, tuple) else (r,)
    return tuple((numpy.asarray(x).dtype, numpy.asarray(x).shape, numpy.asarray(x).tobytes())
                 if isinstance(x, (tracer.ndarray, numpy.ndarray, numpy.generic)) else x
                 for x in rs)


def same(fn):
    assert outcome(fn, np) == outcome(fn, numpy)
