"""cuda/libs.py: which path a matmul, sort, argsort or scan takes on the cuda backend, and what
it hands the library. No GPU here: the library (CuPy) is replaced by a fake module that records
each call and computes it with NumPy over the very memory it was handed (the simulator's device
arrays live in host memory), so a right answer proves the result was written in place, with no
copy. Nothing here runs cuBLAS, Thrust or CUB. (Partitions and searchsorted:
test_cuda_libs_search.py.)"""
from __future__ import annotations

import sys

import numpy
import pytest

import tracer
import tracer.numpy as np
import tracer.cuda_kernels.cuda.backend as cuda_mod
from tracer.cuda_kernels import backends
from tracer.cuda_kernels.cuda import libs
from tracer.ir.config import context

from counters import Delta
from fake_cupy import SCRATCH, calls, fake_cupy, idle, rand, run, use_fake

# the backend's dispatch is the subject (on the simulator)
pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim")]


@pytest.fixture
def fake(monkeypatch):
    return use_fake(monkeypatch)


# ---------------------------------------------------------------- which path

def test_simulator_never_uses_the_library(monkeypatch):
    monkeypatch.setattr(libs, "_LOADED", [fake_cupy()])  # importable and "sees" a GPU
    assert not libs.usable()
    ha, hb = rand((5, 7)), rand((7, 3), seed=1)
    got, d = run(lambda a, b: a @ b, ha, hb)
    numpy.testing.assert_allclose(got, ha @ hb, rtol=1e-5)
    assert (d.library_calls, d.library_fallbacks, d.kernels_launched) == (0, 1, 1)  # tiled
    got, d = run(np.sort, ha[0])
    numpy.testing.assert_array_equal(got, numpy.sort(ha[0]))
    assert (d.library_calls, d.library_fallbacks) == (0, 1)  # the host round trip


@pytest.mark.parametrize("broken", ["missing", "no device", "driver error"])
def test_library_missing_or_without_a_device_is_not_usable(monkeypatch, broken):
    monkeypatch.setattr(libs, "_LOADED", [])
    if broken == "missing":
        monkeypatch.setitem(sys.modules, "cupy", None)  # import raises ImportError
    else:
        cp = fake_cupy(device_count=0)
        if broken == "driver error":
            def fail():
                raise RuntimeError("cudaErrorInsufficientDriver")
            cp.cuda.runtime.getDeviceCount = fail
        monkeypatch.setitem(sys.modules, "cupy", cp)
    with context(cuda_sim=False):
        assert libs.library() is None and not libs.usable()


def test_real_cupy_without_a_gpu_is_not_usable(monkeypatch):
    """Import-level only: CuPy imports without a driver; its first device call fails."""
    pytest.importorskip("cupy")
    monkeypatch.setattr(libs, "_LOADED", [])
    import cupy
    try:
        has_gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no driver
        has_gpu = False
    with context(cuda_sim=False):
        assert (libs.library() is cupy) == has_gpu


def test_supported_dtypes():
    a32, a64, i32 = (np.asarray(rand((2, 2), d)) for d in ("float32", "float64", "int32"))
    assert libs.supports((a32 @ a32)._node) and libs.supports((a64 @ a64)._node)
    assert not libs.supports((i32 @ i32)._node)     # integers: our kernel (cuBLAS has no int GEMM)
    e1, e2 = (np.asarray(numpy.ones(s, numpy.float32)) for s in ((3, 0), (0, 2)))
    assert not libs.supports((e1 @ e2)._node)       # K = 0: our kernel writes the zeros
    h16 = np.asarray(rand((4,), numpy.float16))
    assert not libs.supports(np.sort(h16)._node) and libs.supports(np.sort(a32)._node)


def test_unsupported_dtypes_keep_our_kernel(fake, no_host):
    hi, hj = rand((3, 4), numpy.int32), rand((4, 2), numpy.int32, seed=1)
    got, d = run(lambda a, b: a @ b, hi, hj)
    numpy.testing.assert_array_equal(got, hi @ hj)
    assert (d.library_calls, d.library_fallbacks, d.kernels_launched) == (0, 1, 1)
    assert fake.log == []


def test_an_op_the_library_fails_on_runs_our_path(fake, no_host, monkeypatch):
    def no_cublas(*a, **k):
        raise ImportError("libcublas.so.13: cannot open shared object file")
    fake.matmul = no_cublas
    monkeypatch.setattr(cuda_mod.libs, "warn_once", lambda topic, msg: warned.append(msg))
    warned: list = []
    ha, hb = rand((5, 7)), rand((7, 3), seed=1)
    for _ in range(2):
        got, d = run(lambda a, b: a @ b, ha, hb)
        numpy.testing.assert_allclose(got, ha @ hb, rtol=1e-5)
        assert (d.library_calls, d.library_fallbacks, d.kernels_launched) == (0, 1, 1)
    assert "libcublas" in warned[0] and set(libs._BROKEN) == {"matmul"}


# ---------------------------------------------------------------- what the library is handed

def test_matmul_goes_to_the_library_over_our_memory(fake, no_host):
    ha, hb = rand((5, 7)), rand((7, 3), seed=1)
    got, d = run(lambda a, b: a @ b, ha, hb)
    numpy.testing.assert_allclose(got, ha @ hb, rtol=1e-5)
    assert (d.library_calls, d.library_fallbacks, d.kernels_launched) == (1, 0, 0)
    assert (d.h2d_copies, d.d2h_copies) == (2, 1)  # the inputs up, the result down: no more
    (call,) = calls(fake, "matmul")
    be = backends.get("cuda")
    _, stream, dev, (a, b), kw = call
    assert stream is be.stream() and dev == be.device_id() == 0
    # (the canonical batched form: a batch of one)
    assert a.shape == (1, 5, 7) and b.shape == (1, 7, 3) and kw["out"].shape == (1, 5, 3)
    assert a.dtype == b.dtype == kw["out"].dtype == numpy.float32
    wraps = [e[3] for e in calls(fake, "wrap")]
    assert [w[1:3] for w in wraps] == [(140, (1, 5, 7)), (84, (1, 7, 3)), (60, (1, 5, 3))]
    assert all(e[1] is be.stream() for e in calls(fake, "wrap"))


def test_transposed_operands_are_views(fake, no_host):
    ha, hb = rand((5, 7)), rand((3, 7), seed=1)
    got, d = run(lambda a, b: a @ b.T, ha, hb)
    numpy.testing.assert_allclose(got, ha @ hb.T, rtol=1e-5)
    assert (d.library_calls, d.kernels_launched) == (1, 0)  # no transpose kernel
    (call,) = calls(fake, "matmul")
    b = call[3][1]
    assert b.shape == (1, 7, 3) and b.strides == (84, 4, 28)  # (3, 7) read transposed


def test_batched_matmul(fake, no_host):
    ha, hb = rand((2, 3, 3, 4), numpy.float64), rand((2, 3, 4, 2), numpy.float64, seed=1)
    got, d = run(lambda a, b: a @ b, ha, hb)
    numpy.testing.assert_allclose(got, ha @ hb, rtol=1e-12)
    assert (d.library_calls, d.kernels_launched) == (1, 0)
    (call,) = calls(fake, "matmul")
    assert call[3][0].shape == (6, 3, 4) and call[3][1].shape == (6, 4, 2)
    assert call[4]["out"].shape == (6, 3, 2)
    # a partial batch broadcast: the optimizer materializes it (one kernel), cuBLAS the rest
    ha = ha[:, :1]
    got, d = run(lambda a, b: a @ b, ha, hb)
    numpy.testing.assert_allclose(got, ha @ hb, rtol=1e-12)
    assert (d.library_calls, d.kernels_launched) == (1, 1)


def test_complex_matmul_goes_to_the_library(fake):
    """Complex has no kernel of ours (the matmul went through the host): cuBLAS takes it. (The
    reshapes around it still round-trip: views of complex are not on the device yet.)"""
    ha, hb = rand((3, 4), numpy.complex64), rand((4, 2), numpy.complex64, seed=1)
    got, d = run(lambda a, b: a @ b, ha, hb)
    numpy.testing.assert_allclose(got, ha @ hb, rtol=1e-5)
    assert d.library_calls == 1


def test_sort_argsort_and_scans(fake, no_host):
    h = numpy.array([3.0, -numpy.nan, 1.0, numpy.nan, 1.0, -0.0, 0.0, -numpy.inf], numpy.float32)
    got, d = run(np.sort, h)
    numpy.testing.assert_array_equal(got, numpy.sort(h))
    assert d.library_calls == 1 and d.kernels_launched == 0
    assert not numpy.signbit(got[numpy.isnan(got)]).any()  # every NaN the positive one
    got, _ = run(np.argsort, h)
    numpy.testing.assert_array_equal(got, numpy.argsort(h, kind="stable"))
    assert got.dtype == numpy.intp
    (call,) = calls(fake, "argsort")
    assert not numpy.signbit(call[3][0][numpy.isnan(call[3][0])]).any()  # keys, a copy
    assert idle(backends.get("cuda").pool, SCRATCH)  # scratch from our pool, and back
    h2 = rand((3, 5), numpy.int32)
    for fn, ref in [(lambda x: np.sort(x, axis=0), lambda x: numpy.sort(x, axis=0)),
                    (np.argsort, lambda x: numpy.argsort(x, kind="stable")),
                    (lambda x: np.cumsum(x, axis=1), lambda x: numpy.cumsum(x, axis=1)),
                    (lambda x: np.cumprod(x, axis=0), lambda x: numpy.cumprod(x, axis=0))]:
        got, d = run(fn, h2)
        want = ref(h2)
        assert got.dtype == want.dtype  # int32 sums in int64, as NumPy's rules say
        numpy.testing.assert_array_equal(got, want)
        assert (d.library_calls, d.library_fallbacks) == (1, 0)
    (scan,) = calls(fake, "cumsum")
    assert scan[4]["dtype"] == numpy.int64 and scan[4]["axis"] == 1 and scan[1] is not None


def test_empty_input_calls_nothing(fake, no_host):
    got, d = run(np.sort, numpy.zeros((0,), numpy.float32))
    assert got.shape == (0,) and d.library_calls == 1 and fake.log == []


# ---------------------------------------------------------------- NaN placement (pure Python)

def _radix_order(x: numpy.ndarray) -> numpy.ndarray:
    """The order CUB's radix sort gives float64 keys: by the twiddled bit pattern (sign bit
    flipped for positives, all bits for negatives), -0.0 taken as +0.0, stable."""
    bits = x.view(numpy.uint64).copy()
    bits[bits == numpy.uint64(1 << 63)] = 0
    neg = (bits >> numpy.uint64(63)).astype(bool)
    key = numpy.where(neg, ~bits, bits | numpy.uint64(1 << 63))
    return numpy.argsort(key, kind="stable")


def test_nan_last_gives_numpys_order_to_a_radix_sort():
    h = numpy.array([2.0, -numpy.nan, numpy.inf, numpy.nan, -0.0, 0.0, -numpy.inf, 2.0, -1.0])
    want = numpy.argsort(h, kind="stable")
    assert _radix_order(h)[0] == 1 and not numpy.array_equal(_radix_order(h), want)
    keys = h.copy()
    libs.nan_last(numpy, keys)
    numpy.testing.assert_array_equal(_radix_order(keys), want)
    numpy.testing.assert_array_equal(keys[~numpy.isnan(h)], h[~numpy.isnan(h)])  # -0.0 kept


def test_real_cupy_wraps_our_memory(monkeypatch):
    """The calls of libs.py that need no device, against the real CuPy (where installed): our
    array (here a simulator one, in host memory) seen by CuPy at its own address, transposed as
    a view; the stream taken by the CUDA stream protocol; scratch leased from the pool."""
    cupy = pytest.importorskip("cupy")
    be = backends.get("cuda")
    x = be.from_host(numpy.arange(12, dtype=numpy.float32).reshape(3, 4))
    c = libs.as_cupy(cupy, x, 0)
    ptr = x._ary.__array_interface__["data"][0]
    assert (c.shape, c.strides, c.dtype, c.data.ptr) == ((3, 4), (16, 4), x.dtype, ptr)
    assert c.swapaxes(-1, -2).strides == (4, 16) and c.swapaxes(-1, -2).data.ptr == ptr

    class Ours:
        def __cuda_stream__(self):
            return (0, 4242)
    monkeypatch.setattr(libs, "_STREAMS", {})
    s = Ours()
    assert libs._stream(cupy, s).ptr == 4242 and libs._stream(cupy, s) is libs._stream(cupy, s)
    mp = libs._scratch(cupy, be, SCRATCH + 8, 0)
    assert mp.ptr and not idle(be.pool, SCRATCH + 8)
    del mp
    assert be.pool._free.get(SCRATCH + 8)  # CuPy let go: the block is the pool's again


# ---------------------------------------------------------------- the distance rewrite's threshold

def test_distance_threshold_is_per_backend(monkeypatch):
    """opt/distance.py reads the GEMM form's minimum D for the backend being optimized for."""
    from tracer.ir import toposort
    from tracer.opt import distance
    hx = numpy.random.default_rng(0).standard_normal((5, 16)).astype(numpy.float32)
    monkeypatch.setitem(distance.MIN_DIM_BY_BACKEND, "cuda", 17)
    X, Y = np.asarray(hx), np.asarray(hx[:4])
    roots = [((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)._node]
    for backend, gemm in [("cpu", True), ("cuda", False)]:
        with context(backend=backend):
            ops = {n.op for n in toposort(distance.euclidean_distance(roots))}
        assert ("matmul" in ops) == gemm, backend


def test_float_scans_keep_numpys_order():
    """A parallel scan rounds elsewhere than NumPy's left-to-right loop: floats stay there."""
    for dt, lib in [(numpy.float32, False), (numpy.complex64, False), (numpy.int32, True),
                    (numpy.bool_, True)]:
        x = np.asarray(numpy.ones(5, dt))
        assert libs.supports(np.cumsum(x)._node) is lib and \
            libs.supports(np.cumprod(x)._node) is lib, dt


def test_ufunc_at_segments_sort_by_the_library(fake, no_host):
    """cuda/segment.py: the target positions' stable argsort by the library, then one thread
    per segment in occurrence order: NumPy's bits with repeated indices."""
    h = rand((16,), numpy.float32)
    ix = numpy.random.default_rng(2).integers(-16, 16, 50)
    v = rand((50,), numpy.float32, seed=3)
    t, ti, tv = tracer.evaluate(*[np.asarray(x) * 1 for x in (h, ix, v)])
    numpy.multiply.at(h, ix, v)
    tracer.reset_stats()
    with Delta() as d:
        np.multiply.at(t, ti, tv)
        got = numpy.asarray(t)
    assert got.tobytes() == h.tobytes()
    s = tracer.stats()  # (reset above)
    assert (s.library_calls, s.library_fallbacks) == (1, 0)
    assert d.kernels_launched == 3  # the target's copy, the positions, the segments
    assert len(calls(fake, "argsort")) == 1
