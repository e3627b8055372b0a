"""Gather and scatter on the cuda backend: on the device under Numba's CUDA simulator (no host
round trip), and the index kernels compile to sm_90 PTX."""
from __future__ import annotations

import numpy
import pytest

import tracer.cuda_kernels.cuda.backend as cuda_mod
import tracer.numpy as np
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject

A = numpy.arange(2 * 3 * 4, dtype=numpy.float32).reshape(2, 3, 4)


@pytest.fixture(autouse=True)
def on_device(monkeypatch):
    def boom(n, args):
        raise AssertionError(f"{n.op} ran on the host")
    monkeypatch.setattr(cuda_mod, "eval_node", boom)
    with context(backend="cuda", cuda_sim=True):
        yield


def _same(t, h):
    got = numpy.asarray(t)
    assert got.dtype == h.dtype and got.shape == h.shape
    numpy.testing.assert_array_equal(got, h)


@pytest.mark.parametrize("key", [([1, 0],), (slice(None), [2, 0, 2]), (slice(None), [0, 1], [[1], [3]]),
                                 ([1, 0], slice(None), [3, -1]), (numpy.array(1),)])
def test_gathers_run_on_the_device(key):
    _same(np.asarray(A)[key], A[key])


def test_set_with_duplicates_last_wins_on_the_device():
    h, t = A.copy(), np.asarray(A.copy())
    v = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    h[[0, 0, 1], 1] = v
    t[[0, 0, 1], 1] = np.asarray(v)
    _same(t, h)


@pytest.mark.parametrize("uf", ["add", "maximum", "minimum"])
def test_float_ufunc_at_runs_on_the_device(uf):  # (segments: cuda/segment.py)
    h, t = A.copy(), np.asarray(A.copy())
    getattr(numpy, uf).at(h, (slice(None), [0, 0, 2]), numpy.float32(9.5))
    getattr(np, uf).at(t, (slice(None), [0, 0, 2]), numpy.float32(9.5))
    _same(t, h)


@pytest.mark.parametrize("uf, dtype", [("multiply", numpy.float32), ("subtract", numpy.int16),
                                       ("maximum", numpy.int8), ("add", numpy.uint8),
                                       ("bitwise_xor", numpy.int64)])
def test_combiners_without_atomics_run_in_order_on_the_device(uf, dtype):  # (cuda/segment.py)
    h = (numpy.arange(6) + 1).astype(dtype)
    t = np.asarray(h.copy())
    v = numpy.array([3, 2, 5], dtype)
    getattr(numpy, uf).at(h, [0, 0, 5], v)
    getattr(np, uf).at(t, [0, 0, 5], np.asarray(v))
    _same(t, h)


def test_computed_index_out_of_bounds_raises():
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 2"):
        numpy.asarray(np.asarray(A)[np.asarray(numpy.array([0, 5]))])


@pytest.mark.nvrtc
@pytest.mark.parametrize("arg, dtypes", [("2_1_gather", ("float32",) * 3 + ("int64",)),
                                         ("3_2_add", ("float64",) * 3 + ("int32",)),
                                         ("1_1_claim", ("int64", "float32", "float32", "int64")),
                                         ("2_1_write", ("int32", "int64", "int32", "int64")),
                                         ("1_1_offs", ("int64", "int8", "int8", "int64")),
                                         ("2_1_count", ("int64", "int64", "int8", "int64"))])
def test_index_kernels_compile_to_ptx(arg, dtypes):
    from tracer.cuda_kernels.cuda.ptx import library_ptx
    ptx = library_ptx("index", arg, dtypes)
    assert ".target sm_90" in ptx
    if arg.endswith(("add", "claim", "count")):
        assert "atom." in ptx


@pytest.mark.nvrtc
@pytest.mark.parametrize("arg, dtypes", [("scan", ()), ("place", ()),
                                         ("apply_float32_float64_add", ("float32", "float64")),
                                         ("apply_int16_int16_subtract", ("int16", "int16"))])
def test_segment_kernels_compile_to_ptx(arg, dtypes):
    from tracer.cuda_kernels.cuda.ptx import library_ptx
    assert ".target sm_90" in library_ptx("segment", arg, dtypes)
