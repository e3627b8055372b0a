"""What a fresh process loads (issue 19 item 6: the first evaluation costs at most 50 ms more
than NumPy's; bench/bench_startup.py times it). `import tracer.numpy` and a program whose ops
all run eagerly load neither the optimizer, the engine, the kernel executor nor Numba: they load
on the first lazy evaluation, and Numba only with the first kernel. Fresh interpreters, no
timing."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tracer.cuda_kernels import backends

PROGRAM = "import tracer.numpy as np; a = np.arange(10.); assert float((a*2+1).sum()) == 100.0"
# what the first lazy evaluation loads, and what a kernel needs besides
LAZY = ("tracer.engine", "tracer.plans", "tracer.opt.pipeline", "tracer.opt.simplify",
        "tracer.opt.buffer_assignment", "tracer.cuda_kernels.executor",
        "tracer.cuda_kernels.compiler")
KERNEL = ("numba", "tracer.cuda_kernels.cpu.backend")
# nor, for an eager program, the budget runner, the host and compile pools, numpy.random
EAGER_NEVER = ("tracer.budgeted", "concurrent.futures", "multiprocessing", "numpy.random",
               "tracer.numpy.random")
# nor, for one kernel found on disk or compiled here, the compile pool or Numba's CUDA target
KERNEL_NEVER = ("concurrent.futures.process", "multiprocessing", "numba.cuda")


def loaded(program: str, **env: str) -> set[str]:
    """The modules a fresh interpreter holds after running `program`, in the tests' settings
    (cpu backend, the tests' kernel cache) but for `env`."""
    full = {**os.environ, "TRACER_COMPILE": "sync", "TRACER_COMPILE_WORKERS": "",
            "TRACER_EAGER_SIZE": "", "TRACER_SMALL_GRAPH": "", **env}
    full = {k: v for k, v in full.items() if v != ""}  # "": the default setting
    code = f"{program}\nimport json, sys; print(json.dumps(sorted(sys.modules)))"
    p = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return set(json.loads(p.stdout.splitlines()[-1]))


def test_import_loads_no_engine_optimizer_or_numba():
    mods = loaded("import tracer.numpy")
    assert not mods & {*LAZY, *KERNEL, *EAGER_NEVER}
    assert not [m for m in mods if m.startswith(("tracer.opt.", "numba.", "llvmlite"))]


def test_an_eager_program_loads_no_engine_optimizer_or_numba():
    mods = loaded(PROGRAM)  # default settings: 10 elements run by NumPy at once
    assert not mods & {*LAZY, *KERNEL, *EAGER_NEVER}
    assert not [m for m in mods if m.startswith(("tracer.opt.", "numba.", "llvmlite"))]


def test_a_small_lazy_graph_loads_the_engine_but_not_numba():
    # every op recorded; the 10-element graph runs by NumPy op by op through the engine
    mods = loaded(PROGRAM, TRACER_EAGER_SIZE="0")
    assert set(LAZY) <= mods
    assert not mods & {*KERNEL, *KERNEL_NEVER}


@pytest.mark.slow
def test_a_lazy_kernel_loads_numba():
    mods = loaded(PROGRAM, TRACER_EAGER_SIZE="0", TRACER_SMALL_GRAPH="0")
    # one kernel: found on disk, or compiled in this process rather than start a worker
    assert {*LAZY, *KERNEL} <= mods
    assert not mods & set(KERNEL_NEVER)


def test_no_cuda_driver_is_found_without_numba():
    """Where no driver library loads, the default backend is cpu with Numba never imported; the
    check agrees with Numba's own."""
    if not backends._no_driver():
        pytest.skip("a CUDA driver library is present: Numba decides")
    mods = loaded("from tracer.cuda_kernels.backends import default_backend\n"
                  "assert default_backend() == 'cpu'", TRACER_BACKEND="")
    assert "numba" not in mods
    from numba import cuda
    assert not cuda.is_available()


def test_the_simulator_is_left_to_numba(monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert not backends._no_driver()


def test_parameter_positions_read_from_code_agree_with_inspect():
    # dispatch reads where each function takes dtype and its data from its code, not from
    # inspect.signature (a few milliseconds at import)
    import inspect

    from tracer import dispatch

    def by_inspect(fn) -> dict[str, int]:
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            return {}
        return {p.name: i if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else -1
                for i, p in enumerate(params)
                if p.name == "dtype" or p.name in dispatch._DATA_PARAMS}

    fns = [getattr(f, "__wrapped__", f) for f in dispatch.LAZY.values()
           if not isinstance(f, dispatch.ufunc)]
    assert len(fns) > 100
    for fn in fns:
        assert dispatch._positions(fn) == by_inspect(fn), fn

    def f(x, /, dtype=None, *, fill_value=0): ...
    assert dispatch._positions(f) == {"x": 0, "dtype": 1, "fill_value": -1}
    assert dispatch._positions(dict.get) == by_inspect(dict.get)
