"""The CUDA toolchain against the GPU's driver, checked once, when the cuda backend first uses a
device (before any kernel compiles): a machine with no GPU, or a driver that cannot load what the
toolchain makes, is one clear error naming the versions and the fix, instead of
CUDA_ERROR_UNSUPPORTED_PTX_VERSION at the first launch.

What the driver is handed decides what it must read. numba-cuda compiles a kernel to PTX with
NVVM; when nvJitLink (>= 12.3) is installed, cuda.core links that PTX into a cubin with it, and a
driver loads a cubin from any toolkit of its own major version (CUDA minor version
compatibility). Without nvJitLink the driver compiles the PTX itself, and reads only the PTX ISA
versions of its CUDA version and older. The ISA is read from the `.version` line of a tiny kernel
compiled once (NVVM reports no finer version than 2.0 for every CUDA 12 and 13), and remembered on
disk by NVVM library, so a warm process compiles nothing for the check."""
from __future__ import annotations

import json
import os
import re

from tracer.ir.config import CONFIG
from ..compiler import cache_dir, writable

# the extras of setup.cfg that install a toolkit for a driver's CUDA major version
EXTRAS = {12: "cuda12", 13: "cuda13"}
NEWEST_EXTRA = 13


class CudaSetupError(RuntimeError):
    """No usable GPU, or a CUDA toolchain its driver cannot load."""


def cuda_isa(cuda: tuple[int, int]) -> tuple[int, int]:
    """The newest PTX ISA a CUDA version reads (its driver) or writes (its NVVM): 11.x -> 7.x,
    12.0-12.5 -> 8.0-8.5, 12.6 -> 8.5, 12.8 -> 8.7, 12.9 -> 8.8, 13.x -> 9.x."""
    major, minor = cuda
    if major < 12:
        return 7, minor
    if major == 12:
        return 8, minor if minor <= 5 else minor - 1
    return major - 4, minor


def isa_cuda(isa: tuple[int, int]) -> tuple[int, int]:
    """The oldest CUDA version whose driver reads this PTX ISA (the inverse of cuda_isa)."""
    major, minor = isa
    if major <= 7:
        return 11, minor
    if major == 8:
        return 12, minor if minor <= 5 else minor + 1
    return major + 4, minor


def _v(v: tuple[int, int]) -> str:
    return f"{v[0]}.{v[1]}"


def _install(driver: tuple[int, int]) -> str:
    """The fix: the extra whose toolkit this driver loads, or a newer driver."""
    extra = EXTRAS.get(min(driver[0], NEWEST_EXTRA))
    if extra is None:
        return (f"update the GPU driver: tracer's CUDA extras need a driver for CUDA 12 or newer "
                f"(this one is for CUDA {_v(driver)})")
    return (f"install the toolkit for this driver, in a fresh environment: "
            f"pip install 'tracer-arrays[{extra}]' (README, \"CUDA\"), or update the GPU driver")


def problem(driver: tuple[int, int], isa: tuple[int, int],
            jitlink: tuple[int, int] | None) -> str | None:
    """Why a driver for CUDA `driver` cannot load kernels of PTX ISA `isa` linked by nvJitLink
    version `jitlink` (None: the driver compiles the PTX itself); None when it can."""
    if jitlink is not None:
        if jitlink[0] <= driver[0] and isa <= cuda_isa(jitlink):
            return None
        how = (f"nvJitLink {_v(jitlink)} links it into cubins that only a driver for CUDA "
               f"{jitlink[0]}.x or newer loads" if jitlink[0] > driver[0] else
               f"nvJitLink {_v(jitlink)} cannot read it")
    elif isa <= cuda_isa(driver):
        return None
    else:
        how = (f"the driver reads PTX ISA {_v(cuda_isa(driver))} at most and there is no nvJitLink "
               f"to link it into a cubin")
    return (f"tracer: the GPU's driver is for CUDA {_v(driver)}, but the CUDA toolchain installed "
            f"here compiles kernels to PTX ISA {_v(isa)} (CUDA {_v(isa_cuda(isa))}), and {how}. "
            f"Fix: {_install(driver)}; or use the cpu backend (TRACER_BACKEND=cpu).")


# ---------------------------------------------------------------------------- the installed parts

def driver_version() -> tuple[int, int]:
    from numba.cuda.cudadrv import driver
    return tuple(driver.driver.get_version())


def device_cc(cuda) -> tuple[int, int]:
    return tuple(cuda.get_current_device().compute_capability)


def jitlink_version() -> tuple[int, int] | None:
    """The nvJitLink that cuda.core links kernels with, None when it leaves that to the driver
    (not installed, or older than 12.3: numba-cuda's own test)."""
    from numba.cuda.cudadrv import driver
    if not driver._have_nvjitlink():
        return None
    from cuda.bindings import nvjitlink
    return tuple(nvjitlink.version())[:2]


def _nvvm_key(cc: tuple[int, int]) -> str:
    """What the emitted ISA depends on: the toolchain (the NVVM library: path, size, time, as
    the CUDA disk cache keys it) and the target."""
    from .cache import toolchain  # numba-cuda's internals load with the device's first use
    return f"{toolchain()}\nsm_{cc[0]}{cc[1]}"


def read_isa(ptx: str) -> tuple[int, int]:
    m = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.M)
    if m is None:
        raise ValueError("no .version line in the PTX")
    return int(m.group(1)), int(m.group(2))


def emitted_isa(cc: tuple[int, int]) -> tuple[int, int]:
    """The PTX ISA this toolchain's NVVM writes for compute capability cc: a tiny kernel's
    `.version`, remembered in the kernel cache's folder by NVVM library."""
    from numba import cuda
    key = _nvvm_key(cc)
    path = os.path.join(cache_dir(), "ptx_isa.json")
    try:
        with open(path) as f:
            known = json.load(f)
    except (OSError, ValueError):
        known = {}
    if key in known:
        return tuple(known[key])

    def probe():
        pass
    isa = read_isa(cuda.compile_ptx(probe, (), cc=cc)[0])
    if writable():
        known[key] = list(isa)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(known, f)
        os.replace(tmp, path)  # atomic: a reader sees the old file or the new one
    return isa


# ---------------------------------------------------------------------------- the check

def no_gpu_message(reason: str) -> str:
    return (f"tracer: the cuda backend was asked for (TRACER_BACKEND=cuda), but no CUDA GPU can "
            f"be used here ({reason}). Use the cpu backend (TRACER_BACKEND=cpu, or leave "
            f"TRACER_BACKEND unset: tracer picks cuda only where it finds a GPU), or run the CUDA "
            f"kernels on Numba's simulator (NUMBA_ENABLE_CUDASIM=1; slow, meant for tests).")


def _unavailable() -> str | None:
    """Why numba-cuda cannot run kernels here, None when it can."""
    from numba.cuda.cudadrv import driver, nvvm
    if not driver.driver.is_available:
        err = str(driver.driver.initialization_error or "no driver").strip()
        return no_gpu_message(" ".join(err.split()))
    if not nvvm.is_available():
        return (f"tracer: the GPU's driver is for CUDA {_v(driver_version())}, but no CUDA "
                f"compiler (libNVVM) is installed. Fix: {_install(driver_version())}.")
    return None


def check(cuda) -> None:
    """Raise CudaSetupError if the cuda backend cannot run kernels on this machine."""
    msg = _unavailable()
    if msg is None:
        driver = driver_version()
        try:
            isa = emitted_isa(device_cc(cuda))
        except Exception as e:  # noqa: BLE001 - NVRTC or NVVM missing or broken: no kernel compiles
            raise CudaSetupError(
                f"tracer: the CUDA toolchain cannot compile a kernel to PTX here "
                f"({type(e).__name__}: {e}). Fix: {_install(driver)}.") from e
        msg = problem(driver, isa, jitlink_version())
    if msg is not None:
        raise CudaSetupError(msg)


_CHECKED: list = []  # [None] once the check passed; [the error] once it failed


def device_api(cuda):
    """numba.cuda, checked at its first use by the backend (the check runs once a process)."""
    if not _CHECKED:
        from numba.cuda.core import config
        if config.ENABLE_CUDASIM or CONFIG.cuda_sim:  # the simulator loads nothing
            return cuda
        try:
            check(cuda)
            _CHECKED.append(None)
        except CudaSetupError as e:
            _CHECKED.append(e)
    if _CHECKED[0] is not None:
        raise CudaSetupError(str(_CHECKED[0]))
    return cuda
