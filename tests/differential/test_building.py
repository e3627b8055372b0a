"""tracer/building.py against NumPy: block, put, put_along_axis, choose, piecewise (values,
dtypes, shapes, errors, writes seen through views), and what records without evaluating."""
from __future__ import annotations

import warnings

import numpy
import pytest

import tracer
import tracer.numpy as np

A = numpy.arange(12.0).reshape(3, 4) - 4
I = numpy.array([[0, 1, 2, 1], [2, 2, 0, 0], [1, 0, 1, 2]])


def check(got, want):
    assert isinstance(got, np.ndarray)
    g = numpy.asarray(got)
    assert g.dtype == numpy.asarray(want).dtype and g.shape == numpy.shape(want)
    numpy.testing.assert_array_equal(g, want)


def same_error(fn, exc=Exception):
    """fn(numpy) and fn(tracer.numpy) raise the same exception type and message."""
    with pytest.raises(exc) as want:
        fn(numpy)
    with pytest.raises(type(want.value)) as got:
        fn(np)
    assert str(got.value) == str(want.value)


# ------------------------------------------------------------------ block

BLOCKS = {
    "2x2": lambda m, a: [[a, a[:, :2]], [a[:1], a[:1, :2]]],
    "1d": lambda m, a: [a[0], m.asarray([1.5, 2]), 3],
    "3d": lambda m, a: [[[a[None]], [a[None]]]],
    "scalars": lambda m, a: [[1, 2], [3, 4]],
    "mixed": lambda m, a: [a.astype(m.int8), a.astype(m.uint8)],
    "single": lambda m, a: a,
}


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_block_matches_numpy(name):
    a = np.asarray(A)
    before = tracer.stats().evaluations
    got = np.block(BLOCKS[name](np, a))
    assert tracer.stats().evaluations == before
    check(got, numpy.block(BLOCKS[name](numpy, A)))


def test_block_single_array_is_a_copy_and_errors_match():
    a = np.asarray(A)
    b = np.block(a)
    b[0, 0] = 100
    assert float(a[0, 0]) == A[0, 0]
    for arrays in (lambda m: [[m.asarray(A)], m.asarray(A)], lambda m: [[m.asarray(A)], []],
                   lambda m: (m.asarray(A), m.asarray(A)), lambda m: [],
                   lambda m: [[m.asarray(A), m.asarray(A)[:2]], [m.asarray(A)]]):
        same_error(lambda m: m.block(arrays(m)))


def test_block_big_uses_numpys_slicing_checks():
    big = numpy.zeros((2, 512 * 512 + 1), numpy.float32)
    same_error(lambda m: m.block([[m.asarray(big)], [m.asarray(big[:, 1:])]]), ValueError)
    got = np.block([[np.asarray(big)], [np.asarray(big).astype(np.int16)]])
    assert got.dtype == numpy.float32 and got.shape == (4, 512 * 512 + 1)


# ------------------------------------------------------------------ put

def _put_cases(m, x):
    """A sequence of puts into x and views of it; returns the views to compare."""
    t, row = x.T, x[1]
    m.put(x, [0, 5, -1, 5], [10, 20])  # values repeat; the last duplicate wins
    t.put([0, 1, 13, -14], [7, 8, 9], mode="wrap")  # a transposed view: a copy written back
    row.put(m.asarray([0, 9, -3]), m.asarray([-5.5]), mode="clip")  # lazy indices
    x[::2].put(m.asarray([[4, 1]]), [3, 2, 1])  # lazy indices in "raise" mode
    m.put(x, [], [1])
    m.put(x, [2], [])
    return x, t, row


def test_put_matches_numpy_through_views():
    want = _put_cases(numpy, A.copy())
    x = np.asarray(A)
    before = tracer.stats().evaluations
    got = _put_cases(np, x)
    assert tracer.stats().evaluations == before
    for g, w in zip(got, want):
        check(g, w)
    ints = numpy.zeros(5, numpy.int8)
    lazy = np.asarray(ints)
    for m, a in ((numpy, ints), (np, lazy)):
        m.put(a, [0, 1, 2], numpy.array([1.7, -2.5, 300.0]))  # arrays cast unsafely
        a.put(3, 1e300 * 0 + 7)
    check(lazy, ints)


@pytest.mark.lazy
def test_put_errors_match_numpy():
    for fn in (lambda m: m.asarray(A.copy()).put([12], 1),
               lambda m: m.asarray(A.copy()).put([-13], 1),
               lambda m: m.asarray(A.copy()).put(m.asarray([1.0]), 1),
               lambda m: m.asarray(A.copy()).put([1], 1, mode="bad"),
               lambda m: m.zeros(0).put([1], 1, mode="wrap"),
               lambda m: m.zeros(3, m.int8).put([1], 300),
               lambda m: m.put([1, 2], [0], 1),
               lambda m: m.broadcast_to(m.asarray(A), (2, 3, 4)).put([0], 1)):
        same_error(fn)
    x = np.asarray(A)
    x.put(np.asarray([1, 40]) * 1, 5)  # a computed index is checked when the scatter runs
    with pytest.raises(IndexError, match="index 40 is out of bounds for axis 0 with size 12"):
        numpy.asarray(x)


def test_put_on_a_numpy_array_writes_it():
    a = A.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.put(a, np.asarray([0]), -9) is None
    assert a[0, 0] == -9


# ------------------------------------------------------------------ put_along_axis

def _put_along_cases(m, x):
    v = x[:, ::-1]
    m.put_along_axis(x, m.asarray([[1], [3], [0]]), m.asarray([[-1], [-2], [-3]]), 1)
    m.put_along_axis(x, m.asarray([[1, 2, 0, 0]]), 99, 0)
    m.put_along_axis(x, m.asarray([1, 5, -1]), 7, None)
    return x, v


def test_put_along_axis_matches_numpy():
    want = _put_along_cases(numpy, A.copy())
    before = tracer.stats().evaluations
    got = _put_along_cases(np, np.asarray(A))
    assert tracer.stats().evaluations == before
    for g, w in zip(got, want):
        check(g, w)
    for fn in (lambda m: m.put_along_axis(m.asarray(A.copy()).T, m.asarray([1]), 7, None),
               lambda m: m.put_along_axis(m.asarray(A.copy()), m.asarray([[1.5]]), 7, 1),
               lambda m: m.put_along_axis(m.asarray(A.copy()), m.asarray([1]), 7, 1),
               lambda m: m.put_along_axis(m.asarray(A.copy()), m.asarray([[1]]), 7, None),
               lambda m: m.put_along_axis(m.asarray(A.copy()), m.asarray([[1], [2]]), 7, 1),
               lambda m: m.put_along_axis(m.asarray(A.copy()), m.asarray([[1]]), [1, 2], 1)):
        same_error(fn)


# ------------------------------------------------------------------ choose

CHOICES = {
    "arrays": lambda m, i, a: m.choose(i, [a, a * 10, -a]),
    "scalars": lambda m, i, a: m.choose(i, [a, 2.5, numpy.int8(3)]),
    "weak_int8": lambda m, i, a: m.choose(i, [a.astype(m.int8), 200, 2000]),
    "wrap": lambda m, i, a: m.choose(i + 1, [a, -a, 5], mode="wrap"),
    "clip": lambda m, i, a: m.choose(i * 3 - 2, [a, -a, 5], mode="clip"),
    "broadcast": lambda m, i, a: m.choose(i[:1], [a[:, :1], a[0], [1, 2, 3, 4]]),
    "one": lambda m, i, a: m.choose(i * 0, [a[0]]),
    "bool_index": lambda m, i, a: m.choose(i > 0, [a, 0]),
}


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_choose_matches_numpy(name):
    fn = CHOICES[name]
    want = fn(numpy, I, A)
    before = tracer.stats().evaluations
    lazy, host = fn(np, np.asarray(I), np.asarray(A)), fn(np, I, np.asarray(A))
    assert tracer.stats().evaluations == before
    check(lazy, want)
    check(host, want)


@pytest.mark.lazy
def test_choose_out_and_errors():
    for m in (numpy, np):
        out = m.zeros((3, 4), m.float32)
        assert m.choose(m.asarray(I), [m.asarray(A), -1, 5], out=out) is out
    check(out, numpy.choose(I, [A, -1, 5]).astype(numpy.float32))
    for fn in (lambda m: m.choose(I + 1, [m.asarray(A), 1, 2]),
               lambda m: m.choose(I - 1, [m.asarray(A), 1, 2]),
               lambda m: m.choose(I[0], [m.asarray(A), m.asarray(A)[:, :2]]),
               lambda m: m.choose(I.astype(float), [m.asarray(A)]),
               lambda m: m.choose(I, [m.asarray(A)], mode="bad"),
               lambda m: m.choose(I, []),
               lambda m: m.choose(I, [m.asarray(A), 1, 2], out=m.zeros(3))):
        same_error(fn)
    # computed indices out of range raise IndexError (NumPy: ValueError) when evaluated
    for idx, shown in ((I + 1, 3), (I - 1, -4)):
        res = np.choose(np.asarray(idx) * 1, [np.asarray(A), 1, 2])
        with pytest.raises(IndexError, match=f"index {shown} is out of bounds"):
            numpy.asarray(res)


# ------------------------------------------------------------------ piecewise

X = numpy.linspace(-2, 2, 9)

PIECEWISE = {
    "constants": lambda m, x: m.piecewise(x, [x < 0, x >= 0], [-1, 1]),
    "otherwise": lambda m, x: m.piecewise(x, [x < 0, x >= 1],
                                          [lambda v: -v, lambda v: v * 10, 0.5]),
    "one_condition": lambda m, x: m.piecewise(x, x < 0, [lambda v: v ** 2, 7]),
    "int_x": lambda m, x: m.piecewise((x * 3).astype(m.int64), [x > 0],
                                      [lambda v: v * 2.7, 1.5]),
    "scalar_x": lambda m, x: m.piecewise(m.asarray(3.0), [True, False], [lambda v: v + 1, 0]),
    "scalar_cond": lambda m, x: m.piecewise(m.asarray(3.0), True, [lambda v: v + 1]),
    "row_mask": lambda m, x: m.piecewise(x.reshape(3, 3), [m.asarray([True, False, True])],
                                         [lambda v: -v, 9]),
    "overlap": lambda m, x: m.piecewise(x, [x < 0, x < 1], [lambda v: v, 1]),
    "args": lambda m, x: m.piecewise(x, [x < 0], [lambda v, k: v * k, 2], 5),
}


@pytest.mark.parametrize("name", sorted(PIECEWISE))
def test_piecewise_matches_numpy(name):
    check(PIECEWISE[name](np, np.asarray(X)), PIECEWISE[name](numpy, X))


def test_piecewise_constants_are_lazy_and_errors_match():
    x = np.asarray(X)
    before = tracer.stats().evaluations
    y = np.piecewise(x, [x < 0, x > 1], [-1.5, 2, 0])
    assert tracer.stats().evaluations == before
    check(y, numpy.piecewise(X, [X < 0, X > 1], [-1.5, 2, 0]))
    for fn in (lambda m: m.piecewise(m.asarray(X), [m.asarray(X) < 0], [1, 2, 3]),
               lambda m: m.piecewise(m.asarray(X).reshape(3, 3), [m.asarray([True, False])],
                                     [3]),
               lambda m: m.piecewise(m.asarray(X), [m.asarray(X) < 0, m.asarray(X)[:2] < 0],
                                     [1, 2])):
        same_error(fn)
