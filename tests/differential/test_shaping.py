"""tracer/shaping.py: building, splitting, triangle/diagonal and contraction helpers against NumPy
(values, dtypes, shapes, errors), and that building them evaluates nothing."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np

H = numpy.arange(24, dtype=numpy.float32).reshape(4, 6) - 7.5
I = (numpy.arange(12, dtype=numpy.int64).reshape(3, 4) * 7) % 5
B = I > 2


def check(got, want):
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w)
        return
    g = numpy.asarray(got)
    assert g.dtype == want.dtype and g.shape == want.shape
    numpy.testing.assert_array_equal(g, want)


def both(fn, *arrays):
    """fn on NumPy arrays and on lazy copies of them."""
    check(fn(np, *[np.asarray(a) for a in arrays]), fn(numpy, *arrays))


CASES = {
    "atleast_3d": lambda m, a, b: (m.atleast_3d(a[0, 0]), m.atleast_3d(a[0]), m.atleast_3d(a)),
    "dstack": lambda m, a, b: m.dstack([a, a * 2]),
    "column_stack": lambda m, a, b: m.column_stack([a[:, 0], a[:, 1], a[:, :2]]),
    "tile": lambda m, a, b: (m.tile(a, 2), m.tile(a, (2, 1, 3)), m.tile(a[0], (3, 1))),
    "repeat": lambda m, a, b: (m.repeat(a, 2), m.repeat(a, 3, axis=1), m.repeat(a, 0, axis=0),
                               m.repeat(a, [1, 0, 2][:a.shape[0]] + [1] * (a.shape[0] - 3), 0)),
    "roll": lambda m, a, b: (m.roll(a, 5), m.roll(a, -1, 1), m.roll(a, (2, 9), (0, 1)),
                             m.roll(a, (1, 1), (0, 0)), m.roll(a, 0)),
    "meshgrid": lambda m, a, b: (m.meshgrid(a[0], a[:, 0]),
                                 m.meshgrid(a[0], a[:, 0], indexing="ij"),
                                 m.meshgrid(a[0], a[:, 1], sparse=True)),
    "split": lambda m, a, b: (m.split(a, 2, axis=1), m.array_split(a, 3, axis=1),
                              m.split(a, [1, 3], 1), m.array_split(a, [2, 10])),
    "tril_triu": lambda m, a, b: (m.tril(a), m.tril(a, 2), m.triu(a, -1), m.triu(a, 3),
                                  m.tril(b), m.triu(b), m.tril(a[0], 1), m.triu(a[:, 0])),
    "diagonal": lambda m, a, b: (m.diagonal(a), m.diagonal(a, 2), m.diagonal(a, -1),
                                 m.diagonal(a, 10), m.diag(a, 1), m.diag(a[0]), m.diag(a[1], -2),
                                 m.diag(b)),
    "trace": lambda m, a, b: (m.trace(a), m.trace(a, 1), m.trace(b), m.trace(a, dtype=m.float64)),
    "outer": lambda m, a, b: (m.outer(a[0], a[1]), m.outer(a, b[0]), m.outer(b[0], b[1])),
    "tensordot": lambda m, a, b: (m.tensordot(a, a.T, 1), m.tensordot(a, a, 2),
                                  m.tensordot(a, a, ([1], [1])), m.tensordot(a, a, 0)),
    "inner": lambda m, a, b: (m.inner(a, a), m.inner(a[0], a[1]), m.inner(a, a[0, 0])),
    "kron": lambda m, a, b: (m.kron(a, a[:2, :2]), m.kron(a[0], a[:2]), m.kron(a, 3)),
    "pad": lambda m, a, b: tuple(m.pad(a, pw, mode) for mode in ("constant", "edge", "wrap",
                                                                  "reflect", "symmetric")
                                 for pw in (1, ((0, 2), (2, 1)))) +
    (m.pad(a, ((1, 2), (3, 0)), constant_values=((7, 8), (9, 10))),
     m.pad(b, 1, constant_values=True)),
    "take_along_axis": lambda m, a, b: (
        m.take_along_axis(a, (m.arange(a.size).reshape(a.shape) * 7) % a.shape[1], 1),
        m.take_along_axis(a, m.arange(2 * a.shape[1]).reshape(2, -1) % 3, 0),
                                        m.take_along_axis(a, m.asarray([5, 0]), None)),
    "take": lambda m, a, b: (m.take(a, [3, 0, 0]), m.take(a, [[1, 2], [0, 0]], axis=1),
                             m.take(a, 2, axis=0)),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("data", ["float32", "int64"])
def test_matches_numpy(name, data):
    a = H if data == "float32" else I
    b = B if data == "float32" else I[:, ::-1] > 1
    both(CASES[name], a, b)


def test_creation_helpers_match_numpy():
    for args in [(3,), (3, 5, 1), (4, 2, -1)]:
        check(np.tri(*args), numpy.tri(*args))
    check(np.tri(3, 4, dtype=int), numpy.tri(3, 4, dtype=int))
    check(np.indices((2, 3, 4)), numpy.indices((2, 3, 4)))
    check(np.indices((2, 3), dtype=numpy.int8, sparse=True),
          numpy.indices((2, 3), numpy.int8, True))


def test_pad_beyond_one_reflection_and_other_modes_run_numpy():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback warns once per call site
        check(np.pad(np.asarray(H), 7, "reflect"), numpy.pad(H, 7, "reflect"))
        check(np.pad(np.asarray(H), 2, "linear_ramp"), numpy.pad(H, 2, "linear_ramp"))
    with pytest.raises(ValueError):
        np.pad(np.asarray(H), -1)


def test_take_with_lazy_indices():
    idx = numpy.array([5, 0, 11])
    check(np.take(np.asarray(H), np.asarray(idx)), numpy.take(H, idx))


@pytest.mark.parametrize("fn, exc", [
    (lambda m: m.split(m.asarray(H), 4, axis=1), ValueError),
    (lambda m: m.diag(m.asarray(numpy.ones((2, 2, 2)))), ValueError),
    (lambda m: m.tensordot(m.asarray(H), m.asarray(H), 1), ValueError),
    (lambda m: m.inner(m.asarray(H), m.asarray(H.T)), ValueError),
    (lambda m: m.array_split(m.asarray(H), 0), ValueError),
    (lambda m: m.repeat(m.asarray(H), [1, 2], axis=0), ValueError),
    (lambda m: m.diagonal(m.asarray(H[0])), ValueError),
])
def test_errors_match_numpy(fn, exc):
    with pytest.raises(exc) as want:
        fn(numpy)
    with pytest.raises(exc) as got:
        fn(np)
    if "shape-mismatch" in str(want.value) or "equal division" in str(want.value):
        assert str(got.value) == str(want.value)


def test_building_evaluates_nothing():
    x = np.asarray(H)
    before = tracer.stats().evaluations
    outs = [np.tile(x, 2), np.roll(x, 3), np.tril(x), np.diag(x), np.kron(x, x[:2]),
            np.tensordot(x, x.T, 1), np.repeat(x, 2, 0), np.split(x, 2)[1],
            np.meshgrid(x[0], x[1])[0], np.pad(x, 2, "reflect")]
    assert tracer.stats().evaluations == before
    assert all(isinstance(o, np.ndarray) for o in outs)
