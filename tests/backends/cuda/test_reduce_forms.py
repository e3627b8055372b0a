"""The reduction forms of cuda/reduce.py under the simulator: a thread per output in NumPy's
order (float sums bitwise NumPy's), a warp per output (shuffles: cuda/sim.py gives the
simulator its own), and G blocks per output finished by the last block (one launch, the same
bits every run, counters back at 0). The registry sweep (test_sim_sweep.py) runs the thread
form on every reduction and dtype; here the warp and block forms are forced on the same kinds
of reductions, and the choice between the forms is pinned."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from counters import Delta
from tracer.cuda_kernels import backends
from tracer.cuda_kernels.cuda import reduce as forms
from tracer.cuda_kernels.planning import run_axes

pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim")]



@pytest.fixture
def block(monkeypatch):
    monkeypatch.setattr(forms, "FORCE", "block")


@pytest.fixture(params=["block", "warp"])
def form(request, monkeypatch):
    monkeypatch.setattr(forms, "FORCE", request.param)


def _rand(shape, dtype, seed=0):
    rng = numpy.random.default_rng(seed)
    if numpy.dtype(dtype).kind == "b":
        return rng.random(shape) > 0.6
    if numpy.dtype(dtype).kind in "iu":
        return rng.integers(0, 9, shape).astype(dtype)
    return (rng.standard_normal(shape) * 4).astype(dtype)


CASES = [((37,), None), ((5, 9), 0), ((5, 9), 1), ((5, 9), None), ((3, 4, 5), (0, 2)),
         ((3, 4, 5), 1), ((1, 6, 1), 1)]


@pytest.mark.parametrize("fn", ["sum", "prod", "max", "min", "argmax", "argmin", "any", "all",
                                "mean"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "bool"])
def test_block_and_warp_forms_give_numpys_answers(form, fn, dtype):
    for shape, axis in CASES:
        if fn.startswith("arg") and isinstance(axis, tuple):
            continue
        h = _rand(shape, dtype, seed=len(shape))
        if fn == "prod" and h.dtype.kind == "f":
            h = (h / 8).astype(dtype)  # products near 1: no overflow to argue about
        want = numpy.asarray(getattr(numpy, fn)(h, axis=axis))
        got = numpy.asarray(getattr(np, fn)(np.asarray(h), axis=axis))
        where = f"{fn}(axis={axis}) of {dtype}{list(shape)}"
        assert (got.dtype, got.shape) == (want.dtype, want.shape), where
        if want.dtype.kind == "f":  # a tree's order: equal up to rounding
            numpy.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=where)
        else:
            numpy.testing.assert_array_equal(got, want, err_msg=where)


def test_block_form_is_one_launch_the_same_bits_and_leaves_counters_at_zero(block):
    be = backends.get("cuda")
    h = _rand((41,), "float64", seed=3) * 1e3
    a = tracer.evaluate(np.asarray(h) * 1)
    tracer.evaluate((a * a).sum())  # compile and cache the plan
    with Delta() as run:
        first = numpy.asarray(tracer.evaluate((a * a).sum()))
    assert run.kernels_launched == 1
    assert be.reduce_split(1, 41) >= 2  # several blocks, the last one finishes
    again = numpy.asarray((a * a).sum())
    assert first.tobytes() == again.tobytes()
    assert float(first) == pytest.approx(float((h * h).sum()), rel=1e-12)
    tickets = be.to_host(be._tickets_of["sim"])
    assert not tickets.any()


def _bits(x):
    x = numpy.asarray(x)
    return x.dtype, x.shape, x.tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_thread_form_sums_are_numpys_to_the_bit(dtype):
    rng = numpy.random.default_rng(7)
    for shape, axis in [((100,), None), ((6, 24), 0), ((6, 24), 1), ((4, 30), None),
                        ((9, 1), 0), ((3, 5, 7), (0, 2)), ((3, 5, 7), 1), ((2, 3, 40), (1, 2)),
                        ((128,), None), ((4, 13), -1)]:
        h = (rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 12, shape)).astype(dtype)
        assert _bits(np.sum(np.asarray(h), axis=axis)) == _bits(numpy.sum(h, axis=axis)), \
            (shape, axis)
        assert _bits(np.mean(np.asarray(h), axis=axis)) == _bits(numpy.mean(h, axis=axis)), \
            (shape, axis)


def test_thread_form_overflows_where_numpy_does():
    big = numpy.finfo(numpy.float64).max
    for row in ([big, big, -numpy.inf], [big] * 9 + [-numpy.inf], [-big, big] * 6 + [big]):
        h = numpy.array(row)
        with numpy.errstate(all="ignore"):
            want = numpy.sum(h)
        assert _bits(np.sum(np.asarray(h))) == _bits(want) or \
            (numpy.isnan(want) and numpy.isnan(float(np.sum(np.asarray(h))))), row


def test_row_sums_are_one_launch():
    x = tracer.evaluate(np.asarray(_rand((12, 64), "float32")) * 1)
    tracer.evaluate(x.sum(-1))
    with Delta() as run:
        tracer.evaluate(x.sum(-1))
    assert run.kernels_launched == 1


def test_form_by_shape_on_a_device():
    """Off the simulator: short runs and many outputs take a thread each; long float-sum runs
    (past numpy's 128-value leaf) and few long outputs take blocks."""
    red = lambda shape, axis: np.sum(np.zeros(shape, np.float32), axis=axis)._node  # noqa: E731
    mx = lambda shape, axis: np.max(np.zeros(shape, np.float32), axis=axis)._node  # noqa: E731
    pick = lambda n, shape: forms.strategy(n, shape, sim=False)  # noqa: E731
    assert pick(red((10 ** 6, 64), -1), (10 ** 6, 64)) == "thread"     # row sums
    assert pick(red((4096, 4096, 3), -1), (4096, 4096, 3)) == "thread"  # min-distance, D=3
    assert pick(red((10 ** 6, 3), 0), (10 ** 6, 3)) == "block"         # 3 long columns
    assert pick(red((10 ** 7,), None), (10 ** 7,)) == "block"          # a full sum
    assert pick(red((10 ** 5, 256), -1), (10 ** 5, 256)) == "warp"     # past one leaf
    assert pick(mx((10 ** 5, 256), -1), (10 ** 5, 256)) == "thread"    # max: any order
    assert pick(red((5, 40), 1), (5, 40)) == "thread"
    assert pick(red((100, 4096), 1), (100, 4096)) == "warp"            # medium rows
    assert pick(red((4, 4096), 1), (4, 4096)) == "block"               # few of them


def test_run_axes_are_numpys_inner_loop():
    assert run_axes((6, 24), (1,)) == [1]
    assert run_axes((6, 24), (0,)) == []
    assert run_axes((9, 1), (0,)) == [0]      # size-1 axes are dropped
    assert run_axes((3, 5, 7), (0, 2)) == [2]
    assert run_axes((2, 3, 4), (0, 1, 2)) == [0, 1, 2]


def test_min_distance_at_d3_is_one_kernel_without_an_n_by_m_buffer():
    hx, hy = _rand((20, 3), "float32", seed=1), _rand((16, 3), "float32", seed=2)
    x, y = (tracer.evaluate(np.asarray(h) * 1) for h in (hx, hy))

    def md(m, a, b):
        return ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1).min(1)

    plan = tracer.explain(md(np, x, y))
    assert len(plan.kernels) == 1 and plan.kernels[0].kind == "reduce"  # the sum is inline
    tracer.evaluate(md(np, x, y))
    with Delta() as run:
        got = tracer.evaluate(md(np, x, y))
    assert run.kernels_launched == 1
    assert _bits(got) == _bits(md(numpy, hx, hy))
