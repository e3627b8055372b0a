"""Integer-array and mask indexing (reads) as a lazy gather, against NumPy: the forms of NumPy's
indexing guide, through views, with lazy indices, errors at the user's line."""
from __future__ import annotations

import os
import traceback
import warnings

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import tracer
import tracer.numpy as np
from tracer.ir import toposort
from tracer.ir.config import context

A = numpy.arange(2 * 3 * 4 * 5, dtype=numpy.float32).reshape(2, 3, 4, 5)

KEYS = {
    "one_array": ([1, 0, 1],),
    "negative": ([-1, 0, -2],),
    "second_axis": (slice(None), [2, 0]),
    "two_arrays_broadcast": ([[0], [1]], [0, 2, 1]),
    "arrays_with_slice_between": (slice(None), [0, 1], slice(1, 3), [1, 2]),
    "ellipsis_between": (slice(None), [0, 1], Ellipsis, [1, 2]),
    "none_between": (slice(None), [0, 1], None, [1, 2]),
    "int_and_array": (1, [0, 2]),
    "int_after_slice": (slice(None), 2, [3, 1]),
    "ellipsis_first": (Ellipsis, [-1, 0]),
    "reversed_slices": (slice(None, None, -1), [2, 0], slice(None, None, 2)),
    "empty_list": ([],),
    "index_2d_with_none": (numpy.array([[1, 0]]), None, slice(None), [[1], [3]]),
    "all_axes": ([1, 0], [2, 1], [3, 3], [4, 0]),
    "mask_first_axes": (A[..., 0, 0] > 5,),
    "mask_inner": (slice(None), A[0, :, :, 0] % 3 == 0),
    "mask_and_array": (A[:, 0, 0, 0] > -1, slice(None), [1, 2]),
    "uint_index": (numpy.array([1, 0], numpy.uint8),),
}


def _same(got, want):
    got = numpy.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.shape, want.shape)
    numpy.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(KEYS))
def test_forms_match_numpy_without_fallback(name):
    key = KEYS[name]
    before = tracer.stats().fallbacks
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = np.asarray(A)[key]
    assert tracer.stats().fallbacks == before
    assert isinstance(got, tracer.ndarray) and got.shape == A[key].shape  # known while tracing
    _same(got, A[key])


def test_reads_through_views_and_later_writes():
    h = A.copy()
    t = np.asarray(h)
    v = t.transpose(3, 1, 0, 2)[1:, ::-1]
    got = v[[0, 2], :, [1, 0]]
    t[0] = -1  # a write after the read: the gather saw the old value
    h2 = h.transpose(3, 1, 0, 2)[1:, ::-1]
    _same(got, h2[[0, 2], :, [1, 0]])
    h[0] = -1
    _same(t.transpose(3, 1, 0, 2)[1:, ::-1][[0, 2], :, [1, 0]], h2[[0, 2], :, [1, 0]])


def test_lazy_index_arrays_and_masks():
    x = np.asarray(A)
    i = np.asarray(numpy.array([3, 0, 2]))
    _same(x[:, :, (i + 1) % 4], A[:, :, (numpy.array([3, 0, 2]) + 1) % 4])
    _same(x[x > 50], A[A > 50])
    _same(x[0][x[0, :, :, 0] < 30], A[0][A[0, :, :, 0] < 30])
    _same(x[:, x.argmax(axis=1)[0, 0]], A[:, A.argmax(axis=1)[0, 0]])


@pytest.mark.lazy
def test_gather_fuses_into_its_consumer():
    x = np.asarray(A)
    y = (x * 2 + 1)[[1, 0]].sum(axis=-1) - 3
    plan = tracer.explain(y)
    ops = [n.op for n in toposort(plan.graph_after.roots)]
    inside = [m.op for n in toposort(plan.graph_after.roots) if n.op == "fusion"
              for m in toposort([n.attr("body")])]
    # one kernel: the cheap source (x * 2 + 1) is recomputed at the gathered positions
    assert "gather" not in ops and inside.count("gather") == 1 and len(plan.kernels) == 1
    _same(y, (A * 2 + 1)[[1, 0]].sum(axis=-1) - 3)


def test_constant_out_of_bounds_raises_at_the_users_line():
    x = np.asarray(A)
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 1 with size 3") as e:
        x[:, [0, 9]]
    ours = tuple(os.sep + p + os.sep for p in ("tracer", "ir", "opt", "cuda_kernels"))
    user = [f for f in traceback.extract_tb(e.tb) if not any(p in f.filename for p in ours)]
    assert user[-1].filename == __file__ and "x[:, [0, 9]]" in user[-1].line
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[numpy.array([True, False, True])]
    with pytest.raises(IndexError, match="arrays used as indices must be of integer"):
        x[numpy.array([0.5])]
    with pytest.raises(IndexError, match="only integers, slices"):  # a list: NumPy's other words
        x[[0.5]]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0, [0]]
    with pytest.raises(IndexError, match="shape mismatch"):
        x[[0, 1], [0, 1, 2]]


@pytest.mark.lazy
def test_computed_out_of_bounds_raises_when_evaluated():
    x = np.asarray(A)
    y = x[np.asarray(numpy.array([0, 1])) * 5]
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 2"):
        numpy.asarray(y)


@pytest.mark.cuda
def test_gather_under_the_cuda_simulator():
    with context(backend="cuda", cuda_sim=True):
        x = np.asarray(A[0])
        _same((x * 2)[[2, 0], 1:], (A[0] * 2)[[2, 0], 1:])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_keys_match_numpy(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    h = numpy.arange(numpy.prod(shape), dtype=numpy.int32).reshape(shape)
    key = []
    for d in shape:
        kind = data.draw(st.sampled_from(["slice", "int", "array", "none_then_slice"]))
        if kind == "slice":
            step = data.draw(st.sampled_from([1, -1, 2]))
            key.append(slice(data.draw(st.integers(-d, d)), None, step))
        elif kind == "int":
            key.append(data.draw(st.integers(-d, d - 1)))
        elif kind == "array":
            n = data.draw(st.integers(0, 3))
            vals = data.draw(st.lists(st.integers(-d, d - 1), min_size=n, max_size=n))
            key.append(numpy.array(vals, numpy.intp))
        else:
            key += [None, slice(None)]
    if not any(isinstance(k, numpy.ndarray) for k in key):
        first = next(j for j, k in enumerate(key) if k is not None)
        key[first] = numpy.array([0])
    key = tuple(key)
    try:
        want = h[key]
    except IndexError as e:  # index arrays that do not broadcast: the same error
        with pytest.raises(IndexError, match=str(e)[:20]):
            np.asarray(h)[key]
        return
    _same(np.asarray(h)[key], want)


def test_nonzero_where_argwhere_evaluate_then_stay_lazy():
    h = numpy.array([[0, 3, 0], [4, 0, 5]])
    x = np.asarray(h)
    before = tracer.stats().fallbacks
    for got, want in [(np.nonzero(x), numpy.nonzero(h)), (x.nonzero(), h.nonzero()),
                      (np.where(x > 3), numpy.where(h > 3))]:
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    _same(np.argwhere(x), numpy.argwhere(h))
    _same(x[np.nonzero(x)] * 2, h[numpy.nonzero(h)] * 2)
    assert tracer.stats().fallbacks == before
    with pytest.raises(ValueError, match="Calling nonzero on 0d arrays"):
        np.nonzero(np.asarray(numpy.float64(1.0)))
