"""Issue 17 item 8: the cuda backend's elementwise kernels of rank >= 2, under Numba's CUDA
simulator, against NumPy. Shapes are tiny (the simulator costs ~0.3 ms per thread)."""
from __future__ import annotations

import numpy
import pytest

import tracer.numpy as np

# the backend's kernels are the subject (on the simulator)
pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim")]



def _rand(shape, seed=0):
    return numpy.random.default_rng(seed).standard_normal(shape)


def _check(got, want):
    got = numpy.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
    numpy.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 4)])
def test_flat_elementwise_kernel_of_rank_2_and_3_writes_every_element(shape):
    ha, hb = _rand(shape), _rand(shape, 1)
    a, b = np.asarray(ha), np.asarray(hb)
    _check(a * b - np.sqrt(np.abs(a)), ha * hb - numpy.sqrt(numpy.abs(ha)))


def test_elementwise_with_broadcast_row_and_column():
    ha, hr, hc = _rand((3, 5)), _rand((5,), 1), _rand((3, 1), 2)
    a, r, c = np.asarray(ha), np.asarray(hr), np.asarray(hc)
    _check(a * r - c, ha * hr - hc)


def test_elementwise_of_transposed_input():
    ha, hb = _rand((5, 3)), _rand((3, 5), 1)
    a, b = np.asarray(ha), np.asarray(hb)
    _check(a.T * b + 1.0, ha.T * hb + 1.0)


def test_elementwise_of_sliced_inputs():
    ha, hb = _rand((4, 9)), _rand((3, 5), 1)
    a, b = np.asarray(ha), np.asarray(hb)
    _check(a[1:, ::-2][:, :5] * 2 - b[::-1], ha[1:, ::-2][:, :5] * 2 - hb[::-1])


@pytest.mark.parametrize("axis", [0, 1])
def test_reduction_over_each_axis_of_a_2d_input(axis):
    ha = _rand((3, 5))
    a = np.asarray(ha)
    _check((a * a).sum(axis=axis), (ha * ha).sum(axis=axis))
    _check(np.max(a - 1.0, axis=axis), numpy.max(ha - 1.0, axis=axis))


# ------------------------------------------------ found on an H100 (bench/RESULTS.md, 2026-11-24)

def test_a_device_array_whose_flags_are_a_dict_is_read_as_contiguous():
    # numba-cuda's DeviceNDArray.flags is a plain dict (the simulator's are NumPy's): the plan
    # cache's layout check raised AttributeError on every evaluation of a device-held input
    from tracer.cuda_kernels.executor import buffer_contiguous
    from tracer.ir import Buffer

    class Device:
        flags = {"C_CONTIGUOUS": True, "F_CONTIGUOUS": False}

        def __init__(self, c):
            self.c = c

        def is_c_contiguous(self):
            return self.c

    assert buffer_contiguous(Buffer(Device(True)))
    assert not buffer_contiguous(Buffer(Device(False)))


@pytest.mark.parametrize("host", [numpy.zeros((2, 1), complex)[..., ::-1],
                                  numpy.zeros((2, 0), numpy.float16)[::-1],
                                  numpy.arange(6.).reshape(2, 3)[:, 1:2][::-1]])
def test_uploads_have_no_negative_strides(host):
    # NumPy calls these C-contiguous; numba-cuda cannot copy a negative stride back to the
    # host and slices one to size 0 ("incompatible shape (2, 0) vs. (2, 1)")
    from tracer.cuda_kernels import backends
    dev = backends.get("cuda").from_host(host)
    assert all(s >= 0 for s in dev.strides)
    numpy.testing.assert_array_equal(dev.copy_to_host(), host)


def test_float_mod_on_cuda_is_libdevice_fmod():
    # numba-cuda's float % is a - b * floor(a / b): fmod(4, -inf) was NaN and
    # remainder(1e308, 6) 5e291 on the device (the simulator runs Python's %, so check the source)
    import tracer
    a = np.asarray(numpy.array([4, -3, 6], "int64"))
    for expr in (lambda m, x: m.fmod(x, -numpy.inf), lambda m, x: m.remainder(1e308, x)):
        plan = tracer.explain(expr(np, a))
        assert "math.fmod(abs(a), abs(b))" in "\n".join(k.source for k in plan.kernels)
        _check(expr(np, a), expr(numpy, numpy.array([4, -3, 6], "int64")))


# ------------------------------------------------ the registry sweep on the simulator (issue 20)

def test_cbrt_of_a_subnormal_is_accurate():
    # the Newton step cubed a subnormal's root back into a subnormal with a few bits left:
    # cbrt(5e-324) was 14 ulp off
    h = numpy.array([5e-324, -5e-324, 1e-310, -2.2250738585072014e-308, 8.0, -1e300])
    want = numpy.cbrt(h)
    got = numpy.asarray(np.cbrt(np.asarray(h)))
    numpy.testing.assert_allclose(got, want, rtol=4.5e-16, atol=0)
    assert (numpy.signbit(got) == numpy.signbit(want)).all()


@pytest.mark.parametrize("expr", [lambda m, x: m.prod(x), lambda m, x: m.prod(x, axis=0),
                                  lambda m, x: m.prod(x.T, axis=1),
                                  lambda m, x: x / m.prod(x, axis=1, keepdims=True)],
                         ids=["full", "axis0", "transposed", "row_fusion"])
def test_float_products_multiply_in_numpys_order(expr):
    # the block's tree multiplied 1e30 * 0 first: 0 where NumPy's 1e30 * 1e30 = inf, then
    # inf * 0 = nan; float32 products also round at every step in NumPy's order
    h = numpy.array([[1e30, 1e30, 1e-30, 3.0, 0.0, 2.0], [1e-30, 1e-30, 1e30, 1e30, 5.0, 0.5],
                     [1e20, 1e20, 1e-20, 1e-20, 7.0, 1.1]], numpy.float32)
    for x in (h, h.T.copy(), h.astype(numpy.float64) ** 10):
        with numpy.errstate(all="ignore"):
            want = expr(numpy, x)
            got = numpy.asarray(expr(np, np.asarray(x)))
        assert got.dtype == want.dtype and got.shape == want.shape
        numpy.testing.assert_array_equal(got, want)
