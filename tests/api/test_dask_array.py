"""tracer arrays as the chunks of a `dask.array` (issue 23, item 4): Dask's array API on tracer
chunks gives the answers of the same code on NumPy chunks, keeps tracer chunks (`_meta`, the
results of compute() and persist()), and each chunk task's ops run as one fused evaluation."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy
import pytest

import tracer
import tracer.numpy as np

da = pytest.importorskip("dask.array")
import dask  # noqa: E402
from tracer.dask_chunks import _pending  # noqa: E402

H = numpy.random.default_rng(1).standard_normal((12, 10))
CHUNKS = (4, 5)


@pytest.fixture(scope="module", autouse=True)
def _idle_pool_threads_forgotten():
    """Dask's threaded scheduler keeps its pool's threads, which recorded graphs here: while
    they live, tracer writes into no leaf in place (store._no_other_recorder). They are idle
    once this module is done; the tests after it are not about them."""
    import threading

    from tracer import store
    yield
    store._RECORDERS.intersection_update({threading.get_ident()})

# the same code on a dask array `x` of tracer chunks and on one of NumPy chunks
OPS = {
    "arithmetic": lambda x: x * 2 + 1,
    "ufuncs": lambda x: da.sin(x) + numpy.exp(x),  # Dask's ufunc and NumPy's on a dask array
    "where": lambda x: da.where(x > 0, x, -x),
    "sum": lambda x: x.sum(),
    "sum_axis0": lambda x: x.sum(axis=0),
    "mean_axis1": lambda x: x.mean(axis=1),
    "max": lambda x: x.max(),
    "max_axis0": lambda x: x.max(axis=0),
    "std_axis0": lambda x: x.std(axis=0),
    "std_axis1_ddof1": lambda x: x.std(axis=1, ddof=1),
    "nanmean": lambda x: da.nanmean(da.where(x > 1, numpy.nan, x), axis=0),
    "cumsum": lambda x: x.cumsum(axis=0),
    "concatenate": lambda x: da.concatenate([x, x * 2], axis=1),
    "tensordot": lambda x: da.tensordot(x, x, axes=([0], [0])),
    "matmul": lambda x: x @ x.T,
    "einsum": lambda x: da.einsum("ij,ij->j", x, x),
    "map_blocks": lambda x: x.map_blocks(lambda b: b * b - b.sum(axis=0, keepdims=True)),
    "slices": lambda x: x.T[1:, ::2],
    "take": lambda x: x[[0, 5, 3]],
    "rechunk": lambda x: x.rechunk((6, 10)).sum(axis=1),
    "percentile": pytest.param(  # (NumPy's interp merges the chunks' percentiles)
        lambda x: da.percentile(x.ravel(), [10, 50, 90]),
        marks=pytest.mark.filterwarnings("ignore::tracer.TracerFallbackWarning")),
}


def _pair(h=H, chunks=CHUNKS, **kw):
    return da.from_array(np.asarray(h), chunks=chunks, **kw), da.from_array(h, chunks=chunks)


@pytest.mark.parametrize("scheduler", ["threads", "synchronous"])
@pytest.mark.parametrize("op", OPS.values(), ids=OPS.keys())
def test_dask_array_ops_on_tracer_chunks_give_numpys_answers(op, scheduler):
    x, nx = _pair()
    y = op(x)
    want = op(nx).compute(scheduler=scheduler)
    got = y.compute(scheduler=scheduler)
    assert y.shape == want.shape and y.dtype == want.dtype
    if want.ndim:
        assert type(y._meta) is tracer.ndarray
        assert type(got) is tracer.ndarray and not _pending(got, [])
    numpy.testing.assert_allclose(numpy.asarray(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shapes", [((0, 0), (0, 0), ([0], [0])), ((3, 0), (0, 4), 1),
                                    ((0, 3), (3, 2), 1), ((2, 0), (0, 0), ([1], [0]))])
def test_tensordot_of_empty_arrays(shapes):
    """Dask finds a tensordot's chunk type by calling it on 0-size metas."""
    sa, sb, axes = shapes
    ha, hb = numpy.ones(sa), numpy.ones(sb)
    got = np.tensordot(np.asarray(ha), np.asarray(hb), axes=axes)
    numpy.testing.assert_array_equal(numpy.asarray(got), numpy.tensordot(ha, hb, axes=axes))
    assert got.shape == numpy.tensordot(ha, hb, axes=axes).shape


@pytest.mark.parametrize("asarray", [None, True, False])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_from_array_keeps_tracer_chunks_and_numpys_metadata(dtype, asarray):
    h = (H * 4).astype(dtype)
    x, nx = _pair(h, asarray=asarray)
    assert type(x._meta) is tracer.ndarray and x._meta.size == 0
    assert (x.shape, x.dtype, x.chunks, x.ndim) == (nx.shape, nx.dtype, nx.chunks, nx.ndim)
    got = x.compute()
    assert type(got) is tracer.ndarray and got.dtype == h.dtype
    numpy.testing.assert_array_equal(numpy.asarray(got), h)
    numpy.testing.assert_array_equal(numpy.asarray(x), h)  # NumPy's asarray of the dask array


def test_dask_wraps_tracer_operands():
    """Dask is the upcast type (NEP 13): a tracer array beside a dask array becomes one of its
    operands, from either side, and stays a tracer chunk."""
    x, nx = _pair()
    t = np.asarray(H[::-1] * 3)
    for got, want in [(x + t, nx + H[::-1] * 3), (t - x, H[::-1] * 3 - nx),
                      (numpy.multiply(x, t), nx * (H[::-1] * 3)), (x + H, nx + H)]:
        assert isinstance(got, da.Array) and type(got._meta) is tracer.ndarray
        numpy.testing.assert_allclose(numpy.asarray(got.compute()), want.compute(), rtol=1e-12)


@pytest.mark.lazy
def test_a_chunk_tasks_ops_run_as_one_kernel():
    """Dask's blockwise fusion puts 3 elementwise ops and a reduction's chunk step into one task
    per chunk; they record, and the task's result is realized as it ends: one evaluation and
    one fused kernel per chunk, and one for the 4 partials' sum."""
    x, nx = _pair(numpy.random.default_rng(2).random((400, 30)), chunks=(100, 30))

    def chain(x):
        return (da.sin(x * 2 + 1) - 3).sum(axis=0)

    want = chain(nx).compute()
    for scheduler in ["synchronous", "threads"]:
        chain(x).compute(scheduler=scheduler)  # (compiles)
        tracer.reset_stats()
        got = chain(x).compute(scheduler=scheduler)
        s = tracer.stats()
        assert (s.evaluations, s.kernels_launched) == (5, 5)
        numpy.testing.assert_allclose(numpy.asarray(got), want, rtol=1e-12)


def test_persist_holds_realized_chunks():
    x, nx = _pair()
    p = (x * 3 + 1).persist(scheduler="threads")
    chunks = list(dict(p.__dask_graph__()).values())
    assert len(chunks) == 6 and all(type(c) is tracer.ndarray for c in chunks)
    assert not _pending(chunks, [])
    numpy.testing.assert_allclose(numpy.asarray(p.sum(axis=0).compute()),
                                  (nx * 3 + 1).sum(axis=0).compute(), rtol=1e-12)


def test_store_into_numpy_to_backend_numpy_and_sizeof():
    from dask.sizeof import sizeof
    x, _ = _pair()
    out = numpy.zeros_like(H)
    da.store(x * 2 - 1, out, scheduler="threads")
    numpy.testing.assert_array_equal(out, H * 2 - 1)
    y = (x * 2).to_backend("numpy")
    assert type(y._meta) is numpy.ndarray and type(y.compute()) is numpy.ndarray
    numpy.testing.assert_array_equal(y.compute(), H * 2)
    t = np.asarray(H)
    assert sizeof(t) == sizeof(t * 2) == H.nbytes


def test_sizeof_evaluates_only_in_a_distributed_task():
    """Dask sizes values anywhere (the client, a worker's event loop weighing what it spills):
    a pending chunk's size comes from its shape and dtype, nothing evaluated; in a distributed
    worker's task thread (distributed's thread_state holds the task's key), where the worker
    measures the task's result, the chunk is realized first."""
    pytest.importorskip("distributed")
    from dask.sizeof import sizeof
    from distributed.utils import set_thread_state
    t = np.asarray(numpy.random.default_rng(2).random((200, 100)))  # past TRACER_EAGER_SIZE
    y = np.sin(t) * 2
    before = tracer.stats().evaluations
    assert sizeof(y) == 200 * 100 * 8 and _pending(y, [])
    assert sizeof([y, y]) >= 2 * 200 * 100 * 8 and _pending(y, [])
    assert tracer.stats().evaluations == before
    with set_thread_state(key="a-task"):
        assert sizeof(y) == 200 * 100 * 8
    assert not _pending(y, []) and tracer.stats().evaluations == before + 1
    numpy.testing.assert_allclose(numpy.asarray(y), numpy.sin(numpy.asarray(t)) * 2)


def test_registered_when_dask_is_imported_after_tracer():
    """tracer.numpy's import leaves Dask unimported; dask.array's import registers the type."""
    code = """if True:
        import sys
        import tracer
        import tracer.numpy as np
        assert "dask" not in sys.modules
        import dask.array as da
        from dask.array.chunk_types import is_valid_chunk_type
        assert is_valid_chunk_type(tracer.ndarray)
        assert not any(type(f).__name__ == "_AfterImport" for f in sys.meta_path)
        x = da.from_array(np.arange(6.0), chunks=3)
        assert type(x._meta) is tracer.ndarray and float((x * 2).sum().compute()) == 30.0
    """
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())


@pytest.mark.slow
def test_on_a_local_cluster_of_two_processes():
    """On distributed workers a task's chunk is realized as the worker measures it: one
    evaluation per chunk task, on the workers."""
    distributed = pytest.importorskip("distributed")
    h = numpy.random.default_rng(3).random((8000, 30))
    x, nx = _pair(h, chunks=(1000, 30))  # (past the size NumPy runs at once: TRACER_EAGER_SIZE)

    def prog(x):
        return (da.sin(x * 2 + 1) - 3).map_blocks(lambda b: b * b).sum(axis=0)

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as lc, distributed.Client(lc) as c:
        got = prog(x).compute()
        evals = c.run(lambda: tracer.stats().evaluations)
    assert type(got) is tracer.ndarray
    numpy.testing.assert_allclose(numpy.asarray(got), prog(nx).compute(scheduler="threads"),
                                  rtol=1e-12)
    assert sum(evals.values()) >= 8
