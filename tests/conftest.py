"""Test setup: cpu backend, verifier after every pass, a kernel cache shared by the whole run;
tests marked `nvrtc` skip when the CUDA compiler libraries are missing; the run fails if it wrote
files into the source tree.

Adaptive laziness is off (TRACER_EAGER_SIZE=0: every op recorded, so small test arrays still
exercise the graph, passes and kernels). TRACER_TEST_EAGER=1 leaves it at its default, as users
run: the suite then checks that semantics do not change; tests marked `lazy` (their subject is the
recorded graph: kernel and node counts, explain output, plans, budgets) still run with it off."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TRACER_BACKEND", "cpu")
os.environ.setdefault("TRACER_SMALL_GRAPH", "0")  # small test arrays still get kernels (and
                                                  # so do the test programs run as subprocesses)
TEST_EAGER = os.environ.get("TRACER_TEST_EAGER", "") == "1"
if not TEST_EAGER:
    os.environ.setdefault("TRACER_EAGER_SIZE", "0")  # every op recorded: tests exercise the
                                                     # graph, passes and kernels on small arrays
# one kernel cache for the run, shared by the pytest-xdist workers (they inherit it from the
# controller): the cache is process safe, and tests that count compiles use a fresh one
os.environ.setdefault("TRACER_CACHE_DIR", os.path.join(tempfile.gettempdir(), "tracer-test-cache"))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from cuda_libs import missing_cuda_compiler  # noqa: E402
from tracer.ir.config import CONFIG, context  # noqa: E402

CONFIG.verify = True
CONFIG.compile_mode = "sync"  # tiered and worker compiles have tests of their own
CONFIG.compile_workers = 0


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def cuda_sim():
    """The test runs on the cuda backend under Numba's simulator (`usefixtures("cuda_sim")`)."""
    with context(backend="cuda", cuda_sim=True):
        yield


@pytest.fixture
def no_host(monkeypatch):
    """Fail if any node round-trips through the cuda backend's host interpreter."""
    import tracer.cuda_kernels.cuda.backend as cuda_mod

    def boom(n, args):
        raise AssertionError(f"{n.op} ran on the host")
    monkeypatch.setattr(cuda_mod, "eval_node", boom)


CUDA_DIR = Path(__file__).resolve().parent / "backends" / "cuda"


def pytest_collection_modifyitems(config, items):
    """Every test under backends/cuda/ is a `cuda` test; elsewhere the mark is written out."""
    for item in items:
        if CUDA_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.cuda)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A `lazy` test records every op, its fixtures' and subprocesses' ops included, under
    TRACER_TEST_EAGER=1 too. A `cuda` test runs at a 0.1 ms GIL switch interval: Numba's
    simulator runs a Python thread per CUDA thread and polls them all at each syncthreads
    while holding the GIL (a reduction case: 9-14 s at the default 5 ms, about 1 s)."""
    interval = sys.getswitchinterval()
    if item.get_closest_marker("cuda") is not None:
        sys.setswitchinterval(1e-4)
    try:
        if item.get_closest_marker("lazy") is None:
            yield
            return
        env = os.environ.get("TRACER_EAGER_SIZE")
        os.environ["TRACER_EAGER_SIZE"] = "0"
        try:
            with context(eager_size=0):
                yield
        finally:
            if env is None:
                del os.environ["TRACER_EAGER_SIZE"]
            else:
                os.environ["TRACER_EAGER_SIZE"] = env
    finally:
        sys.setswitchinterval(interval)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A PTX test whose CUDA compiler libraries are missing is skipped, not failed."""
    outcome = yield
    if item.get_closest_marker("nvrtc") is None or outcome.excinfo is None:
        return
    e = outcome.excinfo[1]
    if missing_cuda_compiler(e):
        outcome.force_exception(pytest.skip.Exception(
            f"no CUDA compiler libraries: {type(e).__name__}: {e}", _use_item_location=True))


# ---------------------------------------------------------------- nothing writes into the source

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ("tracer", "ir", "opt", "cuda_kernels", "tests", "examples")
_BEFORE = pytest.StashKey[dict]()


def source_files() -> dict[str, int]:
    """Every file in the source folders with its mtime, less Python's own bytecode caches."""
    out = {}
    for top in SOURCE:
        for p in (ROOT / top).rglob("*"):
            if p.parent.name == "__pycache__" and p.suffix == ".pyc" or not p.is_file():
                continue
            out[p.relative_to(ROOT).as_posix()] = p.stat().st_mtime_ns
    return out


def pytest_sessionstart(session):
    session.config.stash[_BEFORE] = source_files()


def pytest_sessionfinish(session, exitstatus):
    """Fail the run if it created files in the source folders, or rewrote one in a __pycache__
    (Numba's index and data files, `.nbi`/`.nbc`, belong in TRACER_CACHE_DIR)."""
    before = session.config.stash.get(_BEFORE, None)
    if before is None:
        return
    after = source_files()
    wrote = sorted(p for p, t in after.items()
                   if p not in before or "/__pycache__/" in p and t != before[p])
    if not wrote:
        return
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.ensure_newline()
        tr.write_sep("=", "the tests wrote into the source tree", red=True)
        for p in wrote[:20]:
            tr.write_line(f"    {p}", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
