"""What a compile worker runs: `compile_one` per kernel. A worker's first job also pays
Numba's one-off set-up in that process (about a second); no warm-up job runs before it, as
one would only add its own compile to that."""
from __future__ import annotations

import os
import threading
import time

from ..compiler import import_module

PARENT_POLL_S = 0.2


def exit_with_parent(parent: int) -> None:
    """Pool initializer: end this worker when its parent is gone. A parent killed outright
    (SIGKILL) never shuts its pool down, and a worker waiting for a job would wait forever:
    it holds the write end of its own job queue, so it never reads end-of-file there, and
    while it lives so does the resource tracker whose pipe it also holds."""
    threading.Thread(target=_watch, args=(parent,), name="exit-with-parent",
                     daemon=True).start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:  # a dead parent's children are handed to another process
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def compile_one(path: str, module: str, name: str, sig: tuple) -> float:
    """Compile kernel `name` of generated module `module` for argument types `sig`; Numba's
    disk cache keeps the result for the parent. Returns the seconds it took."""
    t0 = time.perf_counter()
    # workers run only where the kernel cache is writable: Numba's disk cache is on
    fn = getattr(import_module(module, path, {"_CACHE": True}), name)
    fn.compile(sig)
    return time.perf_counter() - t0
