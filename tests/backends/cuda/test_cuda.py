"""CUDA kernels without a GPU: run under Numba's simulator on tiny inputs, and compile to PTX
for sm_90 (needs the nvidia-cuda-nvrtc wheel from the test extra). On a machine with a GPU,
TRACER_TEST_REAL_CUDA=1 runs the same checks on the device."""
from __future__ import annotations

import os

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir import toposort
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject

REAL = os.environ.get("TRACER_TEST_REAL_CUDA") == "1"


@pytest.fixture
def cuda_backend():
    with context(backend="cuda", cuda_sim=not REAL):
        yield


def _data(*shapes, dtype=numpy.float32, seed=0):
    rng = numpy.random.default_rng(seed)
    hs = [rng.standard_normal(s).astype(dtype) for s in shapes]
    return hs, [np.asarray(h) for h in hs]


CASES = {
    "chain_broadcast": (lambda a, b: a * b + 1.5, lambda a, b: a * b + 1.5),
    "transpose": (lambda a, b: a.T * 2 - 1, lambda a, b: a.T * 2 - 1),
    "sq_dist_rows": (lambda a, b: ((a - b) ** 2).sum(axis=1), lambda a, b: ((a - b) ** 2).sum(axis=1)),
    "full_sum_epilogue": (lambda a, b: a.sum() * 2, lambda a, b: a.sum() * 2),
    "max_axis0": (lambda a, b: a.max(axis=0), lambda a, b: a.max(axis=0)),
    "mean_var": (lambda a, b: a.var(axis=1) + a.mean(), lambda a, b: a.var(axis=1) + a.mean()),
    "matvec": (lambda a, b: a @ b, lambda a, b: a @ b),
    "helpers": (lambda a, b: np.maximum(a // 0.5, np.logaddexp(a, b)),
                lambda a, b: numpy.maximum(a // 0.5, numpy.logaddexp(a, b))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_simulated_kernels_match_numpy(cuda_backend, name):
    lazy, eager = CASES[name]
    (ha, hb), (a, b) = _data((5, 7), (7,))
    got = numpy.asarray(lazy(a, b))
    want = eager(ha, hb)
    assert got.dtype == want.dtype and got.shape == want.shape
    numpy.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [numpy.int32, numpy.float64, numpy.bool_])
def test_simulated_dtypes(cuda_backend, dtype):
    (ha,), (a,) = _data((9,), dtype=dtype, seed=3)
    if dtype is numpy.bool_:
        got, want = numpy.asarray(a & ~a[::-1]), ha & ~ha[::-1]
    else:
        got, want = numpy.asarray((a * 3) // 2 - a.max()), (ha * 3) // 2 - ha.max()
    numpy.testing.assert_array_equal(got, want)


def test_simulated_argmax_first_occurrence_and_nan(cuda_backend):
    h = numpy.array([[1, 5, 5, 0], [numpy.nan, 2, numpy.nan, 9], [3, 3, 3, 3]], numpy.float64)
    a = np.asarray(h)
    numpy.testing.assert_array_equal(numpy.asarray(a.argmax(axis=1)), h.argmax(axis=1))
    numpy.testing.assert_array_equal(numpy.asarray(a.argmin(axis=0)), h.argmin(axis=0))
    assert int(a.argmax()) == h.argmax()


def test_simulated_write_through_view_stays_correct(cuda_backend):
    (ha,), (a,) = _data((4, 6))
    v = a[1:3, ::2]
    v *= 10
    ha[1:3, ::2] *= 10
    numpy.testing.assert_allclose(numpy.asarray(a), ha, rtol=1e-6)


def test_cuda_sources_use_grid_stride_and_shared_tree(cuda_backend):
    _, (a, b) = _data((5, 7), (7,))
    loop = tracer.explain(a * b).kernels[0].source
    assert "cuda.gridsize(2)" in loop and "while row < nrow:" in loop  # a broadcast: 2-D grid
    red = tracer.explain(a.sum(axis=1)).kernels[0].source
    assert "cuda.shared.array" in red and "cuda.syncthreads()" in red and "def reduce" in red


PTX_EXPRS = {
    "elementwise_helpers": lambda a, i: np.maximum(a // 3, np.logaddexp(a, 1.0)) + i,
    "row_sum_epilogue": lambda a, i: np.sqrt((a * a).sum(axis=1) + 1),
    "argmax": lambda a, i: a.argmax(axis=1),
    "any_full": lambda a, i: (a > 0).any(),
    "cbrt_transpose": lambda a, i: np.cbrt(a).T + np.floor(a.T),
    "int_shift": lambda a, i: (i << 3) % 7,
}


@pytest.mark.nvrtc
@pytest.mark.parametrize("name", sorted(PTX_EXPRS))
def test_kernels_compile_to_ptx_for_sm90(name):
    from tracer.cuda_kernels.cuda.ptx import compile_ptx
    a = np.asarray(numpy.ones((5, 7), numpy.float32))
    i = np.asarray(numpy.ones(7, numpy.int32))
    with context(backend="cuda", cuda_sim=False):
        plan = tracer.explain(PTX_EXPRS[name](a, i))
        fusions = [n for n in toposort(plan.graph_after.roots) if n.op == "fusion"]
        assert len(fusions) == len(plan.kernels) >= 1
        for f, k in zip(fusions, plan.kernels):
            for kname, ptx in compile_ptx(f, k, cc=(9, 0)).items():
                assert f".entry {kname}" in ptx or ".entry _Z" in ptx, kname
                assert ".target sm_90" in ptx


def _ufunc_cases(dtypes):
    from sweep.test_registry_sweep import UFUNCS
    for name in UFUNCS:
        uf = getattr(numpy, name)
        for dt in dtypes:
            try:
                loop = uf.resolve_dtypes((numpy.dtype(dt),) * uf.nin + (None,))
            except TypeError:
                continue
            if "e" not in "".join(d.char for d in loop):  # float16 loops run in the interpreter
                yield name, dt


@pytest.mark.nvrtc
@pytest.mark.parametrize("name,dtype", list(_ufunc_cases(["float32", "int32", "uint8", "bool"])))
def test_every_ufunc_kernel_compiles_to_ptx(name, dtype):
    from tracer.cuda_kernels.cuda.ptx import compile_ptx
    from sweep.test_registry_sweep import cross
    uf = getattr(np, name)
    args = [np.asarray(a) for a in cross([dtype] * uf._uf.nin)]
    if name == "power" and dtype != "float32":  # NumPy raises for negative integer exponents
        args[1] = np.abs(args[1])
    with context(backend="cuda", cuda_sim=False):
        plan = tracer.explain(uf(*args))
    fusions = [n for n in toposort(plan.graph_after.roots) if n.op == "fusion"]
    if not plan.kernels:  # no kernel template (the interpreter runs it), or simplified away
        assert plan.graph_after.roots[0].op in (name, "input")
        return
    for f, k in zip(fusions, plan.kernels):
        assert all(".target sm_90" in p for p in compile_ptx(f, k, cc=(9, 0)).values())
