"""Issue 17 item 8: the cuda backend's elementwise kernels of rank >= 2, under Numba's CUDA
simulator, against NumPy. Shapes are tiny (the simulator costs ~0.3 ms per thread)."""
from __future__ import annotations

import numpy
import pytest

import tracer.numpy as np
from tracer.ir.config import context


@pytest.fixture(autouse=True)
def sim():
    with context(backend="cuda", cuda_sim=True):
        yield


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
