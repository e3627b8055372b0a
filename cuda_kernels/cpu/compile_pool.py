"""Getting a program's cpu kernels ready: from Numba's disk cache, or compiled in worker processes.

A program's kernels are known when it is lowered, and so, nearly always, are the argument types
they will be launched with (`CpuBackend.signature`). With those in hand:
- a kernel already on disk is loaded at once, without Numba's per-process re-registration of
  its whole library (`CpuBackend.load`: 3 ms a kernel, against about 250 ms for the first);
- new kernels compile in a pool of worker processes (`spawn`: forking a process where OpenMP
  has run kills the child; starting a spawned worker does not block, where a forkserver's
  first fork waits for its warm-up). Workers write Numba's disk cache, and the parent loads
  from it. In `sync` mode the parent compiles too, from the back of the queue, and where it
  meets the workers compiles a job one of them holds rather than wait for it. A kernel is compiled
  from the same source with the same types whichever worker takes it, so the program's results
  do not depend on the number of workers.
- in `tiered` mode (TRACER_COMPILE, the default) the program does not wait: a kernel still
  compiling is run by NumPy on tiles (tiled.py), and replaces that path when it is ready. `sync`
  waits for every kernel, as benchmarks want.

A signature that turns out wrong at launch costs one compile in this process, never a wrong
result: Numba dispatches on the real argument types.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import TYPE_CHECKING

from tracer.ir import log
from tracer.ir.config import CONFIG
from tracer.ir.stats import STATS
from . import compile_worker
from ..compiler import Kernel, module_path, writable
from ..progress import Bar

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

_POOL: ProcessPoolExecutor | None = None
_POOL_SIZE = 0
_DEFERRED: list[Kernel] = []  # tiered kernels whose compile starts after the current run
_HOOKED = False  # whether _drop_queued_compiles is registered to run at exit


def workers() -> int:
    """Compile worker processes: TRACER_COMPILE_WORKERS, else one fewer than the cpu count (at
    most 7), at least one: this process keeps a core, as it compiles too in sync mode and runs
    the NumPy tier in tiered mode."""
    if CONFIG.compile_workers >= 0:
        return CONFIG.compile_workers
    mp = sys.modules.get("multiprocessing")  # (imported in any process it started)
    if mp is not None and mp.current_process().daemon:
        return 0  # a daemon may not start processes (a Dask worker, a multiprocessing pool's)
    return max(1, min(os.cpu_count() or 1, 8) - 1)


def pool() -> ProcessPoolExecutor:
    global _POOL, _POOL_SIZE, _HOOKED
    n = workers()
    if _POOL is None or _POOL_SIZE != n:
        if _POOL is not None:
            _POOL.shutdown(wait=True)
        # imported with the first pool: a program whose kernels are all on disk never needs them
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        if not _HOOKED:
            # threading's exit hooks run before atexit's, and last registered first: registered
            # after concurrent.futures.process registers its own, this runs before that joins
            # the pool
            threading._register_atexit(_drop_queued_compiles)
            _HOOKED = True
        _POOL = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"),
                                    initializer=compile_worker.exit_with_parent,
                                    initargs=(os.getpid(),))
        _POOL_SIZE = n
    return _POOL


def shutdown() -> None:
    global _POOL
    if _POOL is not None:
        _POOL.shutdown(wait=True)
        _POOL = None


def _drop_queued_compiles() -> None:
    """At exit, background compiles are dropped, the started ones too (their work is only a
    cache fill): a short script must not wait for kernels it no longer needs, and a worker
    left compiling would outlive it holding its stdout and stderr, so a caller reading those
    to their end would wait for it."""
    if _POOL is not None:
        manager = getattr(_POOL, "_executor_manager_thread", None)  # shutdown() forgets it
        workers_ = list((getattr(_POOL, "_processes", None) or {}).values())
        _POOL.shutdown(wait=False, cancel_futures=True)
        for p in workers_:
            p.terminate()  # the manager thread sees them gone and joins them
        # shutdown() has woken the pool's manager thread; CPython's own exit hook would wake it
        # again through a pipe that thread may be closing at that moment (EBADF on 3.11).
        # threading's shutdown still joins the thread.
        if manager is not None:
            from concurrent.futures import process  # (loaded with the pool)
            getattr(process, "_threads_wakeups", {}).pop(manager, None)


@contextlib.contextmanager
def _main_hidden():
    """A worker must not run the user's script again, as a spawned or forkserver child does
    to rebuild `__main__` (the job it runs lives in compile_worker): the script's path is
    hidden while workers start."""
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__.pop(k) for k in ("__file__", "__spec__")
             if main is not None and k in main.__dict__}
    if main is not None:
        main.__spec__ = None
    try:
        yield
    finally:
        if main is not None:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)


def _submit(k: Kernel, sig: tuple) -> Future:
    with _main_hidden():
        return pool().submit(compile_worker.compile_one, module_path(k.module), k.module, k.name,
                             sig)


def prepare(be, wanted: list[tuple[Kernel, tuple]]) -> None:
    """Make (kernel, argument types) pairs ready before the program runs; see the module doc."""
    missing: list[tuple[Kernel, tuple]] = []
    seen = set()
    for k, sig in wanted:
        if (k.name, sig) in seen or k.pending is not None or be.has(k, sig):
            continue
        seen.add((k.name, sig))
        t0 = time.perf_counter()
        if be.load(k, sig):
            STATS.compile_s += time.perf_counter() - t0
            STATS.cache_hits_disk += 1
        else:
            missing.append((k, sig))
    if not missing or workers() == 0 or not writable():
        return  # compiled in this process at launch (a worker's compile reaches us on disk)
    tiered = CONFIG.compile_mode == "tiered"
    if not tiered and len(missing) < 2:
        return  # one kernel: a worker would only add its start-up
    if tiered:  # workers start once this run is over: starting them slows its NumPy tier 4x
        for k, sig in missing:
            k.pending = (None, sig)
            _DEFERRED.append(k)
        return
    t0 = time.perf_counter()
    if CONFIG.debug >= 1:
        log.debug(f"compiling {len(missing)} kernels here and in {workers()} worker "
                  "processes")
    # Workers take jobs from the front of the pool's queue, this process from the back. Where
    # the two meet, this process compiles a job already handed to a worker rather than wait
    # for it (that worker may still be starting); a job a worker finished is loaded.
    futures = [(k, sig, _submit(k, sig)) for k, sig in missing]
    with Bar(len(futures)) as bar:
        for k, sig, f in reversed(futures):
            if f.done():
                finish(be, k, sig, f)
                bar.step()
                continue
            f.cancel()  # dropped from the queue if no worker has it yet
            t1 = time.perf_counter()
            k.fn.compile(sig)
            STATS.kernels_compiled += 1
            bar.step()
            if CONFIG.debug >= 1:
                log.debug(f"compiled {k.name} here in {time.perf_counter() - t1:.2f} s")
    STATS.compile_s += time.perf_counter() - t0


def start_deferred() -> None:
    """Hand the kernels the last run deferred to the workers, in the background."""
    if not _DEFERRED:
        return
    if CONFIG.debug >= 1:
        log.debug(f"compiling {len(_DEFERRED)} kernels in the background")
    for k in _DEFERRED:
        if k.pending is not None and k.pending[0] is None:
            k.pending = (_submit(k, k.pending[1]), k.pending[1])
    _DEFERRED.clear()


def finish(be, k: Kernel, sig: tuple, f: Future) -> None:
    """A worker's compile is done: load its result from disk (if that fails, the launch
    compiles in this process)."""
    k.pending = None
    try:
        f.result()
    except Exception as e:  # a worker that died or failed: compile here instead
        if CONFIG.debug >= 1:
            log.debug(f"worker compile of {k.name} failed ({e!r}); compiling here")
        return
    if be.load(k, sig):
        STATS.kernels_compiled += 1


def ready(be, k: Kernel) -> bool:
    """Whether k may launch now: no background compile, or one that has just finished."""
    if k.pending is None:
        return True
    f, sig = k.pending
    if f is None or not f.done():
        return False
    finish(be, k, sig, f)
    return True
