"""`tracer.cluster(client)` (issue 23): evaluations over the client's budget run their chunks as
Dask tasks on a LocalCluster of two worker processes, with NumPy's answers; graphs travel as
data (`pack`/`unpack`)."""
from __future__ import annotations

import os
import signal

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir.wire import pack, unpack
from tracer.ir.node import Buffer, make

pytestmark = pytest.mark.lazy


def test_a_graph_travels_as_data_however_deep():
    from tracer import engine
    h = numpy.arange(12.0).reshape(3, 4)
    leaf = make("input", (), h.shape, h.dtype, (("buf", Buffer(h)),))
    x = leaf
    for i in range(3000):  # deeper than pickle's recursion would go, node by node
        x = make("add" if i % 2 else "subtract", (x, leaf), h.shape, h.dtype)
    data, bufs = pack([x, leaf])
    assert [b.value for b in bufs] == [h]
    again = unpack(data, [h * 2])
    got = [numpy.asarray(b.value) for b in engine.execute(again)]
    want = h * 2
    for i in range(3000):
        want = want + h * 2 if i % 2 else want - h * 2
    numpy.testing.assert_array_equal(got[1], h * 2)
    numpy.testing.assert_allclose(got[0], want, rtol=1e-12)
    fused = make("negate", (leaf,), h.shape, h.dtype, (("body", x),))  # a node in an attribute
    with pytest.raises(TypeError, match="only recorded graphs"):
        pack([fused])


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit="1 GiB", dashboard_address=None) as lc, \
            distributed.Client(lc) as c:
        yield c


H = numpy.random.default_rng(0).standard_normal((20000, 50))


def _dist(m, x, y):
    """The squared distances of x's rows to y's: a matrix far over the budgets below."""
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)


def test_chunks_run_on_the_workers_with_numpy_answers(client):
    hx, hy = H[:1500, :8], H[5000:7000, :8]
    x, y = np.asarray(hx), np.asarray(hy)
    before = tracer.stats()
    chunks, evals = before.split_chunks, before.evaluations
    with tracer.cluster(client, budget="1 MiB") as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=2 << 20, split_size=1 << 19)
        nearest = numpy.asarray(_dist(np, x, y).min(1))  # rows written back as chunks finish
        total = float(_dist(np, x, y * 2).sum())  # partials combined on the cluster
    numpy.testing.assert_allclose(nearest, _dist(numpy, hx, hy).min(1), rtol=1e-9, atol=1e-12)
    assert total == pytest.approx(_dist(numpy, hx, hy * 2).sum(), rel=1e-12)
    n = tracer.stats().split_chunks - chunks
    assert n >= 8
    # the workers' evaluations (one per chunk) are added to the client's counters
    assert tracer.stats().evaluations - evals >= n + 2


def test_what_fits_the_client_runs_here(client):
    a = np.asarray(H[:10])
    with tracer.cluster(client):
        before = tracer.stats().split_chunks
        numpy.testing.assert_allclose(numpy.asarray((a * 2).sum(0)), (H[:10] * 2).sum(0))
        assert tracer.stats().split_chunks == before


def test_a_worker_killed_in_the_middle_loses_nothing(client, monkeypatch):
    """Dask reruns the dead worker's tasks; each chunk's rows travel in its task, and what
    every chunk reads whole is on every worker."""
    from tracer import budgeted
    hx, hy = H[:6000, :8], H[6000:8000, :8]
    x, y = np.asarray(hx), np.asarray(hy)
    calls, killed = [0], []
    row_block = budgeted.row_block
    pids = client.run(os.getpid)

    def kill_once(*args):  # the client cuts rows: at its 12th cut, a busy worker dies
        calls[0] += 1
        if calls[0] == 12:
            busy = [w for w, keys in client.processing().items() if keys] or list(pids)
            os.kill(pids[busy[0]], signal.SIGKILL)
            killed.append(busy[0])
        return row_block(*args)

    monkeypatch.setattr(budgeted, "row_block", kill_once)
    with tracer.cluster(client, budget="1 MiB") as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=1 << 20, split_size=1 << 18)
        got = numpy.asarray(_dist(np, x, y).min(1))
    assert killed and calls[0] > 20
    numpy.testing.assert_allclose(got, _dist(numpy, hx, hy).min(1), rtol=1e-9, atol=1e-12)
    client.wait_for_workers(2, timeout=60)


def test_a_chunk_that_cannot_fit_a_worker_raises_before_running(client):
    a = np.asarray(H)
    with tracer.cluster(client, budget="1 MiB") as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=64, split_size=16)
        with pytest.raises(tracer.MemoryBudgetError, match="smallest budget"):
            float(_dist(np, a, a).sum())


def _blocks_of(seed, shape, rows_per):
    """What a cluster's draw holds: block i drawn by the i-th child of the seed's sequence."""
    parts = []
    for i, lo in enumerate(range(0, shape[0], rows_per)):
        g = numpy.random.Generator(numpy.random.PCG64(numpy.random.SeedSequence(seed, spawn_key=(i,))))
        parts.append(g.standard_normal((min(rows_per, shape[0] - lo),) + shape[1:]))
    return numpy.concatenate(parts)


def test_big_draws_are_made_on_the_workers_and_results_can_stay_there(client):
    from tracer.dask_cluster import Remote
    with tracer.cluster(client, budget="1 MiB", remote_bytes=1 << 20,
                        block_bytes=1 << 19) as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=4 << 20, split_size=1 << 19)
        x = np.random.default_rng(7).standard_normal((40000, 8))  # 2.4 MiB: on the workers
        buf = x._var.node.attr("buf")
        assert type(buf) is Remote and len(buf.blocks) > 1
        h = _blocks_of(7, (40000, 8), buf.blocks[0][1])
        assert float((x * x).sum()) == pytest.approx((h * h).sum(), rel=1e-12)
        numpy.testing.assert_allclose(numpy.asarray((x * 2).sum(1)), (h * 2).sum(1),
                                      rtol=1e-12, atol=1e-12)
        y = tracer.evaluate(x * 2 + 1)  # over the client's budget: kept on the workers
        assert type(y._var.node.attr("buf")) is Remote
        assert float(y.max()) == (h * 2 + 1).max()
        with pytest.raises(tracer.MemoryBudgetError, match="from the cluster"):
            numpy.asarray(y)
        with tracer.memory_budget("8 MiB"):  # room enough: gathered
            numpy.testing.assert_allclose(numpy.asarray(y), h * 2 + 1, rtol=1e-15)
    with pytest.raises(RuntimeError, match="inside `with tracer.cluster"):
        float(x.sum())


def test_a_mapped_file_goes_to_the_workers_a_chunk_at_a_time(client, tmp_path):
    h = H[:16000, :64].copy()  # 8 MiB
    path = tmp_path / "x.npy"
    numpy.save(path, h)
    mm = numpy.load(path, mmap_mode="r")
    with tracer.cluster(client, budget="1 MiB") as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=2 << 20, split_size=1 << 19)
        before = tracer.stats().split_chunks
        got = float(((np.asarray(mm) - 1) ** 2).sum())
        assert tracer.stats().split_chunks - before > 4
    assert got == pytest.approx(((h - 1) ** 2).sum(), rel=1e-12)


def test_load_and_arange_make_values_of_the_cluster(client, tmp_path):
    from tracer.dask_cluster import Remote
    h = H[:16000, :16].copy()  # 2 MiB
    numpy.save(tmp_path / "h.npy", h)
    with tracer.cluster(client, budget="1 MiB", remote_bytes=1 << 20,
                        block_bytes=1 << 18) as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=2 << 20, split_size=1 << 18)
        for x in (np.load(tmp_path / "h.npy"), np.load(str(tmp_path / "h.npy"), mmap_mode="r")):
            assert type(x._var.node.attr("buf")) is Remote  # the workers read the file
            assert float(((x - 1) ** 2).sum()) == pytest.approx(((h - 1) ** 2).sum(), rel=1e-12)
            numpy.testing.assert_allclose(numpy.asarray(x.max(1)), h.max(1))
        r = np.arange(3, 3 + 7 * 400_000, 7)  # 3.2 MB of int64, made by the workers
        assert type(r._var.node.attr("buf")) is Remote
        want = numpy.arange(3, 3 + 7 * 400_000, 7)
        assert int(r.sum()) == int(want.sum()) and int((r % 5).max()) == 4
        small = np.arange(10)  # under remote_bytes: made here
        assert type(small._var.node.attr("buf")) is not Remote
