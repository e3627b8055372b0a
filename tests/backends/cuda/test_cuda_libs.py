"""tests/cuda_libs.py: which errors mean "the CUDA compiler libraries are missing" (a test marked
`nvrtc` skips) and which are real failures (it fails)."""
from __future__ import annotations

import pytest
from cuda.pathfinder import DynamicLibNotFoundError
from numba.cuda.cudadrv.error import NvrtcError, NvrtcSupportError, NvvmSupportError

from cuda_libs import missing_cuda_compiler

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject


def _raised_while_handling(inner: BaseException) -> BaseException:
    """An error raised while handling `inner`, as Numba wraps errors from its pipeline."""
    try:
        try:
            raise inner
        except BaseException:
            raise RuntimeError("Failed in cuda mode pipeline (step: native lowering)")
    except RuntimeError as e:
        return e


def _module_missing(name: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(f"No module named {name!r}", name=name)


@pytest.mark.parametrize("e", [
    DynamicLibNotFoundError("Failure finding libnvrtc.so"),
    DynamicLibNotFoundError("Failure finding libnvvm.so"),
    NvvmSupportError("libNVVM is not available"),
    NvrtcSupportError("NVRTC cannot be loaded"),
    _module_missing("cuda.bindings.nvrtc"),
    _module_missing("cuda.core"),
    OSError("libnvrtc.so.13: cannot open shared object file: No such file or directory"),
    FileNotFoundError("/usr/local/cuda/nvvm/libdevice not found"),
    _raised_while_handling(DynamicLibNotFoundError("Failure finding libnvvm.so")),
], ids=lambda e: type(e).__name__)
def test_missing_library_skips(e):
    assert missing_cuda_compiler(e)


@pytest.mark.parametrize("e", [
    NvrtcError("NVRTC Compilation failure: error: identifier \"x\" is undefined"),
    _module_missing("tracer.cuda_kernels.gone"),
    FileNotFoundError("/tmp/tracer-cache/gen/k_loop.py"),
    AssertionError(".target sm_90"),
    _raised_while_handling(TypeError("bad operand")),
], ids=lambda e: type(e).__name__)
def test_other_errors_fail(e):
    assert not missing_cuda_compiler(e)
