"""Reductions into `out=` of another dtype reduce in NumPy's loop: the promotion of out's dtype
and the array's (a float32 sum into a float64 out adds in float64), not the array's own loop
cast afterwards; mean/var/std divide in out's dtype."""
from __future__ import annotations

import numpy
import pytest

import tracer.numpy as np

pytestmark = pytest.mark.lazy

H = (numpy.random.default_rng(0).standard_normal((40, 300)) * 1000).astype(numpy.float32)


@pytest.mark.parametrize("fn", ["sum", "prod", "mean", "var", "std", "max", "min"])
@pytest.mark.parametrize("odt", [numpy.float64, numpy.complex128, numpy.float32])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions_into_a_wider_out_reduce_in_its_loop(fn, odt, axis):
    h = H[:, :20] / 1000 if fn == "prod" else H
    shape = numpy.sum(h, axis=axis).shape
    want, o = numpy.zeros(shape, odt), np.zeros(shape, odt)
    with numpy.errstate(all="ignore"):
        getattr(numpy, fn)(h, axis=axis, out=want)
        getattr(np, fn)(np.asarray(h), axis=axis, out=o)
    got = numpy.asarray(o)
    assert got.dtype == want.dtype
    # (NumPy adds cast operands in 8192-value buffers: its order is not the plain pairwise one)
    numpy.testing.assert_allclose(got, want, rtol=1e-13 if fn in ("sum", "mean") else 1e-6)


def test_integer_sum_into_a_narrow_out_wraps_as_numpys():
    h = numpy.arange(1000, dtype=numpy.int32) * 7
    want, o = numpy.zeros((), numpy.int8), np.zeros((), numpy.int8)
    numpy.sum(h, out=want)
    np.sum(np.asarray(h), out=o)
    assert numpy.asarray(o) == want
