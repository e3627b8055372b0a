"""Pickling (issue 22 item 1): a lazy array pickles as its values, evaluated when pickled, and
comes back a realized array of its own with its shape, dtype, layout and flags; joblib and
multiprocessing hand tracer arrays to other processes."""
from __future__ import annotations

import copy
import multiprocessing
import pickle

import numpy
import pytest

import tracer
import tracer.numpy as np

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


def _round_trip(x):
    y = pickle.loads(pickle.dumps(x))
    assert isinstance(y, tracer.ndarray)
    assert y.shape == x.shape and y.dtype == x.dtype
    numpy.testing.assert_array_equal(numpy.asarray(y), numpy.asarray(x))
    return y


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips(dtype):
    h = (numpy.arange(12) % 5 - 2).astype(dtype).reshape(3, 4)
    _round_trip(np.asarray(h))
    _round_trip(np.asarray(h) * 2)  # pending: evaluated as it is pickled


def test_views_come_back_independent_with_their_layout():
    h = numpy.arange(24.0).reshape(4, 6)
    a = np.array(h)
    for v in (a[1:3, ::2], a.T, a[::-1], a[2], np.array(numpy.asfortranarray(h))):
        y = _round_trip(v)
        ref = pickle.loads(pickle.dumps(numpy.asarray(v)))
        assert y.flags.c_contiguous == ref.flags.c_contiguous
        assert y.flags.f_contiguous == ref.flags.f_contiguous
    v = a[1:3]
    y = pickle.loads(pickle.dumps(v))
    y[0, 0] = -1.0  # NumPy's unpickled view owns its data: the original is untouched
    assert float(a[1, 0]) == h[1, 0] and float(y[0, 0]) == -1.0


def test_0d_arrays_and_scalars_and_flags_round_trip():
    a = np.array(numpy.arange(5.0))
    s = pickle.loads(pickle.dumps(a.sum()))  # a 0-d result standing for NumPy's scalar
    assert repr(s) == repr(numpy.arange(5.0).sum())
    z = pickle.loads(pickle.dumps(np.array(3.0)))  # a 0-d array stays an array
    assert repr(z) == repr(numpy.array(3.0))
    r = np.array(numpy.ones(3))
    r.flags.writeable = False
    y = pickle.loads(pickle.dumps(r))
    assert not y.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        y[0] = 2.0
    d = copy.deepcopy([a, a])  # copy/deepcopy stay arrays
    assert isinstance(d[0], tracer.ndarray)


def _total(x):
    return float((x * 2).sum())


@pytest.mark.slow
def test_a_spawned_process_pool_takes_tracer_arrays():
    xs = [np.arange(float(n)) + 1 for n in (3, 4, 5)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        got = pool.map(_total, xs)
    assert got == [2 * sum(range(1, n + 1)) for n in (3, 4, 5)]
