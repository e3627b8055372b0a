"""Recording a NumPy call: the time it takes (stats().trace_s), and its errors as NumPy raises
them (NumPy's checks run on zero-byte stand-ins, its message formats, tracebacks that end in
tracer's frames rather than NumPy's)."""
from __future__ import annotations

import functools
import os
from sys import _getframe
from time import perf_counter

import numpy as np

from tracer.ir.stats import STATS
from . import debug

_depth = [0]
_INTERNAL = debug._INTERNAL  # file name -> whether its frames are tracer's or NumPy's
_NUMPY_DIR = os.path.dirname(np.__file__) + os.sep


def trim_numpy_tail(tb) -> None:
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


def call_site(name: str) -> tuple:
    """The raw site (debug.CURRENT) of the user's call of tracer's `name`, called from the
    caller of this function's caller: the innermost frame outside tracer and NumPy's dispatch
    (debug.user_frame, inline)."""
    f = start = _getframe(2)
    while f is not None:
        code = f.f_code
        inside = _INTERNAL.get(code.co_filename)
        if inside is None:
            inside = debug.internal(code.co_filename)
        if not inside:
            break
        f = f.f_back
    if f is None:
        f = start
    return (f.f_code, f.f_lasti, name, f.f_globals.get("__name__"))


def traced(fn, name: str | None = None):
    """Adds the time spent recording to stats().trace_s (outermost call only), notes the
    user's call site (debug.CURRENT, the entry point `name`: fn's own name by default), and
    ends the traceback of an error raised while recording in tracer's frames, not NumPy's."""

    if name is None:
        name = fn.__name__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _depth[0]:
            return fn(*args, **kwargs)
        _depth[0] = 1
        t0 = perf_counter()
        debug.CURRENT[0] = call_site(name)
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            trim_numpy_tail(e.__traceback__)
            raise
        finally:
            _depth[0] = 0
            debug.CURRENT[0] = None
            STATS.trace_s += perf_counter() - t0
    return wrapper


def proxy(shape, dtype=np.int8) -> np.ndarray:
    """A zero-byte array of any shape: run NumPy's checks on it to get NumPy's exact errors."""
    return np.broadcast_to(np.zeros((), dtype), tuple(shape))


def shape_str(shape) -> str:
    """A shape as NumPy writes it in messages: (3,4), (5,)."""
    return "(" + ",".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
