"""The cuda backend under Numba's CUDA simulator (no GPU needed), through the public API.

The simulator costs ~0.3 ms per simulated thread and more per `syncthreads`, so inputs are tiny
(5..40 elements) and reductions have few outputs. Tests that prove an op stays on the device make
the host interpreter raise (`cuda_kernels.cuda.eval_node`, used by the host round trip).
"""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels import backends
from tracer.ir import Buffer
from tracer.ir.config import context
from tracer.ir.stats import STATS

# the backend's kernels are the subject (on the simulator)
pytestmark = [pytest.mark.lazy, pytest.mark.usefixtures("cuda_sim")]




def _rand(shape, dtype=numpy.float32, seed=0):
    rng = numpy.random.default_rng(seed)
    if numpy.dtype(dtype).kind == "b":
        return rng.random(shape) > 0.5
    if numpy.dtype(dtype).kind in "iu":
        return rng.integers(-9, 10, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _check(got, want, rtol=2e-6):
    got = numpy.asarray(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
    if want.dtype.kind == "f":
        numpy.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)
    else:
        numpy.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- elementwise

def test_elementwise_chain_with_broadcast_and_transpose(no_host):
    ha, hb, hc = _rand((4, 6)), _rand((6,), seed=1), _rand((6, 4), seed=2)
    a, b, c = np.asarray(ha), np.asarray(hb), np.asarray(hc)
    _check(np.exp(a * b - c.T) / 3 + 1, numpy.exp(ha * hb - hc.T) / 3 + 1)
    _check(np.maximum(a.T, c) * 2, numpy.maximum(ha.T, hc) * 2)


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool"])
def test_dtypes(dtype, no_host):
    ha, hb = _rand((3, 5), dtype), _rand((5,), dtype, seed=1)
    a, b = np.asarray(ha), np.asarray(hb)
    if dtype == "bool":
        _check((a & ~b) | (a ^ b[::-1]), (ha & ~hb) | (ha ^ hb[::-1]))
    elif dtype == "int32":
        _check((a * 3) // 2 - b % 4 + (a > b), (ha * 3) // 2 - hb % 4 + (ha > hb))
    else:
        _check(a * 2.5 - b ** 2 + np.floor(a), ha * 2.5 - hb ** 2 + numpy.floor(ha))


def test_domain_errors_give_nan_and_inf_as_on_the_device():
    h = numpy.array([-1.0, 0.0, 4.0, 800.0])  # Python's math raises here; CUDA returns NaN/inf
    a = np.asarray(h)
    with numpy.errstate(all="ignore"):
        _check(np.sqrt(a) + np.log(a) + np.exp(a), numpy.sqrt(h) + numpy.log(h) + numpy.exp(h))
        _check(np.trunc(a.astype(numpy.float32) / 3), numpy.trunc(h.astype(numpy.float32) / 3))


def test_zero_d_and_scalar_results():
    h = _rand((7,))
    a = np.asarray(h)
    assert float(a.sum() * 2) == pytest.approx(float(h.sum(dtype=numpy.float64) * 2), rel=1e-6)
    _check(np.asarray(numpy.float32(3.0)) * a[2], numpy.float32(3.0) * h[2])


# ---------------------------------------------------------------- reductions

REDUCTIONS = {
    "sum_axis1_epilogue": (lambda x, y: x.sum(axis=1) * 2, (4, 6)),
    "sq_dist_rows": (lambda x, y: ((x - y) ** 2).sum(axis=1), (3, 6)),
    "full_sum_epilogue": (lambda x, y: (x * x).sum() + 1, (5, 7)),
    "max_axis0": (lambda x, y: x.max(axis=0) - y[:3], (6, 3)),
    "full_max_min": (lambda x, y: x.max() * 2 + x.min(), (5, 6)),
    "argmax_axis1": (lambda x, y: x.argmax(axis=1), (3, 7)),
    "argmin_full": (lambda x, y: x.argmin(), (4, 9)),
    "mean_var": (lambda x, y: x.var(axis=1) + x.mean(), (3, 6)),
    "any_all": (lambda x, y: (x > 1).any(axis=1) | (x < 2).all(axis=1), (3, 5)),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(name, no_host):
    f, shape = REDUCTIONS[name]
    hx, hy = _rand(shape), _rand(shape[-1:], seed=1)
    _check(f(np.asarray(hx), np.asarray(hy)), f(hx, hy), rtol=1e-5)


def test_integer_reductions_widen_like_numpy(no_host):
    h = _rand((5, 4), numpy.int32)
    a = np.asarray(h)
    _check(a.sum(axis=0), h.sum(axis=0))
    _check(a.max(), h.max())


def test_argmax_first_occurrence_and_first_nan(no_host):
    h = numpy.array([[1, 5, 5, 0], [numpy.nan, 2, numpy.nan, 9], [3, 3, 3, 3]], numpy.float64)
    a = np.asarray(h)
    _check(a.argmax(axis=1), h.argmax(axis=1))
    _check(a.argmin(axis=0), h.argmin(axis=0))
    assert int(a.argmax()) == h.argmax() == 4
    ties = numpy.zeros(40)
    ties[[17, 23, 39]] = 1.0  # the tree compares across threads and blocks: first index wins
    assert int(np.asarray(ties).argmax()) == 17


def test_full_reduction_is_multi_block_and_deterministic(no_host):
    be = backends.get("cuda")
    assert be.reduce_split(1, 40) >= 2  # several blocks write partials...
    with context(cuda_sim=False):  # ...on a GPU too (no device query for a full reduction)
        assert be.reduce_split(1, 10 ** 7) >= 2
    src = tracer.explain(np.asarray(_rand((40,))).sum()).kernels[0].source
    assert "cuda.atomic.add(cnt, o, 1)" in src  # ...and the last block to finish combines them
    h = _rand((40,), seed=5) * 1e3
    first = numpy.asarray(np.asarray(h).sum())
    again = numpy.asarray(np.asarray(h).sum())
    assert first.tobytes() == again.tobytes()
    assert float(first) == pytest.approx(float(h.astype(numpy.float64).sum()), rel=1e-7)


# ---------------------------------------------------------------- library ops and views

def test_matmul_on_device(no_host):
    ha, hb = _rand((5, 7)), _rand((7, 3), seed=1)
    _check(np.asarray(ha) @ np.asarray(hb), ha @ hb, rtol=1e-5)
    hc, hd = _rand((2, 3, 4), numpy.float64), _rand((4,), numpy.float64, seed=2)
    _check(np.asarray(hc) @ np.asarray(hd), hc @ hd)  # batched matrix-vector


def test_matmul_batch_broadcast_and_ints(no_host):
    hi, hj = _rand((2, 1, 3, 4), numpy.int32), _rand((3, 4, 2), numpy.int32, seed=1)
    _check(np.asarray(hi) @ np.asarray(hj), hi @ hj)


def test_views_and_concatenate_on_device(no_host):
    h = _rand((4, 6))
    a = np.asarray(h)
    _check(np.concatenate([a[1:3, ::-2], a[:2, :3]]) * 1,
           numpy.concatenate([h[1:3, ::-2], h[:2, :3]]))
    _check(np.concatenate([a[:, :2], np.broadcast_to(a[0, :3], (4, 3))], axis=1) - 1,
           numpy.concatenate([h[:, :2], numpy.broadcast_to(h[0, :3], (4, 3))], axis=1) - 1)
    _check(a[::-1, 1::2] + 1, h[::-1, 1::2] + 1)
    _check(a.reshape(3, 8)[1:] - 1, h.reshape(3, 8)[1:] - 1)


def test_write_through_a_view(no_host):
    h = _rand((4, 6))
    a = np.asarray(h)
    v = a[1:3, ::2]
    v *= 10
    h[1:3, ::2] *= 10
    a[0] = a[3] + 1
    h[0] = h[3] + 1
    _check(a, h)
    _check(v, h[1:3, ::2])


def test_interpreter_ops_round_trip_through_the_host():
    h = numpy.array([1 + 2j, -3j], numpy.complex128)  # complex: no kernel, the interpreter runs it
    _check(np.exp(np.asarray(h)), numpy.exp(h))
    _check(np.exp(np.asarray(h[1])) * 2, numpy.exp(h[1]) * 2)  # 0-d stays 0-d


# ---------------------------------------------------------------- backend plumbing

def test_kernel_sources_grid_stride_and_shared_tree():
    a = np.asarray(_rand((5, 7)))
    loop = tracer.explain(a * 2 + a[:1]).kernels[0].source  # rank 2 (not flat): rows on grid y
    assert "cuda.grid(2)" in loop and "cuda.gridsize(2)" in loop and "%" not in loop
    assert "syncthreads" not in loop
    red = tracer.explain(a.sum(axis=1)).kernels[0].source
    assert "cuda.shared.array" in red and "cuda.syncthreads()" in red  # the block form...
    thread = red[red.index("_t("):]
    assert "syncthreads" not in thread and "shared" not in thread  # ...and a thread per output
    b = np.asarray(_rand((2, 3, 4)))
    t = tracer.explain(b.transpose(1, 0, 2) * 3).kernels[0].source  # rank 3: divmod per row
    assert "rem % s1" in t and "rem // s1" in t and "% s2" not in t


def test_stats_count_compiles_and_launches():
    a = np.asarray(_rand((6,)))
    tracer.reset_stats()
    numpy.asarray(np.tanh(a) * 7 - 1)
    assert STATS.kernels_launched == 1 and STATS.kernels_compiled == 1
    numpy.asarray(np.tanh(a) * 7 - 1)
    assert STATS.kernels_launched == 2 and STATS.kernels_compiled == 1
    assert STATS.compile_s > 0 and STATS.run_s > 0


def test_from_buffer_copies_once_and_keeps_the_host_array():
    be = backends.get("cuda")
    h = numpy.arange(5.0)
    buf = Buffer(h)
    d = be.from_buffer(buf)
    assert buf.host is h and buf.value is d and not isinstance(d, numpy.ndarray)
    assert be.from_buffer(buf) is d
    _check(be.to_host(d), h)


def test_a_device_result_feeds_the_cpu_backend():
    h = numpy.arange(6.0)
    a = np.asarray(h)
    b = tracer.evaluate(a * 2)
    with context(backend="cpu"):
        _check(b + a, h * 3)


# ---------------------------------------------------------------- row kernels

def _softmax(xp, x):
    e = xp.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def test_row_kernels_softmax_logsumexp_layernorm(no_host):
    h = _rand((3, 40))  # 40 > 32 threads: each thread strides over the row
    x = np.asarray(h)
    _check(_softmax(np, x), _softmax(numpy, h))
    _check(x.max(1) + np.log(np.exp(x - x.max(1)[:, None]).sum(1)),
           h.max(1) + numpy.log(numpy.exp(h - h.max(1)[:, None]).sum(1)), rtol=1e-5)
    mu = x.mean(1, keepdims=True)
    hmu = h.mean(1, keepdims=True)
    _check((x - mu) / np.sqrt(((x - mu) ** 2).mean(1, keepdims=True) + 1e-5),
           (h - hmu) / numpy.sqrt(((h - hmu) ** 2).mean(1, keepdims=True) + 1e-5), rtol=1e-5)
    assert [k.kind for k in tracer.explain(_softmax(np, x)).kernels] == ["row"]


def test_tree_reduction_chunk_remap_runs_on_the_device(no_host, monkeypatch):
    from tracer.opt import tree_reduction as tr
    monkeypatch.setattr(tr, "TREE_MIN", 8)
    h = _rand((41, 3))
    x = np.asarray(h)
    plan = tracer.explain((x * x).max(0))
    assert len(plan.kernels) == 2
    _check((x * x).max(0), (h * h).max(0))
    _check((x * x).sum(0), (h * h).sum(0), rtol=1e-5)  # (one stage: NumPy's order)


def test_multi_output_kernels_on_the_device(no_host):
    h = _rand((3, 40))
    x = np.asarray(h)
    e = np.exp(x)
    assert len(tracer.explain(e, e.sum(1), x * 2, x - 1).kernels) == 1
    got = tracer.evaluate(e, e.sum(1), x * 2, x - 1)
    for g, w in zip(got, (numpy.exp(h), numpy.exp(h).sum(1), h * 2, h - 1)):
        _check(g, w, rtol=1e-5)
