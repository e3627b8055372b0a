"""Whether an exception says that the CUDA compiler libraries (NVRTC, NVVM, their Python
bindings) are missing, so that a PTX test is skipped rather than failed: a test marked `nvrtc`
that raises one of these is reported as skipped (tests/conftest.py). Any other error, a
compile error from NVRTC or NVVM included, still fails the test."""
from __future__ import annotations

import re

# cuda.pathfinder's DynamicLibNotFoundError / DynamicLibNotAvailableError (no libnvrtc.so or
# libnvvm.so), numba-cuda's CudaSupportError / NvvmSupportError ("libNVVM is not available") /
# NvrtcSupportError / CCSupportError (the library cannot target sm_90)
_MISSING_CLASS = re.compile(r"^DynamicLib\w*Error$|SupportError$")
# the Python bindings numba-cuda loads the libraries through
_BINDINGS = ("cuda", "nvidia")
# dlopen and file lookups: the message names the library
_LIBRARY = re.compile(r"nvrtc|nvvm|libdevice|libcuda|cuda_runtime", re.I)


def missing_cuda_compiler(e: BaseException | None) -> bool:
    """True if e, or an exception it was raised from or while handling (Numba wraps errors in
    its own), says a CUDA compiler library or its bindings are missing."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if _MISSING_CLASS.search(type(e).__name__):
            return True
        if isinstance(e, ModuleNotFoundError):
            if (e.name or "").split(".")[0] in _BINDINGS:
                return True
        elif isinstance(e, OSError) and _LIBRARY.search(str(e)):
            return True
        e = e.__cause__ or e.__context__
    return False
