"""Issue 17 items 23-25: a damaged kernel cache is rebuilt with one warning; a cache (or an
install, or a home) that cannot be written runs in memory with one warning; compile workers
end when their parent is killed; issue 19 item 7: and when it exits, compiling or not, so a
caller reading its output is not kept waiting. Each case runs in a subprocess with its own TRACER_CACHE_DIR."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy
import pytest

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject

ROOT = Path(__file__).resolve().parents[3]
PROGRAM = """
import numpy, tracer, tracer.numpy as np
x = np.asarray(numpy.arange(12.0).reshape(3, 4))
c = np.zeros((5, 4))
np.add.at(c, np.asarray(numpy.array([0, 2, 2])), x)
print(repr([float((x * 2 + 1).sum()), numpy.asarray(x[::2] - 1).tolist(),
            numpy.asarray(c).tolist()]))
print("disk", tracer.stats().cache_hits_disk)
"""


def _want() -> str:
    x = numpy.arange(12.0).reshape(3, 4)
    c = numpy.zeros((5, 4))
    numpy.add.at(c, numpy.array([0, 2, 2]), x)
    return repr([float((x * 2 + 1).sum()), (x[::2] - 1).tolist(), c.tolist()])


WANT = _want()


def _env(cache, **extra) -> dict:
    env = dict(os.environ, TRACER_CACHE_DIR=str(cache), TRACER_BACKEND="cpu",
               TRACER_SMALL_GRAPH="0", TRACER_COMPILE="sync", TRACER_COMPILE_WORKERS="0",
               PYTHONWARNINGS="default")
    env.pop("NUMBA_CACHE_DIR", None)  # Numba's cache lives beside the generated modules
    env.pop("XDG_CACHE_HOME", None)   # (an empty one would make Numba's cache relative)
    env.update(extra)
    return env


def _run(cache, prefix=(), **extra) -> tuple[list[str], list[str]]:
    """(stdout lines, tracer's warnings) of PROGRAM run with this cache folder."""
    p = subprocess.run([*prefix, sys.executable, "-c", PROGRAM], cwd=ROOT,
                       env=_env(cache, **extra), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    warned = [ln for ln in p.stderr.splitlines() if "Warning: tracer:" in ln]
    return p.stdout.splitlines(), warned


@pytest.fixture(scope="module")
def filled(tmp_path_factory) -> Path:
    """A cache a first run filled."""
    cache = tmp_path_factory.mktemp("filled")
    out, warned = _run(cache)
    assert out[0] == WANT and not warned
    return cache


@pytest.fixture
def cache(filled, tmp_path) -> Path:
    shutil.copytree(filled, tmp_path / "cache")
    return tmp_path / "cache"


def _modules(cache: Path) -> list[Path]:
    mods = sorted((cache / "gen").glob("b_*.py"))
    assert mods
    return mods


def _rebuilt_with_one_warning(cache: Path) -> None:
    out, warned = _run(cache)
    assert out[0] == WANT
    assert len(warned) == 1 and "damaged" in warned[0], warned
    out, warned = _run(cache)  # repaired: the next process loads it silently
    assert out == [WANT, "disk 2"] and not warned


@pytest.mark.slow
def test_truncated_generated_module_is_rebuilt_with_one_warning(cache):
    for m in _modules(cache):
        m.write_text(m.read_text()[:40])
    _rebuilt_with_one_warning(cache)


@pytest.mark.slow
def test_garbage_generated_module_is_rebuilt_with_one_warning(cache):
    for m in _modules(cache):
        m.write_text("x = 1\n")
    _rebuilt_with_one_warning(cache)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["gen", "gen/index", "gen/__pycache__"])
def test_file_where_a_cache_folder_belongs_is_replaced(tmp_path, where):
    (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / where).write_text("not a folder")
    out, warned = _run(tmp_path)
    assert out[0] == WANT and len(warned) == 1 and "not a folder" in warned[0], warned


@pytest.mark.slow
def test_folders_where_cache_files_belong_are_replaced(cache):
    for f in [*(cache / "gen" / "index").iterdir(), *_modules(cache)]:
        f.unlink()
        (f / "sub").mkdir(parents=True)
    _rebuilt_with_one_warning(cache)


def _in_memory_with_one_warning(out: list[str], warned: list[str]) -> None:
    assert out == [WANT, "disk 0"]
    assert len(warned) == 1 and "compiling in memory" in warned[0], warned


@pytest.mark.slow
@pytest.mark.parametrize("home", [False, True])
def test_cache_folder_that_cannot_be_made_compiles_in_memory_with_one_warning(tmp_path, home):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    if home:  # no writable home: the default cache folder is under it
        out, warned = _run("", HOME=str(blocker / "home"))  # "": the default folder
    else:
        out, warned = _run(blocker / "cache")
    _in_memory_with_one_warning(out, warned)


def _read_only_binds(paths: list[Path]) -> list[str]:
    """A command prefix that runs a program in its own mount namespace, where `paths` are
    read-only bind mounts (for root too, whom file modes do not stop). It enters its working
    folder again, which otherwise stays on the writable mount below."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for a read-only bind mount")
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m is not permitted here")
    mounts = " && ".join(f"mount --bind {p} {p} && mount -o remount,bind,ro {p}" for p in paths)
    return ["unshare", "-m", "sh", "-c", mounts + ' && cd "$PWD" && exec "$@"', "sh"]


@pytest.mark.slow
@pytest.mark.parametrize("what", ["cache", "install-home-cache"])
def test_read_only_cache_install_and_home_compile_in_memory_with_one_warning(filled, tmp_path,
                                                                             what):
    """A read-only cache, filled or not, is not used; a read-only install with no writable
    home changes nothing more: the package's own compiled loops (cpu/scatter.py) are
    generated into the kernel cache too, so their one warning is the cache's."""
    cache = tmp_path / "cache"
    shutil.copytree(filled, cache)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    if what == "cache":
        out, warned = _run(cache, _read_only_binds([cache]))
    else:
        out, warned = _run(cache, _read_only_binds([cache, ROOT]), HOME=str(blocker / "home"))
    _in_memory_with_one_warning(out, warned)


KILLED = """
import time, numpy, tracer.numpy as np
from multiprocessing import resource_tracker
from tracer.cuda_kernels.cpu import compile_pool
x = np.asarray(numpy.linspace(-1, 1, 300))
print(float((np.sin(x) * 3 + 1).sum()), flush=True)
while not (compile_pool._POOL and compile_pool._POOL._processes):
    time.sleep(0.02)
print(*compile_pool._POOL._processes, resource_tracker._resource_tracker._pid, flush=True)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    """Running (a zombie no one reaps yet counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


@pytest.mark.slow
def test_compile_worker_and_resource_tracker_exit_when_the_parent_is_killed(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", KILLED], cwd=ROOT, stdout=subprocess.PIPE,
                         text=True, env=_env(tmp_path, TRACER_COMPILE="tiered",
                                             TRACER_COMPILE_WORKERS="1"))
    try:
        p.stdout.readline()  # the tiered run is over: its deferred compiles start
        pids = [int(v) for v in p.stdout.readline().split()]
    finally:
        p.kill()
        p.wait()
    assert pids
    deadline = time.monotonic() + 5
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [q for q in pids if _alive(q)]
    for q in left:
        os.kill(q, signal.SIGKILL)
    assert not left, f"still running after their parent was killed: {left}"


EXITING = """
import time, numpy, tracer.numpy as np
from multiprocessing import resource_tracker
from tracer.cuda_kernels.cpu import compile_pool
compile_pool.pool().submit(time.sleep, 300)  # stands in for a compile that takes minutes
x = np.asarray(numpy.linspace(-1, 1, 300))
print(float((np.sin(x) * 3 + 1).sum()), float((np.cos(x) * x).max()))
print(*compile_pool._POOL._processes, resource_tracker._resource_tracker._pid)
print(time.time(), flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["tiered", "sync"])
def test_a_process_exits_at_once_with_no_compile_worker_left(tmp_path, mode):
    """With new kernels compiling in the background (tiered) and a compile still running in a
    worker, a process that used tracer exits at once: `capture_output` returns within seconds
    of its last line, not when the compile ends, and none of its workers is left running."""
    p = subprocess.run([sys.executable, "-c", EXITING], cwd=ROOT, capture_output=True,
                       text=True, timeout=120,
                       env=_env(tmp_path, TRACER_COMPILE=mode, TRACER_COMPILE_WORKERS="2"))
    returned = time.time()
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.splitlines()
    pids = [int(v) for v in lines[-2].split()]
    assert len(pids) >= 2  # the workers that started, and the resource tracker
    assert returned - float(lines[-1]) < 10
    workers, tracker = pids[:-1], pids[-1]
    assert not [q for q in workers if _alive(q)]
    deadline = time.monotonic() + 5  # the tracker ends on its pipe's end of file, a moment later
    while _alive(tracker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(tracker)
    assert "Traceback" not in p.stderr and "leaked" not in p.stderr, p.stderr[-3000:]
