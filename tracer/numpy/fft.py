"""`tracer.numpy.fft`: NumPy's FFTs on evaluated inputs, returning lazy arrays (nothing to fuse
inside a transform: not counted as fallbacks, as tracer.linalg's factorizations); `fftfreq` and
`rfftfreq` take the array API's `dtype`; `fftshift` and `ifftshift` are lazy rolls."""
from __future__ import annotations

import functools as _functools

import numpy as _np

from .. import creation as _C
from ..dispatch import LAZY as _LAZY
from ..linalg import _run_numpy


def _evaluating(name: str):
    fn = getattr(_np.fft, name)

    @_functools.wraps(fn)
    def call(*args, **kwargs):
        return _run_numpy(fn, args, kwargs)
    call.__module__ = __name__
    return call


fft = _evaluating("fft")
ifft = _evaluating("ifft")
fft2 = _evaluating("fft2")
ifft2 = _evaluating("ifft2")
fftn = _evaluating("fftn")
ifftn = _evaluating("ifftn")
rfft = _evaluating("rfft")
irfft = _evaluating("irfft")
rfft2 = _evaluating("rfft2")
irfft2 = _evaluating("irfft2")
rfftn = _evaluating("rfftn")
irfftn = _evaluating("irfftn")
hfft = _evaluating("hfft")
ihfft = _evaluating("ihfft")


def _shifted(x, axes, sign: int):
    """NumPy's fftshift/ifftshift: a roll by half of each axis (lazy)."""
    x = _C.asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
        shift = [sign * (dim // 2) for dim in x.shape]
    elif isinstance(axes, (int, _np.integer)):
        shift = sign * (x.shape[axes] // 2)
    else:
        shift = [sign * (x.shape[ax] // 2) for ax in axes]
    return _LAZY["roll"](x, shift, axes)


def fftshift(x, axes=None):
    return _shifted(x, axes, 1)


def ifftshift(x, axes=None):
    return _shifted(x, axes, -1)


def fftfreq(n, d=1.0, device=None, *, dtype=None):
    r = _run_numpy(_np.fft.fftfreq, (n, d), {"device": device})
    return r if dtype is None else r.astype(dtype, copy=False)


def rfftfreq(n, d=1.0, device=None, *, dtype=None):
    r = _run_numpy(_np.fft.rfftfreq, (n, d), {"device": device})
    return r if dtype is None else r.astype(dtype, copy=False)
