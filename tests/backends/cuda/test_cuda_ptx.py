"""The real CUDA source (not the simulator's binding) compiles to sm_90 PTX without a GPU or a
driver: `numba.cuda.compile_ptx(py_func, signature, cc=(9, 0))` needs only NVVM and NVRTC
(NUMBA_NOTES.md section 3). Helpers are inline-always device functions, the only kind that works
there. Marked `nvrtc`: skipped when the CUDA compiler libraries are missing (tests/conftest.py)."""
from __future__ import annotations

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels.cuda.codegen import WIDE
from tracer.cuda_kernels.cuda.ptx import compile_ptx, library_ptx
from tracer.ir import toposort
from tracer.ir.config import context

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject


def _ok(name: str, ptx: str) -> None:
    assert ".entry" in ptx or ".visible" in ptx, name
    assert ".target sm_90" in ptx, name


EXPRS = {
    "elementwise_helpers": lambda a, i: np.maximum(a // 3, np.logaddexp(a, 1.0)) + i,
    "transpose_broadcast_rank2": lambda a, i: np.floor(a.T) * i[:, None] + np.cbrt(a).T,
    "int_floordiv_remainder": lambda a, i: (i // 3) % 5 - np.minimum(i, 2),
    "row_sum_epilogue": lambda a, i: np.sqrt((a * a).sum(axis=1) + 1),
    "full_sum_epilogue": lambda a, i: ((a - 1) ** 2).sum() * 2,
    "argmax_axis": lambda a, i: a.argmax(axis=1),
    "argmin_full_int": lambda a, i: i.argmin(),
    "max_axis0": lambda a, i: a.max(axis=0),
    "any_full_bool": lambda a, i: (a > 0).any(),
    "row_softmax": lambda a, i: np.exp(a - a.max(1, keepdims=True)) /
    np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True),
    "row_logsumexp": lambda a, i: a.max(1) + np.log(np.exp(a - a.max(1)[:, None]).sum(1)),
    "multi_output_row": lambda a, i: (np.exp(a), np.exp(a).sum(1), a * 2),
    "horizontal": lambda a, i: (np.exp(a) * 2, i + 1, (a[0, 0] * 3).astype(np.float64)),
    "tiled_transpose": lambda a, i: (a * 2 + i).T,
    "tiled_transpose_batched": lambda a, i: np.swapaxes(np.exp(a)[None] + a, 1, 2),
}


@pytest.mark.nvrtc
@pytest.mark.parametrize("name", sorted(EXPRS))
def test_fusion_kernels_compile_to_ptx(name):
    a = np.asarray(numpy.ones((5, 7), numpy.float32))
    i = np.asarray(numpy.arange(7, dtype=numpy.int32))
    with context(backend="cuda", cuda_sim=False):
        got = EXPRS[name](a, i)
        plan = tracer.explain(*(got if isinstance(got, tuple) else (got,)))
    fusions = [n for n in toposort(plan.graph_after.roots) if n.op == "fusion"]
    assert len(fusions) == len(plan.kernels) >= 1
    for f, k in zip(fusions, plan.kernels):
        ptxs = compile_ptx(f, k, cc=(9, 0))
        assert len(ptxs) == (3 if k.kind == "reduce" else 1)  # reductions: three forms
        for kname, ptx in ptxs.items():
            _ok(kname, ptx)
            block = k.kind == "reduce" and not kname.endswith(("_t", "_warp"))
            if k.kind == "row" or block:
                assert "bar.sync" in ptx  # a tree in shared memory
            if k.kind == "reduce":  # the block form's ticket, the only atomic
                assert ptx.count("atom.") == block and ("ld.global.cg" in ptx) == block
                assert ("shfl.sync.down" in ptx) == kname.endswith("_warp")  # the warp form's
            elif k.kind == "row":
                assert "atom." not in ptx
            if name.startswith("tiled"):  # a transposed output goes through a shared tile
                assert k.meta.get("tiled") and "bar.sync" in ptx and ".shared" in ptx


@pytest.mark.nvrtc
@pytest.mark.parametrize("rank", [1, 3])
def test_strided_copy_compiles_to_ptx(rank):
    _ok(f"copy{rank}", library_ptx("copy", rank, ("float64", "float64")))
    wide = library_ptx("copy", rank, ("float64", "float64"), variant=WIDE)
    _ok(f"copy{rank}{WIDE}", wide)
    if rank > 1:  # the 32-bit variant's divmod is 32-bit, the other's 64-bit
        narrow = library_ptx("copy", rank, ("float64", "float64"))
        assert "div.u32" in narrow and "div.u64" not in narrow and "div.s64" not in narrow
        assert "div.u64" in wide


@pytest.mark.nvrtc
@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_tiled_transpose_compiles_to_ptx(bits):
    ptx = library_ptx("transpose", f"uint{bits}")
    _ok("transpose", ptx)
    assert "bar.sync" in ptx and ".shared" in ptx


@pytest.mark.nvrtc
@pytest.mark.parametrize("dtypes", [("float32",) * 3, ("float64", "int32", "float32"),
                                    ("int32",) * 3, ("bool",) * 3])
def test_tiled_matmul_compiles_to_ptx(dtypes):
    ptx = library_ptx("matmul", dtypes[0], dtypes)
    _ok("matmul", ptx)
    assert "bar.sync" in ptx and ".shared" in ptx
