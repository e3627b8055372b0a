"""The room a chunk of a `tracer.cluster` evaluation has on the cluster's workers, read on each
worker (tracer/dask_cluster.py sizes the chunks to the smallest): a cpu worker's from its
memory limit, a cuda worker's (dask_cuda.LocalCUDACluster: one per GPU) from its device's
memory too."""
from __future__ import annotations

import math
import sys

from .budget import Budget

# the part of a worker's memory limit its chunks may plan for: Dask pauses a worker at 80% of
# its limit, counting what the process already holds, and a chunk has held up to about twice
# its plan (its rows made and cut, results on their way out): 4 GiB reduced on two 1 GiB
# workers peaked at 830 MiB with 0.6, 550 MiB with 0.45 (bench/bench_dask.py --reduce-gib 4)
WORKER_FRACTION = 0.45
COMPILE_BYTES = 128 << 20  # what compiling a chunk's kernels may take beside it
# the part of a cuda worker's device memory its chunks may plan for: a guess, not yet measured
# on a GPU (Dask does not pause a worker for device memory; a chunk's results go to the host)
DEVICE_FRACTION = 0.7


def budget(client, backend: str | None) -> tuple[str, Budget]:
    """(the workers' backend, what one chunk may allocate on the smallest worker: see room).
    The workers must agree on the backend (else `backend=` chooses it)."""
    rooms = client.run(room, WORKER_FRACTION, backend)
    if not rooms:
        raise ValueError("tracer.cluster: the client's cluster has no workers")
    kinds = sorted({be for be, _ in rooms.values()})
    if len(kinds) > 1:
        raise ValueError(f"tracer.cluster: the workers run different backends "
                         f"({', '.join(kinds)}): pass backend= to choose one")
    limit = max(1, min(r for _, r in rooms.values()))
    return kinds[0], Budget(limit, limit)  # chunks as big as fit: every chunk a few Dask tasks


def room(fraction: float, backend: str | None, dask_worker=None) -> tuple[str, int]:
    """On a worker: (its backend, `backend` or its own config's; the room of one chunk):
    `fraction` of its memory limit (of its host's memory where it has none), less what the
    process holds once tracer is loaded there (loaded now, so the first chunk does not find
    less room than planned); on cuda, no more than its device's room (device_room)."""
    import numba
    import psutil
    from tracer.cuda_kernels.backends import default_backend  # (on the worker, when it starts)
    from tracer.ir.config import CONFIG  # (on the worker, when it starts)

    be = default_backend(backend or CONFIG.backend)
    numba.njit(lambda x: x + 1)(1)  # LLVM's own memory, held from the first compile on
    limit = dask_worker.memory_manager.memory_limit or psutil.virtual_memory().total
    held = psutil.Process().memory_info().rss + COMPILE_BYTES
    host = max(int(limit * fraction) - held, int(limit * 0.05))
    return be, host if be == "cpu" else min(host, device_room(dask_worker))


def device_room(dask_worker) -> int:
    """What a chunk may plan for on a cuda worker's device: DEVICE_FRACTION of its memory (of
    dask-cuda's device_memory_limit where less), less what is in use there now (tracer's idle
    pool aside). A device of no known size (the simulator's) leaves the host's room."""
    free, total, idle = device_memory()
    if not (math.isfinite(free) and math.isfinite(total)):
        return sys.maxsize
    # dask-cuda's DeviceHostFile spills past device_memory_limit: its device buffer's `n`
    cap = getattr(getattr(getattr(dask_worker, "data", None), "device_buffer", None), "n", None)
    limit = total if not cap else min(cap, total)
    return max(int(limit * DEVICE_FRACTION) - int(total - free - idle), int(limit * 0.05))


def device_memory() -> tuple[float, float, int]:
    """(free, total, tracer's idle pool) bytes of this process's device."""
    from tracer.cuda_kernels import backends  # (on the worker, when it starts)
    be = backends.get("cuda")
    info = be._api().current_context().get_memory_info()
    return info.free, info.total, be.pool.idle
