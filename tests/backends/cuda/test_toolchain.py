"""The CUDA toolchain against the driver (cuda/toolchain.py), without a GPU: the version rules,
the start-up check with a faked old driver, the error on a machine with no GPU, and
NUMBA_ENABLE_CUDASIM selecting the simulator's launch geometry."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.cuda_kernels.cuda import toolchain
from tracer.cuda_kernels.cuda.toolchain import CudaSetupError, cuda_isa, isa_cuda, problem
from tracer.ir.config import Config, context

pytestmark = pytest.mark.lazy  # the backend's first launch is the subject: small arrays recorded


@pytest.fixture
def unchecked(monkeypatch):
    """The start-up check runs again (it runs once a process)."""
    monkeypatch.setattr(toolchain, "_CHECKED", [])


def _w1():
    a = np.asarray(numpy.linspace(-1, 1, 12).reshape(3, 4))
    return a * a - np.sqrt(np.abs(a))


@pytest.mark.parametrize("cuda,isa", [((11, 8), (7, 8)), ((12, 0), (8, 0)), ((12, 4), (8, 4)),
                                      ((12, 6), (8, 5)), ((12, 8), (8, 7)), ((12, 9), (8, 8)),
                                      ((13, 0), (9, 0)), ((13, 5), (9, 5))])
def test_ptx_isa_of_each_cuda_version(cuda, isa):
    assert cuda_isa(cuda) == isa
    assert cuda_isa(isa_cuda(isa)) == isa and isa_cuda(isa) <= cuda


@pytest.mark.parametrize("driver,isa,jitlink,fix", [
    ((12, 8), (8, 7), None, None),          # the cuda12 extra's NVVM, loaded by the driver
    ((12, 9), (8, 7), None, None),
    ((12, 2), (8, 7), (12, 8), None),       # older 12.x drivers load nvJitLink's cubins
    ((13, 0), (9, 5), (13, 5), None),
    ((12, 8), (9, 5), None, "cuda12"),      # the case: CUDA 13.5 wheels, a 12.x driver
    ((13, 0), (9, 5), None, "cuda13"),
    ((12, 8), (9, 5), (13, 5), "cuda12"),   # a 13.x cubin does not load on a 12.x driver
    ((12, 8), (8, 8), (12, 4), "cuda12"),   # an nvJitLink older than the PTX
    ((14, 0), (10, 2), None, "cuda13"),    # no extra for a newer major yet: the newest
    ((11, 8), (8, 7), None, "update the GPU driver"),
])
def test_which_driver_loads_which_toolchain(driver, isa, jitlink, fix):
    msg = problem(driver, isa, jitlink)
    if fix is None:
        assert msg is None
        return
    assert f"CUDA {driver[0]}.{driver[1]}" in msg and f"PTX ISA {isa[0]}.{isa[1]}" in msg
    assert fix in msg and "TRACER_BACKEND=cpu" in msg


@pytest.mark.nvrtc
@pytest.mark.lazy
def test_an_old_driver_is_one_error_before_any_kernel_compiles(monkeypatch, unchecked):
    """A GPU whose driver is for CUDA 12.0 (PTX ISA 8.0 at most: older than any toolkit the
    extras install) and no nvJitLink: the first evaluation raises, naming both versions and the
    extra, and compiles nothing; later evaluations raise the same error."""
    from numba import cuda
    monkeypatch.setattr(toolchain, "_unavailable", lambda: None)  # a GPU is there
    monkeypatch.setattr(toolchain, "device_cc", lambda cuda: (9, 0))
    monkeypatch.setattr(toolchain, "driver_version", lambda: (12, 0))
    monkeypatch.setattr(toolchain, "jitlink_version", lambda: None)
    isa = toolchain.emitted_isa((9, 0))  # what NVVM writes here (9.0 with the system's 13.0)
    assert isa == toolchain.read_isa(cuda.compile_ptx(lambda: None, (), cc=(9, 0))[0])
    compiled = tracer.stats().kernels_compiled
    with context(backend="cuda", cuda_sim=False):
        for _ in range(2):
            with pytest.raises(CudaSetupError) as e:
                tracer.evaluate(_w1())
            msg = str(e.value)
            assert "CUDA 12.0" in msg and f"PTX ISA {isa[0]}.{isa[1]}" in msg, msg
            assert "pip install 'tracer-arrays[cuda12]'" in msg, msg
    assert tracer.stats().kernels_compiled == compiled


def test_no_gpu_is_a_clear_error_at_the_first_evaluation(unchecked):
    from numba import cuda
    if cuda.is_available():
        pytest.skip("a GPU is here")
    x = _w1()  # recording needs no device
    with context(backend="cuda", cuda_sim=False), pytest.raises(CudaSetupError) as e:
        tracer.evaluate(x)
    msg = str(e.value)
    assert "no CUDA GPU" in msg and "TRACER_BACKEND=cpu" in msg and "NUMBA_ENABLE_CUDASIM=1" in msg
    with context(backend="cpu"):
        h = numpy.linspace(-1, 1, 12).reshape(3, 4)
        numpy.testing.assert_allclose(numpy.asarray(_w1()), h * h - numpy.sqrt(numpy.abs(h)))


def test_a_toolchain_that_cannot_compile_is_the_same_kind_of_error(monkeypatch, unchecked):
    from numba import cuda
    monkeypatch.setattr(toolchain, "_unavailable", lambda: None)
    monkeypatch.setattr(toolchain, "driver_version", lambda: (13, 0))
    monkeypatch.setattr(toolchain, "device_cc", lambda cuda: (9, 0))

    def missing(cc):
        raise OSError("libnvrtc.so.13: cannot open shared object file")
    monkeypatch.setattr(toolchain, "emitted_isa", missing)
    with pytest.raises(CudaSetupError, match=r"libnvrtc.*tracer-arrays\[cuda13\]"):
        toolchain.device_api(cuda)


@pytest.mark.parametrize("value,sim", [("1", True), ("0", False), ("", False), ("x", False)])
def test_numba_switch_selects_the_simulator(monkeypatch, value, sim):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", value)  # read as Numba reads it: an integer
    assert Config().cuda_sim is sim


@pytest.mark.slow
def test_simulator_by_environment_alone(tmp_path):
    """NUMBA_ENABLE_CUDASIM=1 and TRACER_BACKEND=cuda, nothing else: the simulator's geometry
    (fewer threads a block than on a device, at most SIM_MAX_BLOCKS blocks) and NumPy's values,
    on a 2-d flat kernel."""
    prog = textwrap.dedent("""
        import numpy
        import tracer, tracer.numpy as np
        from tracer.cuda_kernels import backends
        from tracer.cuda_kernels.cuda import backend
        from tracer.ir.config import CONFIG
        launches = []
        real = backend.CudaBackend._blocks
        def blocks(self, work, per_block, *rest):
            launches.append(real(self, work, per_block, *rest))
            return launches[-1]
        backend.CudaBackend._blocks = blocks
        h = numpy.linspace(-1, 1, 200).reshape(4, 50)
        a = np.asarray(h)
        got = numpy.asarray(a * a - np.sqrt(np.abs(a)))
        numpy.testing.assert_allclose(got, h * h - numpy.sqrt(numpy.abs(h)))
        tpb = int(backends.get("cuda").variant().split("-")[-1])
        print(CONFIG.cuda_sim, backends.get("cuda").variant().startswith("|cuda-sim-"),
              tpb < 256, max(launches) <= backend.SIM_MAX_BLOCKS)
    """)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", TRACER_BACKEND="cuda",
               TRACER_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True"] * 4
