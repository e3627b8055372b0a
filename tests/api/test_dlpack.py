"""DLPack both ways on the host, against NumPy's own: `numpy.from_dlpack(t)` (and torch's,
where torch is installed) views tracer's realized buffer with no copy, read-only as NumPy
hands out a read-only array, with NumPy's errors for what it refuses; `np.from_dlpack(x)`
views the producer's memory, so writes on either side are seen by the other."""
from __future__ import annotations

import warnings

import numpy
import pytest

import tracer
import tracer.numpy as np

DTYPES = ["bool", "int8", "uint16", "int32", "int64", "float16", "float32", "float64",
          "complex64", "complex128"]


def _values(dtype, shape=(3, 4)):
    v = numpy.arange(numpy.prod(shape)).reshape(shape) % 5
    return v.astype(dtype)


def _raises_like(fn_numpy, fn_tracer):
    """Both raise, the same exception type and message."""
    with pytest.raises(Exception) as want:
        fn_numpy()
    with pytest.raises(type(want.value)) as got:
        fn_tracer()
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_consumer_views_the_realized_buffer(dtype):
    h = _values(dtype)
    t = tracer.evaluate(np.asarray(h) + np.zeros((), dtype))
    got = numpy.from_dlpack(t)
    numpy.testing.assert_array_equal(got, h)
    assert got.dtype == h.dtype
    assert numpy.shares_memory(got, numpy.asarray(t))  # no copy
    assert not got.flags.writeable  # tracer's buffer is a shared snapshot
    assert t.__dlpack_device__() == h.__dlpack_device__() == (1, 0)


def test_views_and_0d_go_out_as_numpy_lays_them_out():
    h = numpy.arange(24.).reshape(4, 6)
    t = np.asarray(h)
    for tv, hv in [(t[::2, 1:5], h[::2, 1:5]), (t.T, h.T), (t[1], h[1]), (t[2, 3], h[2, 3]),
                   (t.sum(), h.sum())]:
        if not isinstance(tv, np.ndarray):
            continue  # NumPy's scalar, which adaptive laziness gives as NumPy does
        got = numpy.from_dlpack(tv)
        numpy.testing.assert_array_equal(got, hv)
        assert got.shape == numpy.shape(hv)


def test_a_pending_value_is_evaluated_when_exported():
    h = numpy.linspace(0, 1, 50)
    numpy.testing.assert_allclose(numpy.from_dlpack(np.sin(np.asarray(h)) * 2),
                                  numpy.sin(h) * 2)


def test_copy_true_is_a_writable_copy():
    t = tracer.evaluate(np.arange(5.) * 2)
    c = numpy.from_dlpack(t, copy=True)
    assert c.flags.writeable and not numpy.shares_memory(c, numpy.asarray(t))
    c[0] = 99
    numpy.testing.assert_array_equal(numpy.asarray(t), numpy.arange(5.) * 2)


def test_export_errors_are_numpys_for_a_read_only_array():
    t = tracer.evaluate(np.arange(4.) + 1)
    r = numpy.arange(4.) + 1
    r.flags.writeable = False
    for call in [lambda x: x.__dlpack__(),  # the old protocol cannot say read-only
                 lambda x: x.__dlpack__(stream=1),
                 lambda x: x.__dlpack__(max_version=(1, 0), dl_device=(2, 0)),
                 lambda x: x.__dlpack__(max_version=(1, 0), copy="yes"),
                 lambda x: x.__dlpack__(max_version=1)]:
        _raises_like(lambda: call(r), lambda: call(t))
    with pytest.raises(TypeError):  # (Python's own words for a method's arguments)
        t.__dlpack__(1)
    assert type(t.__dlpack__(max_version=(1, 0))).__name__ == "PyCapsule"


def test_from_dlpack_views_the_producers_memory_both_ways():
    h = numpy.arange(12.).reshape(3, 4)
    t = np.from_dlpack(h)
    assert isinstance(t, np.ndarray) and t.flags.writeable
    h[0, 0] = 100  # the producer writes: the view sees it
    numpy.testing.assert_array_equal(numpy.asarray(t + 1), h + 1)
    t[1] = -1  # writes through it reach the producer, as NumPy's view's do
    t[2, 1:3] += 5
    t.T[3, 0] = 7
    ref = numpy.from_dlpack(numpy.arange(12.).reshape(3, 4))
    ref[0, 0] = 100
    ref[1] = -1
    ref[2, 1:3] += 5
    ref.T[3, 0] = 7
    numpy.testing.assert_array_equal(h, ref)
    numpy.testing.assert_array_equal(numpy.asarray(t), ref)


def test_values_recorded_before_a_write_through_it_keep_their_inputs():
    h = numpy.arange(6.)
    t = np.from_dlpack(h)
    u = t * 2  # (recorded: NumPy computed it here)
    s = t[2:].sum()
    t[:] = 0  # pending values that read the memory are computed before it is written
    numpy.testing.assert_array_equal(numpy.asarray(u), numpy.arange(6.) * 2)
    assert float(s) == 14.0
    assert not h.any()


PROGRAMS = {"elementwise": lambda xp, x: x * 2 + 1, "view chain": lambda xp, x: x[1:, ::2].T * 3,
            "reduction": lambda xp, x: x.sum(axis=0), "composite": lambda xp, x: xp.var(x),
            "matmul": lambda xp, x: x @ x.T, "gather": lambda xp, x: x[[2, 0], 1],
            "copy": lambda xp, x: x.copy(), "where": lambda xp, x: xp.where(x > 3, x, -x)}


@pytest.mark.parametrize("name", PROGRAMS)
def test_values_recorded_from_it_are_numpys_after_the_producer_writes(name):
    """NumPy computes a value when it is called: a later write by the producer does not
    change it. A value recorded from the producer's memory is computed then, too."""
    h = numpy.arange(12.).reshape(3, 4)
    t = np.from_dlpack(h)
    u = PROGRAMS[name](np, t)
    v = u + 1  # what follows stays lazy
    ref_h = numpy.arange(12.).reshape(3, 4)
    ref = PROGRAMS[name](numpy, numpy.from_dlpack(ref_h))
    h[:] = -7
    ref_h[:] = -7
    numpy.testing.assert_allclose(numpy.asarray(u), ref)
    numpy.testing.assert_allclose(numpy.asarray(v), ref + 1)
    numpy.testing.assert_array_equal(numpy.asarray(t), h)


def test_a_write_of_its_values_into_another_array_is_numpys():
    h = numpy.arange(4.)
    t = np.from_dlpack(h)
    w = np.zeros(6)
    w[1:5] = t
    h[:] = 0
    numpy.testing.assert_array_equal(numpy.asarray(w), [0, 0, 1, 2, 3, 0])


def test_a_failed_write_leaves_the_memory_and_the_view():
    h = numpy.arange(4)
    t = np.from_dlpack(h)
    _raises_like(lambda: numpy.arange(4).__setitem__(slice(None), [1, 2]),
                 lambda: t.__setitem__(slice(None), [1, 2]))
    h[0] = 9
    numpy.testing.assert_array_equal(numpy.asarray(t), [9, 1, 2, 3])


def test_from_dlpack_of_a_read_only_producer_is_read_only():
    r = numpy.arange(3.)
    r.flags.writeable = False
    t = np.from_dlpack(r)
    assert not t.flags.writeable and not numpy.from_dlpack(r).flags.writeable
    _raises_like(lambda: numpy.from_dlpack(r).__setitem__(0, 1), lambda: t.__setitem__(0, 1))


def test_from_dlpack_copy_and_arguments_as_numpys():
    h = numpy.arange(5)
    c = np.from_dlpack(h, copy=True)
    h[0] = 42
    assert int(c[0]) == 0 and c.dtype == h.dtype
    _raises_like(lambda: numpy.from_dlpack(h, device="cuda"),
                 lambda: np.from_dlpack(h, device="cuda"))
    _raises_like(lambda: numpy.from_dlpack([1, 2]), lambda: np.from_dlpack([1, 2]))
    assert np.from_dlpack(h, device="cpu").shape == (5,)


def test_from_dlpack_of_a_tracer_array_is_a_view_of_it():
    t = tracer.evaluate(np.arange(4.) * 3)
    v = np.from_dlpack(t)
    v[0] = -1
    assert float(t[0]) == -1.0
    c = np.from_dlpack(t, copy=True)
    c[1] = -2
    assert float(t[1]) == 3.0


def test_round_trip_through_numpy_keeps_values_and_dtypes():
    for dtype in DTYPES:
        h = _values(dtype, (5,))
        t = np.from_dlpack(numpy.from_dlpack(np.asarray(h)))
        numpy.testing.assert_array_equal(numpy.asarray(t), h)
        assert t.dtype == h.dtype


def test_torch_both_ways():
    torch = pytest.importorskip("torch")
    t = tracer.evaluate(np.arange(6.).reshape(2, 3) * 2)
    x = torch.from_dlpack(t)
    assert x.data_ptr() == numpy.asarray(t).ctypes.data  # no copy
    numpy.testing.assert_array_equal(x.numpy(), numpy.arange(6.).reshape(2, 3) * 2)
    y = torch.arange(5, dtype=torch.float32)
    a = np.from_dlpack(y)
    y[0] = 10
    a[1] = -3
    assert a.dtype == numpy.float32
    numpy.testing.assert_array_equal(numpy.asarray(a), y.numpy())
    assert y[1].item() == -3


COPIES = {"copy": lambda xp, x: x.copy(), "flatten": lambda xp, x: x.flatten(),
          "astype": lambda xp, x: x.astype(x.dtype), "array": lambda xp, x: xp.array(x),
          "concatenate": lambda xp, x: xp.concatenate([x]),
          "slice copy": lambda xp, x: x[1:].copy(), "plus 0": lambda xp, x: x + 0}


@pytest.mark.parametrize("name", COPIES)
def test_copies_of_it_are_not_changed_by_the_producer(name):
    """A copy the optimizer makes the leaf itself, or a result that views it, is the value
    when it was computed (a copy of the memory), never the memory."""
    h = numpy.arange(6.).reshape(2, 3)
    t = np.from_dlpack(h)
    u = tracer.evaluate(COPIES[name](np, t))
    ref = COPIES[name](numpy, numpy.arange(6.).reshape(2, 3))
    h[:] = -1
    numpy.testing.assert_array_equal(numpy.asarray(u), ref)


def test_from_dlpack_is_tracers_own_not_a_fallback():
    before = tracer.stats().fallbacks
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = np.from_dlpack(numpy.arange(3.))
    assert isinstance(t, np.ndarray) and tracer.stats().fallbacks == before


def test_a_slice_write_into_a_big_producer_writes_only_its_part():
    h = numpy.zeros(1 << 16)
    t = np.from_dlpack(h)
    ref = numpy.zeros(1 << 16)
    for i in range(3):
        t[i] = i + 1
        t[10:20:3] += 2
        ref[i] = i + 1
        ref[10:20:3] += 2
    numpy.testing.assert_array_equal(h, ref)
    numpy.testing.assert_array_equal(numpy.asarray(t[:25]), ref[:25])


@pytest.mark.parametrize("layout", ["strided", "transposed", "fortran", "reversed"])
def test_a_producer_laid_out_otherwise(layout):
    base = numpy.arange(24.).reshape(4, 6)
    h = {"strided": base[::2, 1::2], "transposed": base.T,
         "fortran": numpy.asfortranarray(base), "reversed": base[:, ::-1]}[layout]
    ref = h.copy()
    t = np.from_dlpack(h)
    numpy.testing.assert_allclose(numpy.asarray(np.sin(t) * 2 + t.sum(axis=0)),
                                  numpy.sin(ref) * 2 + ref.sum(axis=0))
    t[0] = -1
    t.T[1] += 3
    ref[0] = -1
    ref.T[1] += 3
    numpy.testing.assert_array_equal(h, ref)
    view = numpy.from_dlpack(h)  # NumPy's own view of the producer
    numpy.testing.assert_array_equal(numpy.asarray(t.ravel(order="K")), view.ravel(order="K"))
    if layout != "reversed":  # (negative strides: tracer's flags say C order, as for eager
        assert (t.flags.c_contiguous, t.flags.f_contiguous) == \
            (view.flags.c_contiguous, view.flags.f_contiguous)  # NumPy results)
