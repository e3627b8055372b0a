"""DLPack and the CUDA array interface on the cuda backend, under Numba's CUDA simulator: a
result on the device goes out (`__cuda_array_interface__` v3, a CUDA DLPack tensor) with no
copy to the host, and a device array comes in (`np.asarray` of a CUDA array interface object,
`np.from_dlpack` of a CUDA DLPack producer) as a leaf over its memory with no copy from the
host. The simulator's device memory is host memory, so an address handed out is read here
with ctypes. It has no streams (the interfaces give none; bench/gpu.py checks the stream on a
GPU) and no CUDA DLPack producer of its own: a CUDA tensor tracer exports stands in for one
(CuPy and torch on a GPU in bench/gpu.py)."""
from __future__ import annotations

import ctypes

import numpy
import pytest
from numba.cuda import simulator

import tracer
import tracer.numpy as np
from tracer import dlpack
from tracer.ir.config import context

from counters import Delta

# the subject is where the backend's values live (on the simulator)
pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim")]



class SimDeviceArray:
    """A producer's device array: the simulator's, with the CUDA array interface a GPU
    library's has (the simulator's own arrays have none)."""

    def __init__(self, host: numpy.ndarray):
        self.dev = simulator.to_device(host)

    @property
    def __cuda_array_interface__(self) -> dict:
        a = self.dev._ary
        return {"shape": a.shape, "typestr": a.dtype.str, "version": 3, "strides": None,
                "data": (a.ctypes.data, False), "stream": None}


class Producer:
    """A CUDA DLPack producer: tracer's own export, handed on."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kw):
        return self.t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def _read(ptr: int, shape, dtype) -> numpy.ndarray:
    n = int(numpy.prod(shape)) * numpy.dtype(dtype).itemsize
    return numpy.frombuffer((ctypes.c_char * n).from_address(ptr), dtype).reshape(shape).copy()


def _device_result(shape=(4, 6), dtype=numpy.float32):
    h = numpy.arange(numpy.prod(shape), dtype=dtype).reshape(shape)
    return tracer.evaluate(np.asarray(h) * 2 + 1), h * 2 + 1


def test_cuda_array_interface_of_a_device_result_copies_nothing():
    t, want = _device_result()
    with Delta() as d:
        cai = t.__cuda_array_interface__
    assert (d.d2h_copies, d.h2d_copies) == (0, 0)
    assert cai["version"] == 3 and cai["shape"] == want.shape and cai["typestr"] == "<f4"
    assert cai["strides"] is None and cai["data"][1] is True  # read-only: a shared snapshot
    assert "stream" in cai  # (None: the simulator has no streams)
    numpy.testing.assert_array_equal(_read(cai["data"][0], want.shape, want.dtype), want)


def test_a_view_goes_out_as_a_device_array_of_its_own():
    t, want = _device_result()
    with Delta() as d:
        cai = t[1:3, ::2].__cuda_array_interface__
    assert (d.d2h_copies, d.h2d_copies) == (0, 0)
    numpy.testing.assert_array_equal(_read(cai["data"][0], cai["shape"], "<f4"),
                                     want[1:3, ::2])


def test_no_interface_on_the_cpu_backend():
    with context(backend="cpu"):
        t = tracer.evaluate(np.arange(3.) + 1)
        assert not hasattr(t, "__cuda_array_interface__")
        assert t.__dlpack_device__() == (dlpack.CPU, 0)


def test_dlpack_of_a_device_result_is_a_cuda_tensor_with_no_copy():
    t, want = _device_result(dtype=numpy.float64)
    assert t.__dlpack_device__() == (dlpack.CUDA, 0)
    with Delta() as d:
        taken = dlpack.Taken(t.__dlpack__(max_version=(1, 0)))
    assert (d.d2h_copies, d.h2d_copies) == (0, 0)
    assert taken.device == (dlpack.CUDA, 0) and taken.read_only
    assert (taken.shape, taken.dtype) == (want.shape, want.dtype)
    assert taken.data == t.__cuda_array_interface__["data"][0]
    numpy.testing.assert_array_equal(_read(taken.data, want.shape, want.dtype), want)


def test_dlpack_export_arguments():
    t, want = _device_result()
    with pytest.raises(BufferError, match="readonly"):  # NumPy's, for the old protocol
        t.__dlpack__()
    copied = dlpack.Taken(t.__dlpack__(copy=True))  # a copy of its own: writable, old is ok
    assert not copied.read_only and copied.data != t.__cuda_array_interface__["data"][0]
    numpy.testing.assert_array_equal(_read(copied.data, want.shape, want.dtype), want)
    with pytest.raises(BufferError, match="unsupported device"):
        t.__dlpack__(max_version=(1, 0), dl_device=(dlpack.CPU, 0), copy=False)
    with pytest.raises(ValueError, match="stream 0"):
        t.__dlpack__(max_version=(1, 0), stream=0)
    # the host asks for the values on the host: NumPy's consumer gets a copy there
    numpy.testing.assert_array_equal(numpy.from_dlpack(t, device="cpu"), want)


def test_an_unconsumed_capsule_frees_what_it_held():
    t, _ = _device_result()
    before = len(dlpack._EXPORTED)
    cap = t.__dlpack__(max_version=(1, 0))
    assert len(dlpack._EXPORTED) == before + 1
    del cap
    assert len(dlpack._EXPORTED) == before
    taken = dlpack.Taken(t.__dlpack__(max_version=(1, 0)))
    del taken  # a consumer done with it calls the deleter
    assert len(dlpack._EXPORTED) == before


def test_from_dlpack_of_a_cuda_producer_is_a_device_leaf():
    t, want = _device_result()
    with Delta() as d:
        a = np.from_dlpack(Producer(t))
        r = tracer.evaluate(a - 1)
    assert (d.h2d_copies, d.d2h_copies) == (0, 0)  # device memory in, a device result out
    numpy.testing.assert_array_equal(numpy.asarray(r), want - 1)
    assert not a.flags.writeable  # tracer's export was read-only


def test_asarray_of_a_device_array_aliases_its_memory():
    p = SimDeviceArray(numpy.arange(8, dtype=numpy.float32))
    with Delta() as d:
        a = np.asarray(p)
        r = tracer.evaluate(a * 3)
    assert (d.h2d_copies, d.h2d_bytes) == (0, 0)
    numpy.testing.assert_array_equal(numpy.asarray(r), numpy.arange(8) * 3)
    p.dev[0] = 10  # the producer writes: the leaf reads its memory
    numpy.testing.assert_array_equal(numpy.asarray(a)[:2], [10, 1])
    a[1] = 20  # a write through it lands in the producer's memory
    a[2:4] += 100
    numpy.testing.assert_array_equal(p.dev.copy_to_host(), [10, 20, 102, 103, 4, 5, 6, 7])
    numpy.testing.assert_array_equal(numpy.asarray(r), numpy.arange(8) * 3)  # computed before


def test_array_of_a_device_array_is_a_device_copy():
    p = SimDeviceArray(numpy.arange(4.))
    with Delta() as d:
        c = np.array(p)  # copy=True: a device copy of its own
    assert (d.h2d_copies, d.d2h_copies) == (0, 0)
    p.dev[0] = -1
    c[1] = 7
    numpy.testing.assert_array_equal(numpy.asarray(c), [0, 7, 2, 3])
    numpy.testing.assert_array_equal(p.dev.copy_to_host(), [-1, 1, 2, 3])


def test_a_host_producer_is_uploaded_at_each_evaluation():
    h = numpy.arange(6.)
    a = np.from_dlpack(h)
    with Delta() as d:
        r1 = tracer.evaluate(a + 1)
    assert d.h2d_copies == 1
    h[:] = 5  # no device copy is kept: the next evaluation reads the memory anew
    r2 = tracer.evaluate(a + 1)
    numpy.testing.assert_array_equal(numpy.asarray(r1), numpy.arange(6.) + 1)
    numpy.testing.assert_array_equal(numpy.asarray(r2), numpy.full(6, 6.))
