"""A second stream for the budget's uploads (issue 21 item 6; memory.Uploads, DevicePool.take):
under the simulator streams and events do nothing, so these tests record which events are
recorded and waited on, on which stream, around each upload and launch, and check the order a
GPU would need: the compute stream waits on each upload's event before the next launch, and
an upload into a reused pool block waits on the fence of its last use."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels import backends
from tracer.cuda_kernels.cuda.memory import DevicePool, interface

pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim")]


class _Event:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def record(self, stream):
        self.log.append(("record", self.name, self.log.stream_name(stream)))

    def wait(self, stream):
        self.log.append(("wait", self.name, self.log.stream_name(stream)))

    def synchronize(self):
        pass


class _Log(list):
    def __init__(self, be):
        super().__init__()
        self.be, self.n = be, 0

    def stream_name(self, s):
        return "compute" if s is self.be.stream() else \
            "upload" if s is self.be._uploads.stream else "other"

    def event(self):
        self.n += 1
        return _Event(self, self.n)


@pytest.fixture
def recorded(monkeypatch):
    be = backends.get("cuda")
    log = _Log(be)
    monkeypatch.setattr(be, "_event", log.event)  # (Uploads calls it through the backend)
    upload = be._staging.upload

    def logged_upload(dev, host, stream, after=None):
        log.append(("upload", interface(dev, None)["data"][0], log.stream_name(stream),
                    after.name if after is not None else None))
        upload(dev, host, stream, after)
    monkeypatch.setattr(be._staging, "upload", logged_upload)
    launch = be.launch

    def logged_launch(*args, **kw):
        log.append(("launch",))
        return launch(*args, **kw)
    monkeypatch.setattr(be, "launch", logged_launch)
    return log


def _knn(m, x, y):
    """Both read the N x M distances, which the budget splits."""
    d = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    return d.min(1), d.argmin(1)


def test_budget_chunks_upload_on_their_own_stream_and_kernels_wait_for_them(recorded):
    rng = numpy.random.default_rng(5)
    x, y = (rng.standard_normal(s).astype(numpy.float32) for s in ((12, 3), (10, 3)))
    got = _knn(np, np.asarray(x), np.asarray(y))
    tracer.reset_stats()
    with tracer.memory_budget(256):  # (room for idle blocks: uploads reuse some)
        tracer.evaluate(*got)
    assert tracer.stats().split_chunks > 1
    log = list(recorded)
    ups = [k for k, e in enumerate(log) if e[0] == "upload" and e[2] == "upload"]
    assert len(ups) >= tracer.stats().split_chunks  # each chunk's rows of x went up on it
    recorded_on = {e[1]: (k, e[2]) for k, e in enumerate(log) if e[0] == "record"}
    for k in ups:
        # the upload's event, recorded on the upload stream, is waited on by the compute
        # stream before any launch that follows
        rec = next(j for j in range(k + 1, len(log)) if log[j][0] == "record")
        assert log[rec][2] == "upload"
        wait = next(j for j in range(rec + 1, len(log)) if log[j][:2] == ("wait", log[rec][1]))
        assert log[wait][2] == "compute"
        assert all(e[0] != "launch" for e in log[k:wait])
        # an upload into a block the pool had handed out first waits on the fence of the
        # block's last use, recorded on the compute stream
        fence = log[k][3]
        if fence is not None:
            assert recorded_on[fence][1] == "compute" and recorded_on[fence][0] < k
            assert log[k + 1] == ("wait", fence, "upload")
    assert any(log[k][3] is not None for k in ups)  # (blocks the pool took back were reused)
    want = _knn(numpy, x.astype(float), y.astype(float))
    numpy.testing.assert_allclose(numpy.asarray(got[0]), want[0], rtol=1e-5)
    numpy.testing.assert_array_equal(numpy.asarray(got[1]), want[1])


def test_without_a_budget_uploads_stay_on_the_compute_stream(recorded):
    x = numpy.arange(8, dtype=numpy.float32)
    numpy.testing.assert_array_equal(numpy.asarray(np.asarray(x) * 2), x * 2)
    ups = [e for e in recorded if e[0] == "upload"]
    assert ups and all(e[2] == "compute" and e[3] is None for e in ups)
    assert not [e for e in recorded if e[0] == "wait"]


def test_pool_fences_blocks_and_hands_out_the_one_idle_longest():
    from numba.cuda import simulator
    log = []
    fences = iter(range(1, 100))

    def fence():
        log.append(_Event(None, next(fences)))
        return log[-1]
    pool = DevicePool(lambda: simulator)
    idle = pool.empty((40,), numpy.float32)
    pool.release(idle)  # idle before the fences begin: gets the starting fence
    pool.fences(True, fence)
    got, f = pool.take((40,), numpy.float32)
    assert f is log[0]
    a = pool.empty((40,), numpy.float32)
    pool.release(got)
    pool.release(a)  # without fences the pool would hand a out next (the last given back)
    again, f = pool.take((40,), numpy.float32)
    assert f is log[1]  # got's fence: recorded first, so the first to pass
    assert interface(again, None)["data"][0] == interface(got, None)["data"][0]
    pool.fences(False)
    _, f = pool.take((40,), numpy.float32)
    assert f is None  # no second stream: the compute stream's order covers reuse
