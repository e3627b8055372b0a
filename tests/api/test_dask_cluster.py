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
from tracer.ir.wire import leaves, pack, unpack
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
    # graphs of one structure (chunks of one size) list their leaves in the same order
    other = numpy.ones_like(h)
    again = make("input", (), h.shape, h.dtype, (("buf", Buffer(other)),))
    y = make("add", (make("negate", (again,), h.shape, h.dtype), leaf), h.shape, h.dtype)
    assert [b.value for b in leaves([y])] == [other, h]
    assert [b.value for b in pack([y])[1]] == [other, h]
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
    import distributed
    hx, hy = H[:1500, :8], H[5000:7000, :8]
    x, y = np.asarray(hx), np.asarray(hy)
    before = tracer.stats()
    chunks, evals = before.split_chunks, before.evaluations
    with tracer.cluster(client, budget="1 MiB") as cl, \
            distributed.get_task_stream(client) as ts:
        cl.worker_budget = cl.worker_budget._replace(limit=2 << 20, split_size=1 << 19)
        nearest = numpy.asarray(_dist(np, x, y).min(1))  # rows written back as tasks finish
        total = float(_dist(np, x, y * 2).sum())  # partials combined on the cluster
    numpy.testing.assert_allclose(nearest, _dist(numpy, hx, hy).min(1), rtol=1e-9, atol=1e-12)
    assert total == pytest.approx(_dist(numpy, hx, hy * 2).sum(), rel=1e-12)
    n = tracer.stats().split_chunks - chunks
    assert n >= 8
    # a task runs several chunks (the room beside a chunk holds their rows), fewer at the end
    tasks = [t["key"] for t in ts.data if t["key"].startswith("tracer-") and
             not t["key"].startswith(("tracer-parts-", "tracer-combine-"))]
    assert 4 <= len(tasks) <= n // 2
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


def test_a_chunk_over_its_workers_budget_raises_naming_it_and_the_cluster_goes_on(
        client, monkeypatch):
    """The client plans chunks that fit a worker; where a worker's own plan of its chunk
    does not fit its budget (here: the client's sizing made to think 500 rows fit), the
    worker's MemoryBudgetError names the chunk, reaches the user's line, and the tasks left
    are cancelled."""
    from tracer import budgeted
    h = H[:2000, :8]
    a = np.asarray(h)
    monkeypatch.setattr(budgeted, "_chunk_rows", lambda *args: (500, 0))
    with tracer.cluster(client, budget="1 MiB") as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=64, split_size=16)
        with pytest.raises(tracer.MemoryBudgetError,
                           match=r"tracer.cluster: the chunk of rows \d+:\d+ of "
                                 r"float64\[2000, 1, 8\]: .*smallest budget"):
            float(_dist(np, a, a).sum())
    monkeypatch.undo()
    assert not client.processing() or not any(client.processing().values())
    with tracer.cluster(client, budget="1 MiB") as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=2 << 20, split_size=1 << 19)
        got = float(_dist(np, a, a).sum())
    assert got == pytest.approx(_dist(numpy, h, h).sum(), rel=1e-12)


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


def _cuts(n):
    return sorted({0, 1, 2, n // 3, n - 1, n})


@pytest.mark.parametrize("dt", [numpy.float64, numpy.float32])
def test_float_arange_blocks_hold_numpys_values(dt):
    """Block i of a float arange made on a worker: NumPy's values, bit for bit (NumPy fills
    start + i * (second - first) in the dtype)."""
    from tracer.dask_cluster import _float_range
    rng = numpy.random.default_rng(3)
    cases = [(0.1, 0.7 * 10**5, 0.7), (-3.3, 5.5, 1e-4), (1e8, 1e8 + 10**5 * 0.3, 0.3),
             (2.0**24 - 1500.5, 2.0**24 + 1500, 1.0), (1, -1.0, -1e-5), (3, 10**4, 0.1)]
    for _ in range(20):
        start, step = float(rng.uniform(-1e4, 1e4)), float(rng.uniform(1e-3, 10))
        cases.append((start, start + int(rng.integers(3, 5000)) * step, step))
    for start, stop, step in cases:
        want = numpy.arange(start, stop, step, dtype=dt)
        got = numpy.concatenate([_float_range(start, step, a, z, numpy.dtype(dt))
                                 for a, z in zip(_cuts(len(want)), _cuts(len(want))[1:])])
        numpy.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dt", [numpy.float64, numpy.float32, numpy.int64, numpy.int16])
@pytest.mark.parametrize("endpoint", [True, False])
def test_linspace_blocks_hold_numpys_values(dt, endpoint):
    from tracer.dask_cluster import _linspace_rows
    rng = numpy.random.default_rng(4)
    cases = [(0, 1, 10**5), (0.0, 1e-310, 1000), (-5, 7, 12345), (3, 3, 100), (7, -200, 999)]
    for _ in range(10):
        cases.append((float(rng.uniform(-1e3, 1e3)), float(rng.uniform(-1e3, 1e3)),
                      int(rng.integers(2, 5000))))
    for start, stop, num in cases:
        want = numpy.linspace(start, stop, num, endpoint, dtype=dt)
        got = numpy.concatenate([_linspace_rows(start, stop, num, endpoint, numpy.dtype(dt), a, z)
                                 for a, z in zip(_cuts(num), _cuts(num)[1:])])
        numpy.testing.assert_array_equal(got, want)


def test_linspace_and_float_arange_are_made_on_the_workers(client):
    from tracer.dask_cluster import Remote
    with tracer.cluster(client, budget="1 MiB", remote_bytes=1 << 20,
                        block_bytes=1 << 18) as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=2 << 20, split_size=1 << 18)
        x, step = np.linspace(-2, 3.5, 300_001, retstep=True)  # 2.4 MB: blocks on the workers
        r = np.arange(0.25, 0.25 + 0.1 * 400_000, 0.1, dtype=numpy.float32)
        assert type(x._var.node.attr("buf")) is Remote and type(r._var.node.attr("buf")) is Remote
        hx, hstep = numpy.linspace(-2, 3.5, 300_001, retstep=True)
        hr = numpy.arange(0.25, 0.25 + 0.1 * 400_000, 0.1, dtype=numpy.float32)
        assert step == hstep and r.shape == hr.shape and r.dtype == hr.dtype
        assert float(x.sum()) == pytest.approx(hx.sum(), rel=1e-12)
        assert float(np.abs(x - 0.3).min()) == numpy.abs(hx - 0.3).min()  # every value
        assert float(np.abs(r - 77.7).min()) == numpy.abs(hr - 77.7).min()
        with tracer.memory_budget("8 MiB"):  # gathered: NumPy's values
            numpy.testing.assert_array_equal(numpy.asarray(x), hx)
            numpy.testing.assert_array_equal(numpy.asarray(r), hr)
        small = np.linspace(0, 1, 11)  # under remote_bytes: made here
        assert type(small._var.node.attr("buf")) is not Remote


def test_slices_of_a_value_of_the_cluster_split_by_their_rows(client):
    """x[a:b] of a value held on the cluster is a split source of its own (its rows read from
    the blocks that cover them), also beside another slice of the same value."""
    with tracer.cluster(client, budget="1 MiB", remote_bytes=1 << 20,
                        block_bytes=1 << 18) as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=2 << 20, split_size=1 << 18)
        x = np.random.default_rng(7).standard_normal((40000, 8))
        h = _blocks_of(7, (40000, 8), x._var.node.attr("buf").blocks[0][1])
        before = tracer.stats().split_chunks
        assert float((x[10000:30000] ** 2).sum()) == pytest.approx((h[10000:30000] ** 2).sum(),
                                                                    rel=1e-12)
        assert tracer.stats().split_chunks - before > 1
        numpy.testing.assert_array_equal(numpy.asarray((x[100:39000] - x[:38900]).max(1)),
                                         (h[100:39000] - h[:38900]).max(1))
        numpy.testing.assert_array_equal(numpy.asarray((x[::3, 2:] * 2).sum(1)),
                                         (h[::3, 2:] * 2).sum(1))
        numpy.testing.assert_array_equal(numpy.asarray((x[::-1][5:] + 1).min(0)),
                                         (h[::-1][5:] + 1).min(0))


def test_a_view_of_a_value_of_the_cluster_brings_only_its_elements(client, monkeypatch):
    """numpy.asarray of a view (x[:10], x[5], x[:, 0], x.T[2, ::7], x.T.reshape(-1)[3:40])
    of a value held on the cluster, drawn or kept there by an evaluation: each block it reads
    sends only the view's elements; the blocks it does not read run nothing."""
    import distributed
    from distributed.utils import key_split
    from tracer import dask_cluster
    got = []
    gather = client.gather

    def counted(futures, *args, **kwargs):
        parts = gather(futures, *args, **kwargs)
        got.append([p.nbytes for p in parts])
        return parts

    with tracer.cluster(client, budget="1 MiB", remote_bytes=1 << 20,
                        block_bytes=1 << 18) as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=2 << 20, split_size=1 << 18)
        x = np.random.default_rng(7).standard_normal((40000, 8))  # 2.4 MiB: on the workers
        h = _blocks_of(7, (40000, 8), x._var.node.attr("buf").blocks[0][1])
        row_of = numpy.broadcast_to(numpy.arange(40000)[:, None], (40000, 8))
        y = tracer.evaluate(x * 2 + 1)  # kept on the workers
        monkeypatch.setattr(client, "gather", counted)
        for a, ha in ((x, h), (y, h * 2 + 1)):
            ends = [hi for _, hi, _ in a._var.node.attr("buf").blocks]
            assert len(ends) > 4
            for view in (lambda t: t[:10], lambda t: t[5], lambda t: t[-5:, 2],
                         lambda t: t[:, 0], lambda t: t.T[2, ::7], lambda t: t[39990:20:-997],
                         lambda t: t.T.reshape(-1)[3:40],  # (NumPy's reshape copies)
                         lambda t: t[7:9].view(numpy.int64)):
                got.clear()
                want = view(ha)
                numpy.testing.assert_array_equal(numpy.asarray(view(a)), want)
                # the elements asked for, no more, from the blocks that hold them
                assert sum(got[0]) == want.nbytes
                read = {numpy.searchsorted(ends, r, side="right") for r in
                        numpy.unique(view(row_of))}
                assert len(got[0]) == len(read)
            got.clear()
            assert float(numpy.asarray(a[:10]).sum()) == pytest.approx(ha[:10].sum())
            assert len(got[0]) == 1
            got.clear()
            assert float(a[5, 3]) == ha[5, 3] and sum(got[0]) == 8  # (recorded, not a view)
        got.clear()
        with pytest.raises(tracer.MemoryBudgetError, match="from the cluster"):
            numpy.asarray(x[:30000])  # 1.8 MiB: over the client's budget
        assert not got
        # the elements' places worked out a slab at a time (here rows in falling order)
        monkeypatch.setattr(dask_cluster, "SLAB", 1000)
        numpy.testing.assert_array_equal(numpy.asarray(x.T[::-1, ::-3]), h.T[::-1, ::-3])
        assert len(got) == 8 and sum(map(sum, got)) == h.T[::-1, ::-3].nbytes
        # a reduction of a slice: the blocks it covers are made (two), its chunks run
        with distributed.get_task_stream(client) as ts:
            assert float(x[5000:9000].max()) == h[5000:9000].max()
        made = [key_split(t["key"]) for t in ts.data]
        assert made.count("Recipe") == 2 and "tracer" in made


def test_results_split_on_another_axis_stay_on_the_cluster(client):
    """A result whose rows follow the split source's along another axis (e.g. (x * 2 + 1).T
    as computed, not viewed) is kept on the cluster in blocks along that axis; slices,
    reductions and a gather of it give NumPy's answers."""
    from tracer.dask_cluster import Remote
    with tracer.cluster(client, budget="1 MiB", remote_bytes=1 << 20,
                        block_bytes=1 << 18) as cl:
        cl.worker_budget = cl.worker_budget._replace(limit=2 << 20, split_size=1 << 18)
        x = np.random.default_rng(7).standard_normal((40000, 8))
        h = _blocks_of(7, (40000, 8), x._var.node.attr("buf").blocks[0][1])
        for f in (lambda t: np.exp(t).T[::-1] + 1,
                  lambda t: np.sin(np.moveaxis(t.reshape(40000, 2, 4), 0, 1)) * 3):
            y, want = tracer.evaluate(f(x)), f(h)
            buf = y._var.node.attr("buf")
            assert type(buf) is Remote and not y._view.steps and len(buf.blocks) > 1
            assert buf.value.shape == want.shape and buf.stand.shape[0] == 40000
            numpy.testing.assert_allclose(numpy.asarray(y[..., 7:30]), want[..., 7:30],
                                          rtol=1e-14)
            numpy.testing.assert_allclose(numpy.asarray(y.sum(-1)), want.sum(-1), rtol=1e-12)
            numpy.testing.assert_allclose(numpy.asarray((y[::-1] * 2).max(0).max(-1)),
                                          (want[::-1] * 2).max(0).max(-1), rtol=1e-14)
            with tracer.memory_budget("8 MiB"):
                numpy.testing.assert_allclose(numpy.asarray(y), want, rtol=1e-14)


class _Worker:
    """What dask_workers.room reads of a Dask worker: its memory limit, and dask-cuda's device limit (its
    DeviceHostFile's device buffer's `n`) where `device` is given."""

    def __init__(self, memory_limit, device=None):
        self.memory_manager = type("M", (), {"memory_limit": memory_limit})()
        if device is not None:
            self.data = type("D", (), {"device_buffer": type("B", (), {"n": device})()})()


def test_a_cuda_workers_chunks_are_sized_from_its_device(monkeypatch):
    """A cuda worker's room: DEVICE_FRACTION of its device's memory (of dask-cuda's
    device_memory_limit where less), less what is in use there, and no more than its host
    room; a cpu worker's: its host room only; a device of unknown size (the simulator's):
    the host room. The backend: the one asked for, else the worker's own config's."""
    from tracer import dask_workers as dw
    from tracer.ir.config import context
    gib = 1 << 30
    monkeypatch.setattr(dw, "device_memory", lambda: (15 * gib, 16 * gib, 0))
    import psutil
    be, host = dw.room(0.45, "cpu", _Worker(64 * gib))
    held = psutil.Process().memory_info().rss + dw.COMPILE_BYTES  # (this test process's)
    assert be == "cpu" and abs(host - (64 * gib * 0.45 - held)) < 64 << 20
    assert dw.room(0.45, "cuda", _Worker(64 * gib)) == \
        ("cuda", int(16 * gib * dw.DEVICE_FRACTION) - gib)  # the device's whole memory
    assert dw.room(0.45, "cuda", _Worker(64 * gib, device=8 * gib)) == \
        ("cuda", int(8 * gib * dw.DEVICE_FRACTION) - gib)  # dask-cuda's limit
    # 13 GiB in use besides tracer's idle GiB: the floor, 5% of the limit
    monkeypatch.setattr(dw, "device_memory", lambda: (2 * gib, 16 * gib, gib))
    assert dw.room(0.45, "cuda", _Worker(64 * gib, device=8 * gib))[1] == int(8 * gib * 0.05)

    def near(a, b):  # (the host room reads this process's memory, which moves a little)
        return abs(a - b) < 32 << 20
    monkeypatch.setattr(dw, "device_memory", lambda: (15 * gib, 16 * gib, 0))
    assert near(dw.room(0.45, "cuda", _Worker(2 * gib))[1], dw.room(0.45, "cpu",
                                                                      _Worker(2 * gib))[1])
    monkeypatch.setattr(dw, "device_memory", lambda: (float("inf"), float("inf"), 0))
    assert near(dw.room(0.45, "cuda", _Worker(64 * gib))[1], host)
    with context(backend="cuda"):
        assert dw.room(0.45, None, _Worker(64 * gib))[0] == "cuda"
        assert dw.room(0.45, "cpu", _Worker(64 * gib))[0] == "cpu"

    class Client:  # a cluster whose workers disagree
        def run(self, fn, *args):
            return {"a": ("cpu", 1 << 20), "b": ("cuda", 2 << 20)}
    with pytest.raises(ValueError, match=r"different backends \(cpu, cuda\): pass backend="):
        dw.budget(Client(), None)


def _simulate_cuda(on: bool) -> None:
    from tracer.ir.config import CONFIG
    CONFIG.cuda_sim = on


def test_the_workers_run_the_backend_asked_for(client):
    """backend="cuda": each chunk task runs on its worker's cuda backend (here under Numba's
    simulator: a worker's uploads are added to this process's counters), with NumPy's answers;
    backend="cpu": none."""
    h = H[:3000, :4]
    x = np.asarray(h)
    client.run(_simulate_cuda, True)
    try:
        for be in ("cuda", "cpu"):
            with tracer.cluster(client, budget="16 KiB", backend=be) as cl:
                assert cl.worker_backend == be
                cl.worker_budget = cl.worker_budget._replace(limit=32 << 10, split_size=8 << 10)
                before = tracer.stats()
                h2d, chunks = before.h2d_bytes, before.split_chunks
                y = tracer.evaluate(np.sin(x) * 2)  # 96 KB: kept on the workers
                assert tracer.stats().split_chunks - chunks > 1
                assert (tracer.stats().h2d_bytes - h2d >= h.nbytes) == (be == "cuda")
                with tracer.memory_budget("1 MiB"):
                    numpy.testing.assert_allclose(numpy.asarray(y), numpy.sin(h) * 2,
                                                  rtol=1e-14)
    finally:
        client.run(_simulate_cuda, False)


def test_a_view_of_a_value_of_the_cluster_reads_and_splits_along_its_rows():
    """A view of a value held on the cluster reads the rows of the blocks it covers (what a
    worker holds for it), and splits along the axes that walk those rows (x's first, x.T's
    last), those whose one index spans the least first."""
    from tracer.dask_cluster import Remote, _row_axes, read_bytes
    r = Remote((40000, 8), numpy.float64, [], None)
    x = r.value
    assert read_bytes(x) == x.nbytes and read_bytes(x[10:20]) == 10 * 64
    assert read_bytes(x[:, 0]) == x.nbytes and read_bytes(x[::4, 1:3]) == (39997 - 0) * 64
    assert read_bytes(numpy.ones(3)) == 24
    t = Remote((8, 40000), numpy.float64, [], None, axis=1).value  # blocks of its columns
    assert t.shape == (8, 40000) and read_bytes(t[:, 5:9]) == 4 * 64
    for view, axes in ((x, [0]), (x.T, [1]), (x[:, 0], [0]), (x.reshape(-1), [0]),
                       (x.reshape(20000, 16), [0]), (x[None], [1]), (t, [1]), (t[::-1, ::2], [1]),
                       (numpy.moveaxis(x.reshape(40000, 2, 4), 0, 2), [2]),
                       (numpy.broadcast_to(x[:1], (5, 8)), [1]), (x[5], [0])):
        assert _row_axes(view) == axes, view.shape


def test_distances_of_values_drawn_on_the_cluster_keep_their_gemm_form(client):
    """x[:, None, :] and y[None] of values held on the cluster stay reshapes in the graph (not
    leaves of their own), so the optimizer still sees the min-distance's GEMM form: a few
    chunk tasks of |x|^2 + |y|^2 - 2 x.y, not hundreds of the N x M x D difference."""
    import distributed
    with tracer.cluster(client, budget="1 MiB", remote_bytes=0) as cl, \
            distributed.get_task_stream(client) as ts:
        cl.worker_budget = cl.worker_budget._replace(limit=8 << 20, split_size=2 << 20)
        rng = np.random.default_rng(0)
        x, y = rng.standard_normal((3000, 16)), rng.standard_normal((2000, 16))
        got = numpy.asarray(_dist(np, x, y).min(1))
        hx, hy = numpy.asarray(x), numpy.asarray(y)
    numpy.testing.assert_allclose(got, _dist(numpy, hx, hy).min(1), rtol=1e-9, atol=1e-9)
    kernels = {t["key"].rsplit("_", 1)[0] for t in ts.data if t["key"].startswith("tracer-")}
    assert kernels and not any("sub" in k for k in kernels), kernels
