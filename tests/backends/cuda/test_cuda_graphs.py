"""CUDA-graph replay of tracer.jit (cuda/graphs.py, issue 21 item 8). No GPU here: a fake
driver module records the capture and graph calls, and the decisions are checked: a clean
warm replay is captured at the next call with the same pointers, later calls launch the graph
(no Python-side launches) and copy its results into new blocks, new pointers run plainly and
are captured anew, any failure falls back to plain launches for good (counted), and the blocks
a graph owns never go back to the pool while it lives."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels import executor
from tracer.cuda_kernels.cuda import graphs
from tracer.cuda_kernels.cuda.graphs import GraphReplay
from tracer.cuda_kernels.cuda.memory import DevicePool, interface
from tracer.ir.node import Buffer
from tracer.ir.stats import STATS

pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim")]


class FakeDriver:
    """cuda.bindings.driver's graph calls, recorded; a name in `fail` returns an error."""

    class CUstream(int):
        pass

    class CUstreamCaptureMode:
        CU_STREAM_CAPTURE_MODE_RELAXED = 2

    def __init__(self, fail=()):
        self.calls, self.fail, self.n = [], set(fail), 0

    def _r(self, name, *vals):
        self.calls.append(name)
        return (1 if name in self.fail else 0,) + vals

    def cuStreamBeginCapture(self, h, mode):
        return self._r("begin")

    def cuStreamEndCapture(self, h):
        self.n += 1
        return self._r("end", f"graph{self.n}")

    def cuGraphInstantiate(self, g, flags):
        return self._r("instantiate", f"exec-{g}")

    def cuGraphLaunch(self, e, h):
        return self._r("launch")

    def cuGraphExecDestroy(self, e):
        return self._r("destroy")

    def cuGraphDestroy(self, g):
        return (0,)


def _addr(a) -> int:
    return interface(a, None)["data"][0]


class _Backend:
    """What GraphReplay uses of the cuda backend, over the simulator's memory."""

    def __init__(self):
        from numba.cuda import simulator
        self.pool = DevicePool(lambda: simulator)
        self.empty = self.pool.empty
        self._checks = []

    def stream(self):
        return 0


class _Plain:
    """A replay's plain run: an intermediate (released) and a result, two launches."""

    def __init__(self, be, h2d=0):
        self.be, self.h2d, self.runs, self.tmp = be, h2d, 0, []

    def __call__(self):
        self.runs += 1
        tmp = self.be.empty((40,), numpy.float32)
        self.tmp.append(_addr(tmp))
        out = self.be.empty((10,), numpy.float32)
        out.copy_to_device(numpy.arange(10, dtype=numpy.float32) + self.runs)
        self.be.pool.release(tmp)
        STATS.kernels_launched += 2
        STATS.h2d_copies += self.h2d
        return [Buffer(out)]


def _arg(n=4):
    from numba.cuda import simulator
    return [Buffer(simulator.to_device(numpy.zeros(n, numpy.float32)))]


def test_capture_once_then_launch_the_graph_while_pointers_stay():
    be, drv = _Backend(), FakeDriver()
    g, plain, arg = GraphReplay(be, drv), _Plain(be), _arg()
    tracer.reset_stats()
    g.run(arg, plain)  # warm: plain, clean
    assert (plain.runs, drv.calls) == (1, [])
    got = g.run(arg, plain)  # captured (the fake records, the simulator ran it) and launched
    assert drv.calls == ["begin", "end", "instantiate", "launch"] and plain.runs == 2
    owned = next(iter(g.graphs.values())).outs[0]
    assert _addr(got[0].value) != _addr(owned)  # a copy: the next launch writes the graph's own
    numpy.testing.assert_array_equal(got[0].value.copy_to_host(), numpy.arange(10) + 2)
    # the captured intermediate never goes back to the pool while the graph lives
    assert _addr(be.empty((40,), numpy.float32)) != plain.tmp[-1]
    again = g.run(arg, plain)
    assert plain.runs == 2 and drv.calls[-1] == "launch"  # no Python-side launches
    assert _addr(again[0].value) not in (_addr(got[0].value), _addr(owned))
    s = tracer.stats()
    assert (s.graph_launches, s.graph_fallbacks, s.kernels_launched) == (2, 0, 6)


def test_new_pointers_run_plainly_then_get_their_own_graph():
    be, drv = _Backend(), FakeDriver()
    g, plain = GraphReplay(be, drv), _Plain(be)
    a, b = _arg(), _arg(6)
    for _ in range(3):
        g.run(a, plain)
    drv.calls.clear()
    g.run(b, plain)  # other pointers: plain, warm for b
    assert drv.calls == [] and plain.runs == 3
    g.run(b, plain)
    assert drv.calls == ["begin", "end", "instantiate", "launch"]
    g.run(a, plain)  # a's graph is kept: a loop `x = f(x)` passes a few blocks in turn
    assert drv.calls[-1] == "launch" and plain.runs == 4
    assert tracer.stats().graph_fallbacks == 0


def test_the_least_recently_launched_graph_goes_and_its_blocks_come_back():
    be, drv = _Backend(), FakeDriver()
    g, plain = GraphReplay(be, drv), _Plain(be)
    args = [_arg(n) for n in range(1, graphs.MAX_GRAPHS + 2)]
    for a in args[:-1]:
        g.run(a, plain)
        g.run(a, plain)  # captured
    first = plain.tmp[1]  # the first graph's intermediate, held
    assert len(g.graphs) == graphs.MAX_GRAPHS and "destroy" not in drv.calls
    g.run(args[-1], plain)
    g.run(args[-1], plain)
    assert drv.calls.count("destroy") == 1 and len(g.graphs) == graphs.MAX_GRAPHS
    # (the new capture's run, or a later hand-out, takes the first graph's block again)
    assert first in plain.tmp[-1:] + [_addr(be.empty((40,), numpy.float32)) for _ in range(3)]
    drv.calls.clear()
    g.run(args[0], plain)  # its graph is gone: warm again
    assert drv.calls == []


@pytest.mark.parametrize("fail", ["begin", "end", "instantiate", "launch"])
def test_a_driver_failure_falls_back_to_plain_launches_for_good(fail):
    be, drv = _Backend(), FakeDriver(fail={fail})
    g, plain, arg = GraphReplay(be, drv), _Plain(be), _arg()
    tracer.reset_stats()
    g.run(arg, plain)
    got = g.run(arg, plain)
    # a failed capture recorded without running: the replay runs plainly after it
    runs = 2 if fail == "begin" else 3
    assert plain.runs == runs and not g.graphs
    numpy.testing.assert_array_equal(got[0].value.copy_to_host(), numpy.arange(10) + runs)
    n = len(drv.calls)
    g.run(arg, plain)
    assert len(drv.calls) == n and plain.runs == runs + 1
    assert (tracer.stats().graph_fallbacks, tracer.stats().graph_launches) == (1, 0)


def test_an_unclean_replay_is_never_captured():
    """A replay that uploads (a staging buffer's contents) cannot be replayed by a graph."""
    be, drv = _Backend(), FakeDriver()
    g, plain, arg = GraphReplay(be, drv), _Plain(be, h2d=1), _arg()
    for _ in range(3):
        g.run(arg, plain)
    assert drv.calls == [] and plain.runs == 3
    host = [Buffer(numpy.zeros(40, numpy.float32))]  # a host argument: uploaded at each run
    clean = _Plain(be)
    for _ in range(3):
        g.run(host, clean)
    assert drv.calls == [] and clean.runs == 3


def test_jit_replays_launch_the_graph_without_running_the_plan(monkeypatch):
    """Wired through tracer.jit on the simulator with the fake driver (whose graph launch does
    nothing: the simulator ran the captured launches, and the inputs did not change)."""
    drv = FakeDriver()
    monkeypatch.setattr(graphs, "usable", lambda: drv)
    monkeypatch.setattr(GraphReplay, "_stream", lambda self: 0)
    h = [numpy.linspace(0, 1, 12, dtype=numpy.float32) + k for k in range(4)]
    xs = [tracer.evaluate(np.asarray(v) * 1) for v in h]  # device-resident arguments
    other = [tracer.evaluate(np.asarray(v) * 2) for v in h]
    tracer.reset_stats()
    runs = []
    real = executor.run
    monkeypatch.setattr(executor, "run", lambda *a, **k: runs.append(1) or real(*a, **k))

    def _w1(m, a, b, c, d):
        return a * b + c * m.sin(d) - m.exp(-a * a)
    w1 = tracer.jit(lambda *a: _w1(np, *a))
    want = _w1(numpy, *h)
    got = [numpy.asarray(w1(*xs)) for _ in range(5)]
    # the first call traces, plans and runs plainly (its run is the warm one); the second
    # captures
    assert drv.calls == ["begin", "end", "instantiate"] + ["launch"] * 4
    assert len(runs) == 2
    for g in got:
        numpy.testing.assert_allclose(g, want, rtol=2e-6, atol=1e-6)
    numpy.testing.assert_allclose(numpy.asarray(w1(*other)), _w1(numpy, *(v * 2 for v in h)),
                                  rtol=2e-6, atol=1e-6)
    assert len(runs) == 3 and drv.calls[-1] == "launch" and tracer.stats().graph_fallbacks == 0


def test_no_graphs_under_the_simulator():
    assert graphs.usable() is None


def test_small_host_values_key_the_graph_by_value():
    """A plan parameter bound as a host scalar: the graph holds it (a kernel argument), so
    another value is other pointers."""
    be, drv = _Backend(), FakeDriver()
    g, plain = GraphReplay(be, drv), _Plain(be)
    arg = _arg()
    one, two = arg + [Buffer(numpy.float32(1))], arg + [Buffer(numpy.float32(2))]
    for _ in range(2):
        g.run(one, plain)
    assert drv.calls == ["begin", "end", "instantiate", "launch"] and plain.runs == 2
    g.run(two, plain)  # another value: runs plainly (warm for it)
    assert len(drv.calls) == 4 and plain.runs == 3
