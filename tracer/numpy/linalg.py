"""tracer.numpy.linalg (being written): anything not defined here runs numpy.linalg and is counted."""
from __future__ import annotations

import numpy as _np

from ..runtime import fallback_call as _fallback_call


def __getattr__(name: str):
    obj = getattr(_np.linalg, name)
    if callable(obj) and not isinstance(obj, type):
        def fallback(*args, **kwargs):
            return _fallback_call("linalg." + name, obj, args, kwargs)
        fallback.__name__ = name
        return fallback
    return obj
