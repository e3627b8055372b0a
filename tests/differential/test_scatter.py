"""Writes with integer arrays and masks (`a[idx] = v`, `a[idx] += v`, `ufunc.at`) as lazy
scatters, against NumPy: duplicate indices, views, dtypes, errors."""
from __future__ import annotations

import warnings

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import tracer
import tracer.numpy as np
from tracer.ir.config import context


def _pair(shape=(4, 5), dtype=numpy.float64):
    h = numpy.arange(numpy.prod(shape)).reshape(shape).astype(dtype)
    return h, np.asarray(h.copy())


def _same(t, h):
    got = numpy.asarray(t)
    assert got.dtype == h.dtype and got.shape == h.shape
    numpy.testing.assert_array_equal(got, h)


WRITES = {
    "rows": (([0, 2],), 7.0),
    "duplicate_rows_last_wins": (([1, 1, 1],), numpy.array([[1.0], [2.0], [3.0]])),
    "column_values": ((slice(None), [1, 3]), numpy.array([-1.0, -2.0])),
    "points": (([3, 0, 3], [4, 4, 4]), [10.0, 20.0, 30.0]),
    "negative": (([-1], [-2]), 5),
    "with_none": (([0, 1], None, [2, 3]), 9.0),
    "mask": ((numpy.array([True, False, True, True]),), -3.0),
    "mask_2d": ((numpy.arange(20).reshape(4, 5) % 3 == 0,), 0.5),
    "int_and_array": ((2, [0, 4]), [8.0, 9.0]),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_assignment_forms_match_numpy_without_fallback(name):
    key, value = WRITES[name]
    h, t = _pair()
    before = tracer.stats().fallbacks
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t[key] = value
    h[key] = value
    assert tracer.stats().fallbacks == before
    _same(t, h)


def test_augmented_assignment_with_duplicates_matches_numpy():
    h, t = _pair(dtype=numpy.int32)
    idx = [0, 0, 2, 3, 3, 3]
    h[idx] += 1
    t[idx] += 1  # gather, add, scatter: duplicates are written once, as in NumPy
    _same(t, h)
    h[:, [1, 1]] *= 3
    t[:, [1, 1]] *= 3
    _same(t, h)


def test_write_through_a_view_is_seen_by_other_views():
    h, t = _pair((3, 4, 5))
    hv, tv = h.transpose(2, 0, 1)[1:], t.transpose(2, 0, 1)[1:]
    other_h, other_t = h[0], t[0]
    hv[[0, 3], :, [2, 1]] = -5.0
    tv[[0, 3], :, [2, 1]] = -5.0
    _same(t, h)
    _same(other_t, other_h)


def test_lazy_mask_and_lazy_index_writes():
    h, t = _pair()
    h[h > 10] = 0
    t[t > 10] = 0
    _same(t, h)
    i = np.asarray(numpy.array([3, 1]))
    h[numpy.array([3, 1]) % 4, 2] = numpy.array([100.0, 200.0])
    t[i % 4, 2] = np.asarray(numpy.array([100.0, 200.0]))
    _same(t, h)


def test_value_dtype_is_cast_as_numpy_casts_it():
    h, t = _pair(dtype=numpy.int16)
    h[[0, 1]] = 3.9
    t[[0, 1]] = 3.9
    _same(t, h)
    hf, tf = _pair(dtype=numpy.float32)
    hf[[2]] = numpy.float64(1 / 3)
    tf[[2]] = numpy.float64(1 / 3)
    _same(tf, hf)


@pytest.mark.parametrize("uf", ["add", "subtract", "multiply", "maximum", "minimum"])
@pytest.mark.parametrize("dtype", [numpy.int64, numpy.float32, numpy.float64])
def test_ufunc_at_accumulates_duplicates(uf, dtype):
    h, t = _pair((6,), dtype)
    idx = numpy.array([0, 0, 5, 5, 5, 2])
    vals = numpy.array([3, -2, 1, 4, 2, 7]).astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(np, uf).at(t, idx, vals)
        getattr(np, uf).at(t, [1, 1], 2)  # a Python scalar is weak, as in NumPy
    getattr(numpy, uf).at(h, idx, vals)
    getattr(numpy, uf).at(h, [1, 1], 2)
    _same(t, h)


def test_float32_add_at_rounds_like_numpy():
    h, t = _pair((3,), numpy.float32)
    idx = numpy.zeros(1000, numpy.intp)
    numpy.add.at(h, idx, 0.1)
    np.add.at(t, idx, 0.1)
    _same(t, h)
    numpy.add.at(h, [1, 1], numpy.float64(1e-9))
    np.add.at(t, [1, 1], numpy.float64(1e-9))
    _same(t, h)


def test_errors_are_numpys():
    h, t = _pair()
    with pytest.raises(ValueError, match=r"shape mismatch: value array of shape \(3,\) could "
                                         r"not be broadcast to indexing result of shape \(2,5\)"):
        t[[0, 1]] = [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="array is not broadcastable to correct shape"):
        np.add.at(t, [0, 1], numpy.ones((2, 3)))
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 4"):
        t[[0, 9]] = 1.0
    ro = np.broadcast_to(np.asarray(numpy.ones(3)), (2, 3))
    with pytest.raises(ValueError, match="read-only"):
        ro[[0]] = 2.0
    _same(t, h)  # nothing was written by the failed calls


@pytest.mark.cuda
def test_scatter_under_the_cuda_simulator():
    with context(backend="cuda", cuda_sim=True):
        h, t = _pair((5,), numpy.float32)
        numpy.add.at(h, [0, 0, 4], 1.5)
        np.add.at(t, [0, 0, 4], 1.5)
        _same(t * 2, h * 2)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-8, 7), min_size=1, max_size=30), st.sampled_from(["int", "float"]))
def test_random_add_at_matches_numpy(idx, kind):
    dtype = numpy.int64 if kind == "int" else numpy.float64
    h, t = _pair((8,), dtype)
    vals = (numpy.arange(len(idx)) * 1.37 - 5).astype(dtype)
    numpy.add.at(h, idx, vals)
    np.add.at(t, idx, vals)
    _same(t, h)


@pytest.mark.parametrize("cols", [(), (3,)])
@pytest.mark.parametrize("dtype", [numpy.int64, numpy.float64, numpy.float32])
def test_many_updates_into_few_bins(dtype, cols, rng):
    """Past PRIVATE_MIN_UPDATES the cpu backend adds in private per-thread bins: integers stay
    exact, float64 sums may round differently from NumPy's sequential order; float32 keeps
    NumPy's order."""
    from tracer.cuda_kernels.cpu.scatter import PRIVATE_MIN_UPDATES
    k = PRIVATE_MIN_UPDATES + 123
    idx = rng.integers(-300, 300, k)
    vals = (rng.standard_normal((k,) + cols) * 100).astype(dtype)
    h, t = numpy.zeros((300,) + cols, dtype), np.zeros((300,) + cols, dtype)
    numpy.add.at(h, idx, vals)
    np.add.at(t, idx, vals)
    got = numpy.asarray(t)
    if dtype == numpy.float64:
        numpy.testing.assert_allclose(got, h, rtol=1e-12, atol=1e-9)
    else:
        _same(t, h)
    with pytest.raises(IndexError, match="index 300 is out of bounds for axis 0 with size 300"):
        np.add.at(t, np.asarray(numpy.array([1, 300])), 1.0 if dtype != numpy.int64 else 1)
        numpy.asarray(t)


@pytest.mark.lazy
def test_one_index_scatters_and_gathers_become_slice_writes_and_slices():
    from tracer.ir import toposort
    h = numpy.arange(20.0).reshape(4, 5)
    a = np.asarray(h) * 2
    a[[3], 2] = 7
    np.add.at(a, ([1], [-1]), 2.5)
    np.maximum.at(a, (0, [0]), numpy.float32(100.0))
    r = a[[2], 1:]
    plan = tracer.explain(a, r)
    ops = [n.op for n in toposort(plan.graph_after.roots)]
    assert "scatter" not in ops and "gather" not in ops and ops.count("setslice") == 3
    assert plan.bytes_copied == 0  # a is computed here: every write is in place
    with context(disable_passes={"scatter_expander"}):
        ops = [n.op for n in toposort(tracer.explain(a).graph_after.roots)]
        assert ops.count("scatter") == 3
    want = h * 2
    want[[3], 2] = 7
    numpy.add.at(want, ([1], [-1]), 2.5)
    numpy.maximum.at(want, (0, [0]), numpy.float32(100.0))
    got_a, got_r = tracer.evaluate(a, r)
    _same(got_a, want)
    _same(got_r, want[[2], 1:])


def test_scatter_expander_hand_built_graph():
    from tracer.ir.verifier import verify
    from tracer.opt.scatter_expander import scatter_expander
    from tracer import graph as G
    x = G.leaf(numpy.zeros((3, 4), numpy.float32))
    i = G.broadcast(G.const(-1, numpy.int64), (1,))
    v = G.leaf(numpy.ones((1, 4), numpy.float64))
    s = G._typed("scatter", (x, i, v), (("axes", (0,)), ("front", False), ("mode", "set")))
    (out,) = scatter_expander([s])
    verify([out])
    assert out.op == "setslice" and out.attr("slices") == ((2, 3, 1), (0, 4, 1))
    assert out.inputs[1].op == "cast"  # float64 values written into float32, as NumPy does
    many = G._typed("scatter", (x, G.leaf(numpy.array([0, 1])), G.leaf(numpy.ones((2, 4)))),
                    (("axes", (0,)), ("front", False), ("mode", "add")))
    assert scatter_expander([many])[0] is many
