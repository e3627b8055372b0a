"""Views without copies on the cuda backend (under Numba's simulator): kernels read slices,
dynamic slices, transposes that keep the inner axis and broadcasts through strides (a strided
device view, no copy kernel), and a producer writes straight into the slice it is assigned to
(the memory plan's `into`: no temporary, no copy), unless what it reads shares the base's
storage. Differential against NumPy; structure by launch counts and the plan."""
from __future__ import annotations

from types import SimpleNamespace

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels.in_place import strided_views
from tracer.ir.config import context
from tracer.ir.node import toposort

from counters import Delta

pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim")]

_NO_HORIZONTAL = frozenset({"horizontal_fusion"})  # (small fills and producers would share one)


def _rand(shape, seed=0):
    return numpy.random.default_rng(seed).standard_normal(shape).astype(numpy.float32)


def _device(h):
    return tracer.evaluate(np.asarray(h) * 1)  # a device-resident value


def _writes(plan) -> list:
    return [n for n in toposort(plan.graph_after.roots) if n.op == "setslice"]


def _launches(f) -> int:
    f()  # plans, compiles and caches the plan
    with Delta() as d:
        got = f()
    return d, got


def test_a_strided_slice_read_is_one_launch_and_no_copy(no_host):
    h = _rand((64, 32))
    a = _device(h)
    d, got = _launches(lambda: tracer.evaluate(a[:, ::2] + 1))
    assert (d.kernels_launched, d.h2d_copies, d.host_waits) == (1, 0, 0)
    numpy.testing.assert_array_equal(numpy.asarray(got), h[:, ::2] + 1)


@pytest.mark.parametrize("case", [
    lambda m, a, b, c: a[1:13:3, 2::5] * b[::4, 1:25:4],
    lambda m, a, b, c: m.exp(a[3:, 7:]) - b[:-3, :-7],
    lambda m, a, b, c: a[::-2, ::3] + 1,  # a reversed axis: the copy kernel, still right
    lambda m, a, b, c: (c[1:, ::2, 1::3] * 2).sum(axis=1),
    lambda m, a, b, c: m.maximum(c[:, 1:4].transpose(1, 0, 2), 0) * c[0, 1:4, None],
    lambda m, a, b, c: a[::2, ::3].sum(axis=0) + b[1::2, 2::3].max(axis=0),
], ids=["steps", "offsets", "reversed", "3d-reduce", "3d-transpose", "2-readers"])
def test_strided_reads_match_numpy(no_host, case):
    ha, hb, hc = _rand((16, 30)), _rand((16, 30), 1), _rand((4, 6, 9), 2)
    got = case(np, _device(ha), _device(hb), _device(hc))
    numpy.testing.assert_allclose(numpy.asarray(got), case(numpy, ha, hb, hc), rtol=1e-6,
                                  atol=1e-6)


def test_a_slice_that_is_a_result_is_not_handed_over_strided():
    """Values returned to the user stay contiguous: a view that is a result is copied."""
    h = _rand((10, 8))
    a = _device(h)
    plan = tracer.explain(a[:, 1::2], a[:, 1::2] * 2)
    roots = plan.graph_after.roots
    order = toposort(roots)
    (view,) = [n for n in order if n.op == "slice"]
    assert strided_views(order, roots, set()) == set()
    assert strided_views(order, [roots[1]], set()) == {id(view)}
    s, t = tracer.evaluate(a[:, 1::2], a[:, 1::2] * 2)
    numpy.testing.assert_array_equal(numpy.asarray(s), h[:, 1::2])
    numpy.testing.assert_array_equal(numpy.asarray(t), h[:, 1::2] * 2)


def test_dynamic_slices_in_a_loop_read_in_place():
    h = _rand((20, 12))
    a = _device(h)
    counts = []
    for k in range(5):
        with Delta() as d:
            got = tracer.evaluate(a[k:k + 6, ::2] * (k + 1))
        counts.append(d.kernels_launched)
        numpy.testing.assert_array_equal(numpy.asarray(got), h[k:k + 6, ::2] * numpy.float32(k + 1))
    assert counts[2:] == [1, 1, 1]  # the lifted plan: its kernel, no copy


def test_producer_writes_into_the_slice_it_is_assigned_to(no_host):
    """The brief's case: fill + producer, no temporary, nothing copied."""
    h = _rand((512, 256))
    a = _device(h)

    def run():
        c = np.zeros((512, 256), np.float32)
        c[1:300] = a[1:300] * 2
        return c, tracer.explain(c)
    run()
    with Delta() as d:
        c, plan = run()
        tracer.evaluate(c)
    assert d.kernels_launched == 2
    assert plan.bytes_copied == 0 and plan.peak_bytes == 0  # was the (299, 256) temporary
    assert [w.attr("into") for w in _writes(plan)] == [True]
    want = numpy.zeros((512, 256), numpy.float32)
    want[1:300] = h[1:300] * 2
    numpy.testing.assert_array_equal(numpy.asarray(c), want)


@pytest.mark.parametrize("write", [
    lambda c, x: c.__setitem__((slice(2, None, 3), slice(1, 5, 2)), x[1::3, :2] + 1),
    lambda c, x: c.__setitem__((slice(None), 3), (x * 2).sum(axis=1)),  # a reduction, reshaped
    lambda c, x: c.__setitem__((slice(1, 5), slice(None)), x[:4] * x[4:8]),
], ids=["strided", "column-sum", "rows"])
def test_writes_into_slices_match_numpy(write):
    h = _rand((40, 6))
    x = _device(h)
    with context(disable_passes=_NO_HORIZONTAL):
        c, want = np.zeros((40, 6), np.float32), numpy.zeros((40, 6), numpy.float32)
        write(c, x)
        write(want, h)
        plan = tracer.explain(c)
        got = numpy.asarray(c)
    assert [w.attr("into") for w in _writes(plan)] == [True]
    assert plan.peak_bytes == 0
    numpy.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("write", [
    lambda c: c.__setitem__(slice(1, None), c[:-1] * 2),
    lambda c: c.__setitem__(slice(None, None, 2), c[1::2] + c[::2]),
    lambda c: c.__setitem__((slice(None), slice(0, 3)), c[:, 3:6].T.T - 1),
], ids=["shifted", "interleaved", "columns"])
def test_a_value_that_reads_the_base_keeps_its_temporary(write):
    h = _rand((8, 6))
    x = _device(h)
    with context(disable_passes=_NO_HORIZONTAL):
        c = x + 0  # made by this graph: the write runs in place
        want = h + 0
        write(c)
        write(want)
        plan = tracer.explain(c)
        got = numpy.asarray(c)
    assert [(bool(w.attr("inplace")), bool(w.attr("into"))) for w in _writes(plan)] == \
        [(True, False)]
    numpy.testing.assert_array_equal(got, want)


def test_a_read_of_the_base_between_producer_and_write_sees_the_old_values():
    h = _rand((12, 4))
    x = _device(h)
    with context(disable_passes=_NO_HORIZONTAL):
        c = x * 1
        c[0] = 5
        total = c.sum(axis=0)
        c[2:6] = x[2:6] * 3
        got_c, got_t = (numpy.asarray(v) for v in tracer.evaluate(c, total))
    want = h * 1
    want[0] = 5
    want_t = want.sum(axis=0)
    want[2:6] = h[2:6] * 3
    numpy.testing.assert_array_equal(got_c, want)
    numpy.testing.assert_allclose(got_t, want_t, rtol=1e-6)


def test_strided_specialization_sizes_its_own_launch():
    """A strided view's launch is geometry-sized from the overload compiled for its layout
    ('A'), not from the C-contiguous one an earlier launch compiled."""
    from tracer.cuda_kernels import backends
    from tracer.cuda_kernels.cuda import occupancy

    class Kernel:
        def __init__(self):
            self.overloads, self.compiles = {}, []

        def typeof_pyval(self, a):
            return a._numba_type_.layout

        def compile(self, sig):
            self.compiles.append(sig)
            regs = 128 if "A" in sig else 32
            self.overloads[sig] = SimpleNamespace(regs_per_thread=regs, shared_mem_per_block=0)

    def arg(layout):
        return SimpleNamespace(_numba_type_=SimpleNamespace(layout=layout))
    be = backends.backend_class("cuda")()
    be.geometry._lim = occupancy.Limits(sms=132)
    k = Kernel()
    assert be.geometry.usage(k, (arg("C"), arg("C")))[0] == 32
    assert be.geometry.usage(k, (arg("C"), arg("A")))[0] == 128
    assert k.compiles == [("C", "C"), ("C", "A")]
    assert be.geometry.usage(k, (arg("C"), arg("A")))[0] == 128 and len(k.compiles) == 2


def _numpy_view(m, a):
    if m.op == "slice":
        return a[tuple(slice(*s) for s in m.attr("slices"))]
    if m.op == "transpose":
        return a.transpose(m.attr("perm"))
    return numpy.broadcast_to(a, m.shape)


@pytest.mark.parametrize("make", [
    lambda G, x: G.slice_(x, ((1, 4, 2), (0, 5, 1), (2, 7, 3))),
    lambda G, x: G.transpose(x, (1, 0, 2)),
    lambda G, x: G.broadcast(G.slice_(x, ((0, 1, 1), (0, 5, 1), (0, 7, 1))), (3, 4, 5, 7)),
    lambda G, x: G.transpose(G.slice_(x, ((1, 4, 1), (1, 5, 2), (0, 7, 3))), (1, 0, 2)),
], ids=["slice", "transpose", "broadcast", "slice-then-transpose"])
def test_device_views_are_numpys_views(make):
    """The strided views the backend hands to kernels (and their chains) hold NumPy's view's
    elements, over the operand's memory."""
    from tracer import graph as G
    from tracer.cuda_kernels import backends
    h = _rand((4, 5, 7))
    x = G.leaf(h)
    n = make(G, x)
    be = backends.get("cuda")
    dev = be.from_host(h)
    chain = [n] if n.inputs[0] is x else [n.inputs[0], n]
    v = dev
    for m in chain:
        v = be.strided_view(m, [v])
    want = h
    for m in chain:
        want = _numpy_view(m, want)
    assert v.shape == want.shape and numpy.shares_memory(v._ary, dev._ary)
    numpy.testing.assert_array_equal(v.copy_to_host(), want)


@pytest.mark.nvrtc  # (the key names the NVVM in use: skipped where there is none)
def test_strided_specialization_has_its_own_disk_cache_key(tmp_path, monkeypatch):
    """The disk cache (cuda/cache.py) keys an entry by its argument types, layout included: a
    strided view's overload ('A') is stored and found apart from the C-contiguous one."""
    from numba import types

    from tracer.cuda_kernels.compiler import import_module, write_module
    from tracer.cuda_kernels.cuda.backend import CudaBackend
    monkeypatch.setenv("TRACER_CACHE_DIR", str(tmp_path))
    src = "@_jit\ndef probe_views(out, a):\n    out[0, 0] = a[0, 0]\n"
    with context(cuda_sim=False):
        mod = import_module("t_probe_views", write_module("t_probe_views", src),
                            CudaBackend().module_globals())
    disp = mod.probe_views
    c2, a2 = types.float32[:, ::1], types.float32[:, :]

    def key(sig):
        return disp._cache.key(sig, (9, 0), disp.targetoptions)[1][0]
    assert key((c2, a2)) != key((c2, c2)) and key((c2, a2)) == key((c2, a2))
