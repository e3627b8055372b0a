"""The cuda backend's caching allocator, under Numba's CUDA simulator: intermediates go back to
the pool when their storage dies and are handed out again; results come back when the last
array over them dies, never before; size classes; the pool under a memory budget."""
from __future__ import annotations

import gc

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels import backends
from tracer.cuda_kernels.cuda.memory import DevicePool, size_class
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject


def _prog(m, x):
    y = (x @ x.T) * 2                     # a matmul intermediate and a fused epilogue
    return (y - y.max(1, keepdims=True)).sum(0) + (x.sum(0) * 3).sum()


def test_repeated_evaluations_reuse_device_buffers():
    h = numpy.random.default_rng(0).standard_normal((8, 6)).astype(numpy.float32)
    want = _prog(numpy, h.astype(numpy.float64))
    with context(backend="cuda", cuda_sim=True):
        pool = backends.get("cuda").pool
        numpy.testing.assert_allclose(numpy.asarray(_prog(np, np.asarray(h))), want, rtol=1e-4)
        allocs, hits = pool.allocs, pool.hits
        numpy.testing.assert_allclose(numpy.asarray(_prog(np, np.asarray(h))), want, rtol=1e-4)
        assert pool.allocs - allocs <= 1  # only the result is new
        assert pool.hits - hits >= 5      # every intermediate and partial came from the pool


def test_results_and_their_views_are_never_handed_out_again():
    h = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    with context(backend="cuda", cuda_sim=True):
        x = np.asarray(h)
        m = x @ x.T
        flat, twice = tracer.evaluate(m.reshape(-1), m * 2)  # flat views m's storage
        for k in range(3):  # later evaluations allocate and release intermediates
            numpy.asarray((x @ x.T + k) * 2)
        numpy.testing.assert_array_equal(numpy.asarray(flat), (h @ h.T).reshape(-1))
        numpy.testing.assert_array_equal(numpy.asarray(twice), (h @ h.T) * 2)


def test_pool_release_takes_only_its_own_live_arrays():
    from numba.cuda import simulator
    pool = DevicePool(lambda: simulator)
    a = pool.empty((4, 2), numpy.float32)
    stranger = simulator.device_array((4, 2), numpy.float32)
    pool.release(stranger)                 # not from the pool: ignored
    assert pool.idle == 0
    pool.release(a)
    assert pool.idle == 512                # the smallest size class
    b = pool.empty((8,), numpy.int32)      # same byte size: the same block
    assert pool.hits == 1 and b.shape == (8,) and b.dtype == numpy.int32
    pool.release(a)                        # a second release of an array handed out again
    assert pool.idle == 0


def test_updates_run_in_place_on_the_device():
    h = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
    with context(backend="cuda", cuda_sim=True):
        a = np.asarray(h) * 2
        a[1] = -1.0
        np.add.at(a, ([0, 0], [1, 1]), 1.0)
        a[[2, 2], [3, 0]] = 7.0
        assert tracer.explain(a).bytes_copied == 0
        want = h * 2
        want[1] = -1.0
        numpy.add.at(want, ([0, 0], [1, 1]), 1.0)
        want[[2, 2], [3, 0]] = 7.0
        numpy.testing.assert_array_equal(numpy.asarray(a), want)


def test_size_classes_waste_under_an_eighth():
    sizes = [1, 511, 512, 513, 1000, 4097, 10**6, 3 * 2**20 + 1, 2**31 + 5]
    for n in sizes:
        c = size_class(n)
        assert c >= n and (c == 512 or c - n < n / 8) and size_class(c) == c
    assert size_class(1000) == size_class(1020)  # neighbours share a class, so a block
    assert len({size_class(n) for n in range(2**20 + 1, 2**21 + 1, 997)}) == 8  # 8 per power of two


def _sim_pool():
    from numba.cuda import simulator
    return DevicePool(lambda: simulator)


def test_a_block_comes_back_when_its_last_array_dies():
    pool = _sim_pool()
    a = pool.empty((4, 8), numpy.float32)
    a[:] = 1.0
    views = [a[1:, ::2], a.reshape(32), a.view(numpy.int32)]
    del a
    while views:
        gc.collect()
        pool.take_back()
        assert pool.returned == 0      # a view still reads the block
        views.pop()
    gc.collect()
    b = pool.empty((30,), numpy.float32)  # 120 bytes: the same class (it takes blocks back)
    assert pool.returned == 1 and pool.hits == 1


def test_a_released_block_is_not_taken_back_twice():
    pool = _sim_pool()
    a = pool.empty((64,), numpy.float64)
    pool.release(a)                        # the executor's release, then the array dies
    b = pool.empty((64,), numpy.float64)   # reuses the block
    del a
    gc.collect()
    c = pool.empty((64,), numpy.float64)   # must not get b's block
    assert pool.returned == 0 and pool.allocs == 2 and pool.idle == 0
    del b, c


def test_lease_semantics_of_numba_cuda_device_arrays_without_a_gpu():
    """The real-device path: numba-cuda arrays over made-up addresses (never dereferenced):
    views and slices keep the lease; the last one's death returns the block."""
    from numba.cuda.cudadrv import devicearray, driver

    class FakeDevice:
        def __init__(self):
            self.next = 1 << 20

        def device_array(self, n, dtype):
            ptr = driver.binding.CUdeviceptr(self.next)
            self.next += n
            return devicearray.DeviceNDArray((n,), (1,), numpy.dtype(dtype),
                                             gpu_data=driver.MemoryPointer(object(), ptr, n))

        def current_context(self):
            return None

    api = FakeDevice()
    pool = DevicePool(lambda: api)
    a = pool.empty((4, 8), numpy.float32)
    base = a.device_ctypes_pointer.value
    part = a._do_getitem((slice(1, None), slice(None, None, 2)))  # a[1:, ::2] (no context)
    flat = a.reshape(32)
    del a
    gc.collect()
    pool.take_back()
    assert pool.returned == 0
    del flat
    gc.collect()
    pool.take_back()
    assert pool.returned == 0
    del part
    gc.collect()
    b = pool.empty((30,), numpy.float32)
    assert pool.returned == 1 and b.device_ctypes_pointer.value == base


def test_dropped_results_are_reused_by_the_next_evaluation():
    h = numpy.arange(24, dtype=numpy.float32).reshape(4, 6)
    with context(backend="cuda", cuda_sim=True):
        pool = backends.get("cuda").pool
        x = tracer.evaluate(np.asarray(h) * 1)
        for k in range(3):
            numpy.testing.assert_array_equal(numpy.asarray(tracer.evaluate(x + k)), h + k)
            gc.collect()
        allocs = pool.allocs
        got = [numpy.asarray(tracer.evaluate(x + k)) for k in range(3)]
        assert pool.allocs == allocs  # each dropped result's block served the next one
        for k, g in enumerate(got):
            numpy.testing.assert_array_equal(g, h + k)


def test_under_a_budget_idle_blocks_count_and_sizes_are_exact():
    pool = _sim_pool()
    for n in (100, 3000, 40000):
        pool.release(pool.empty((n,), numpy.uint8))
    assert pool.idle == sum(size_class(n) for n in (100, 3000, 40000))
    with pool.within(4096):
        assert pool.idle <= 4096               # the largest let go at once
        a = pool.empty((3000,), numpy.uint8)   # exact: not served by the 3008-byte class
        pool.release(a)
        pool.release(pool.empty((50000,), numpy.uint8))  # past the room: let go
        assert pool.idle <= 4096
    assert pool.IDLE_CAP == DevicePool.IDLE_CAP


def test_a_released_numba_cuda_array_stays_a_valid_object():
    """The executor releases an intermediate before its Python objects die: they must not
    reach a collected lease through numba-cuda's weak proxies."""
    from numba.cuda.cudadrv import devicearray, driver

    class FakeDevice:
        def device_array(self, n, dtype):
            ptr = driver.binding.CUdeviceptr(1 << 20)
            return devicearray.DeviceNDArray((n,), (1,), numpy.dtype(dtype),
                                             gpu_data=driver.MemoryPointer(object(), ptr, n))

        def current_context(self):
            return None

    pool = DevicePool(lambda: FakeDevice())
    a = pool.empty((16,), numpy.float32)
    pool.release(a)
    gc.collect()
    part = a._do_getitem(slice(4, 8))  # a[4:8]: through the lease's proxy
    assert part.shape == (4,)
    del a, part
    gc.collect()
    pool.take_back()
    assert pool.returned == 0 and not pool._held  # its lease went, the block came back once
