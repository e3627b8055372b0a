"""tracer on a Dask cluster (issue 23): 1 worker against 2, and tracer's chunks against
dask.array with NumPy chunks, on the same program in one run.

    python -m bench.bench_dask [--n 40000] [--m 40000] [--d 64] [--vs-n 8000] [--limit "1 GiB"]
                               [--repeat 2]
    python -m bench.bench_dask --reduce-gib 4        # the 4 GiB reduction: client growth

The program is the naive minimum distance `((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
.min(1)` with x (N, D) and y (M, D) drawn on the cluster (tracer: `default_rng(0)` inside
`tracer.cluster`, drawn by the workers in seeded blocks; dask.array: `da.random.default_rng(0)`
with x chunked by rows, y in one chunk, chunks sized so that a block's N x M x D difference is
about 128 MiB): 1 worker against 2 at N x M, then tracer against dask.array at --vs-n (on the
most workers; dask.array's blocks make N x M much slower). Every run is on a LocalCluster of
processes with one thread each and the memory limit given, all clusters up at once and their
runs alternating (1 worker, 2 workers, 1, 2, ...: a shared host's load drifts); reported: the
best of --repeat runs after a warm-up (--repeat 0: the one cold run) and every run's time and
CPU time of this process (the client's, and the scheduler's on a LocalCluster), the most
memory any worker held (Dask's own reporting: the scheduler's per-worker process memory,
which workers send in heartbeats, every 0.5 s), and for
--reduce-gib the client's own growth. `--check` compares tracer's result with a blocked NumPy
reference on the same values (gathered from the workers). JSON to --out.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("TRACER_COMPILE", "sync")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402
import psutil  # noqa: E402


def dist_min(m, x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1).min(1)


class WorkerMemory:
    """The most process memory any worker reported while the block ran (Dask's reporting)."""

    def __init__(self, client):
        self.client, self.peak, self._stop = client, 0, threading.Event()

    def _poll(self):
        while not self._stop.is_set():
            for w in self.client.scheduler_info()["workers"].values():
                self.peak = max(self.peak, w["metrics"]["memory"])
            self._stop.wait(0.1)  # (a worker reports its memory in heartbeats, every 0.5 s)

    def __enter__(self):
        self._t = threading.Thread(target=self._poll, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def _cluster(n_workers: int, limit: str):
    from distributed import Client, LocalCluster
    lc = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      memory_limit=limit, dashboard_address=":0")
    return lc, Client(lc)


def run_tracer(cl, n, m, d):
    """One run in the cluster block `cl` (entered again each run: the same worker budget, so
    the same chunks and kernels): (seconds, the most memory a worker held, the result, (x, y),
    the CPU seconds of this process: the client's and, on a LocalCluster, the scheduler's)."""
    import tracer.numpy as tnp
    with cl:
        rng = tnp.random.default_rng(0)
        x = rng.standard_normal((n, d))
        y = rng.standard_normal((m, d))
        with WorkerMemory(cl.client) as mem:
            t0, c0 = time.perf_counter(), time.process_time()
            out = numpy.asarray(dist_min(tnp, x, y))
            sec, cpu = time.perf_counter() - t0, time.process_time() - c0
    return sec, mem.peak, out, (x, y), cpu


def run_dask_array(client, n, m, d, repeat):
    import dask.array as da
    rows = max(1, (128 << 20) // (m * d * 8))
    times = []
    for i in range(repeat + 1):
        rng = da.random.default_rng(0)
        x = rng.standard_normal((n, d), chunks=(rows, d))
        y = rng.standard_normal((m, d), chunks=(m, d))
        with WorkerMemory(client) as mem:
            t0 = time.perf_counter()
            dist_min(da, x, y).compute()
            if i or not repeat:
                times.append(time.perf_counter() - t0)
    return min(times), mem.peak


def reduce_big(client, gib: float, budget):
    """A reduction over `gib` GiB drawn on the workers: its time and the client's growth."""
    import tracer
    import tracer.numpy as tnp
    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    with tracer.cluster(client, budget=budget, remote_bytes=0):
        n = int(gib * 2**30 / 8 / 64)
        x = tnp.random.default_rng(1).standard_normal((n, 64))
        with WorkerMemory(client) as mem:
            t0 = time.perf_counter()
            total = float(((x - 0.5) ** 2).sum())
            sec = time.perf_counter() - t0
    return {"gib": gib, "rows": n, "seconds": sec, "sum_over_n": total / x.size,
            "client_growth_mib": (proc.memory_info().rss - rss0) / 2**20,
            "worker_peak_mib": mem.peak / 2**20}


def blocked_reference(x, y, block=512, sample=64):
    """NumPy's minimum distances in blocks of rows: every row by the GEMM form
    |x|^2 + |y|^2 - 2 x.y (the naive form would write N x M x D), and `sample` rows spread
    over x by the naive form itself, which the GEMM form must agree with."""
    out = numpy.empty(x.shape[0])
    yy = (y * y).sum(1)
    for lo in range(0, x.shape[0], block):
        xs = x[lo:lo + block]
        d = (xs * xs).sum(1)[:, None] + yy[None, :] - 2.0 * (xs @ y.T)
        out[lo:lo + block] = numpy.maximum(d, 0).min(1)
    rows = numpy.linspace(0, x.shape[0] - 1, sample).astype(int)
    for r in rows:
        exact = ((x[r][None, :] - y) ** 2).sum(-1).min()
        assert abs(exact - out[r]) <= 1e-9 * max(exact, 1e-300), (r, exact, out[r])
        out[r] = exact
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=40000)
    ap.add_argument("--m", type=int, default=40000)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--limit", default="1 GiB", help="each worker's memory limit")
    ap.add_argument("--budget", default="256 MiB", help="the client's budget")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--vs-n", type=int, default=8000,
                    help="N = M of the comparison with dask.array (on the most workers)")
    ap.add_argument("--no-dask-array", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--reduce-gib", type=float, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "dask.json"))
    a = ap.parse_args(argv)
    res: dict = {"n": a.n, "m": a.m, "d": a.d, "limit": a.limit, "cpus": os.cpu_count(),
                 "runs": []}
    if a.reduce_gib:
        lc, client = _cluster(2, a.limit)
        with lc, client:
            res["reduce"] = reduce_big(client, a.reduce_gib, a.budget)
        print(json.dumps(res["reduce"], indent=1))
    else:
        import tracer
        counts = [int(w) for w in a.workers.split(",")]
        with contextlib.ExitStack() as stack:
            clusters = {}
            for k in counts:  # every cluster up: their runs alternate (the host's load drifts)
                lc, client = _cluster(k, a.limit)
                stack.enter_context(lc)
                stack.enter_context(client)
                clusters[k] = tracer.cluster(client, budget=a.budget, remote_bytes=0)
            times = {k: [] for k in counts}
            cpus = {k: [] for k in counts}
            peaks = {k: 0 for k in counts}
            for i in range(a.repeat + 1):
                for k in counts:
                    sec, peak, out, (x, y), cpu = run_tracer(clusters[k], a.n, a.m, a.d)
                    if i or not a.repeat:  # (--repeat 0: the one cold run)
                        times[k].append(sec)
                        cpus[k].append(cpu)
                        peaks[k] = max(peaks[k], peak)
            for k in counts:
                row = {"workers": k, "tracer_s": min(times[k]), "tracer_runs_s": times[k],
                       "client_cpu_s": cpus[k], "tracer_worker_peak_mib": peaks[k] / 2**20}
                if a.check:
                    with tracer.cluster(clusters[k].client, budget="90%"):
                        hx, hy = numpy.asarray(x), numpy.asarray(y)
                    ref = blocked_reference(hx, hy)
                    row["max_rel_err"] = float(numpy.max(numpy.abs(out - ref) /
                                                         numpy.maximum(numpy.abs(ref), 1e-300)))
                res["runs"].append(row)
                print(json.dumps(row))
            if len(counts) == 2:
                res["speedup_2_over_1"] = res["runs"][0]["tracer_s"] / res["runs"][1]["tracer_s"]
                print("2 workers over 1 (best runs):", round(res["speedup_2_over_1"], 2),
                      "; run by run:", [round(p / q, 2) for p, q in zip(*times.values())])
            if not a.no_dask_array:
                k = max(counts)  # dask.array writes every N x M x D block: a smaller problem
                n = a.vs_n
                cl = tracer.cluster(clusters[k].client, budget=a.budget, remote_bytes=0)
                tsec = [run_tracer(cl, n, n, a.d)[:2] for _ in range(a.repeat + 1)]
                tsec = tsec[1:] or tsec
                dsec, dpeak = run_dask_array(cl.client, n, n, a.d, a.repeat)
                res["vs_dask_array"] = {
                    "n": n, "m": n, "workers": k, "tracer_s": min(t for t, _ in tsec),
                    "tracer_worker_peak_mib": max(p for _, p in tsec) / 2**20,
                    "dask_array_s": dsec, "dask_array_worker_peak_mib": dpeak / 2**20,
                    "tracer_over_dask_array": min(t for t, _ in tsec) / dsec}
                print(json.dumps(res["vs_dask_array"]))
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
