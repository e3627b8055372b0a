"""Vector loads and stores in flat loop kernels (cuda/vector.py, issue 21 item 5): results equal
NumPy's under the simulator on both paths (odd sizes leave a scalar tail; an offset view that
is not aligned takes the scalar kernel), the launch's choice counted in
`stats().vector_launches`; the real intrinsics compile to ld.global.v4 / st.global.v4 and
assemble with ptxas (marked `nvrtc`: skipped without the CUDA compiler libraries)."""
from __future__ import annotations

import re

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels.cuda.vector import lanes, vector_ok
from tracer.ir import toposort
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # the launches are the subject


def _run(fn, *hosts):
    tracer.reset_stats()
    got = fn(*(np.asarray(h) for h in hosts))
    got = [numpy.asarray(g) for g in (got if isinstance(got, tuple) else (got,))]
    return got, tracer.stats().vector_launches


def test_lanes_fill_16_bytes_of_the_widest_dtype():
    assert lanes(["float32", "float32"]) == 4
    assert lanes(["float64", "float32", "bool"]) == 2
    assert lanes(["int8", "uint16"]) == 4  # at most 4: the body is written once per lane
    assert lanes(["complex64"]) == lanes(["float16", "float32"]) == 1


@pytest.mark.usefixtures("cuda_sim")
@pytest.mark.parametrize("n", [1, 3, 4, 37])
def test_vector_kernel_equals_numpy_with_a_scalar_tail(n):
    rng = numpy.random.default_rng(n)
    a, b = rng.standard_normal((2, n)).astype(numpy.float32)
    got, vec = _run(lambda x, y: x * y + x - y * y, a, b)
    assert vec == 1
    numpy.testing.assert_array_equal(got[0], a * b + a - b * b)


@pytest.mark.usefixtures("cuda_sim")
def test_mixed_widths_multi_output_and_bool_store():
    rng = numpy.random.default_rng(1)
    a = rng.standard_normal(13).astype(numpy.float32)
    b = rng.standard_normal(13)
    i = numpy.arange(13, dtype=numpy.int8)
    got, vec = _run(lambda x, y, k: ((x * y + x) > 0.1, x + 1.5, k * 3), a, b, i)
    assert vec == tracer.stats().kernels_launched >= 2  # (float64 sets the first's width: 2)
    numpy.testing.assert_array_equal(got[0], (a * b + a) > 0.1)
    numpy.testing.assert_array_equal(got[1], a + numpy.float32(1.5))
    numpy.testing.assert_array_equal(got[2], i * 3)


@pytest.mark.usefixtures("cuda_sim")
def test_flat_2d_kernel_takes_the_vector_form():
    a = numpy.arange(35, dtype=numpy.float64).reshape(5, 7)
    got, vec = _run(lambda x, y: x * y - x, a, a + 1)
    assert vec == 1
    numpy.testing.assert_array_equal(got[0], a * (a + 1) - a)
    got, vec = _run(lambda x: x * 2.5 - 1, a)  # constants (scalar broadcasts) stay flat
    assert vec == 1
    numpy.testing.assert_array_equal(got[0], a * 2.5 - 1)


@pytest.mark.usefixtures("cuda_sim")
@pytest.mark.parametrize("start,vector", [(1, False), (4, True)])
def test_offset_views_vector_only_where_aligned(start, vector):
    """x[1:] of float32 data starts 4 bytes into its block: the scalar kernel; x[4:] starts 16
    bytes in, aligned for four lanes."""
    a = numpy.arange(23, dtype=numpy.float32)
    got, vec = _run(lambda x: x[start:] * 2 + x[start:], a)
    assert vec == int(vector)
    numpy.testing.assert_array_equal(got[0], a[start:] * 2 + a[start:])


class _Fake:
    def __init__(self, ptr, n=8, dtype=numpy.float32, stride=None):
        self.dtype, self.ndim, self.size, self.shape = numpy.dtype(dtype), 1, n, (n,)
        self.strides = (stride or self.dtype.itemsize,)
        self._ary = numpy.empty(0)  # (cuda/memory.interface reads the address from here)
        self.ptr = ptr


def test_vector_ok_needs_contiguity_and_alignment(monkeypatch):
    import tracer.cuda_kernels.cuda.vector as vmod
    monkeypatch.setattr(vmod, "interface", lambda a, s: {"data": (a.ptr, False)})
    assert vector_ok([_Fake(4096), _Fake(4112)], 4)
    assert not vector_ok([_Fake(4096), _Fake(4104)], 4)  # 8 bytes off: not for 16-byte loads
    assert vector_ok([_Fake(4104, dtype=numpy.float64)], 1) and \
        not vector_ok([_Fake(4104, dtype=numpy.float64)], 2)
    assert not vector_ok([_Fake(4096, stride=8)], 4)  # a strided view


@pytest.mark.nvrtc
def test_vector_variant_ptx_has_v4_loads_and_assembles():
    from tracer.cuda_kernels.cuda.ptx import assemble, compile_ptx, find_ptxas
    x = np.asarray(numpy.ones(37, numpy.float32))
    y = np.asarray(numpy.ones(37, numpy.float32))
    with context(backend="cuda", cuda_sim=False):
        plan = tracer.explain(x * y + x - y * y)
    f = next(n for n in toposort(plan.graph_after.roots) if n.op == "fusion")
    ptxs = compile_ptx(f, plan.kernels[0], cc=(9, 0), wide=True, vector=True)
    vec = {k: p for k, p in ptxs.items() if re.search(r"_v(_w)?$", k)}
    assert len(vec) == 2  # both index variants
    for ptx in vec.values():
        assert re.search(r"ld\.global\.v4\.f32", ptx) and re.search(r"st\.global\.v4\.f32", ptx)
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas: the nvidia-cuda-nvcc wheel (test extra) is not installed")
    usage = assemble(vec, "sm_90", ptxas)
    assert all(u.registers > 0 and not u.spill_stores for u in usage.values())
