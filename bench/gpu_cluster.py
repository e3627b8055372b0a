"""The cluster section of bench/gpu.py (issue 23, item 5): with dask_cuda importable, a
dask_cuda.LocalCUDACluster (one worker per GPU) runs a tracer.cluster evaluation on every
worker's cuda backend: the nearest squared distance from each row of x (N, D) to the rows of
y (M, D), both drawn on the workers, checked on x's first rows against NumPy in float64.
Skipped without dask_cuda and under --sim (the simulator is one process's).

    python -m bench.gpu_cluster [--n 200000]   # this section alone
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402

N, M, D = 200_000, 20_000, 64
CHECKED = 256  # rows of x checked against NumPy
TOLERANCE = 1e-4  # max|got - ref| / max|ref|, float32 sums of 64 terms against float64
COUNTERS = ("kernels_launched", "split_chunks", "h2d_bytes", "d2h_bytes")


def run(sim: bool, n: int = N, make_cluster=None) -> dict:
    """The section's record. `make_cluster`: a function returning the cluster to use (a
    LocalCUDACluster of one thread per worker by default)."""
    if sim:
        return {"skipped": "the simulator runs in one process", "ok": True}
    if make_cluster is None:
        if importlib.util.find_spec("dask_cuda") is None:
            return {"skipped": "dask_cuda is not importable", "ok": True}
        from dask_cuda import LocalCUDACluster

        def make_cluster():
            return LocalCUDACluster(threads_per_worker=1, dashboard_address=None)
    from distributed import Client

    import tracer
    import tracer.numpy as tnp
    t0 = time.perf_counter()
    with make_cluster() as lc, Client(lc) as client:
        out = {"workers": len(client.scheduler_info()["workers"]),
               "start_s": time.perf_counter() - t0}
        with tracer.cluster(client, budget="256 MiB", remote_bytes=0) as cl:
            out.update(backend=cl.worker_backend, worker_budget=cl.worker_budget.limit,
                       n=n, m=M, d=D)
            rng = tnp.random.default_rng(0)
            x = rng.standard_normal((n, D), dtype=numpy.float32)
            y = rng.standard_normal((M, D), dtype=numpy.float32)
            before = {c: getattr(tracer.stats(), c) for c in COUNTERS}
            for run_ in ("first_s", "second_s"):  # the second: the workers' kernels compiled
                t = time.perf_counter()
                got = numpy.asarray(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1).min(1))
                out[run_] = time.perf_counter() - t
            out.update({c: getattr(tracer.stats(), c) - v for c, v in before.items()})
            hx = numpy.asarray(x[:CHECKED]).astype(numpy.float64)
            hy = numpy.asarray(y).astype(numpy.float64)
    ref = ((hx[:, None, :] - hy[None, :, :]) ** 2).sum(-1).min(1)
    out["shape_ok"] = got.shape == (n,) and got.dtype == numpy.float32
    out["rel_err"] = float(numpy.abs(got[:CHECKED] - ref).max() / numpy.abs(ref).max())
    out["ok"] = bool(out["shape_ok"] and out["rel_err"] <= TOLERANCE and
                     out["backend"] == "cuda")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=N, help="rows of x")
    args = ap.parse_args(argv)
    res = run(False, args.n)
    print(json.dumps(res, indent=1))
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
