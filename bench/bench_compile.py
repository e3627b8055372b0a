"""Compile-time benchmarks, each case in fresh processes with its own kernel cache folder.

    python bench/bench_compile.py [--repeat 3]

- warm: a 10-kernel program run by a fresh process whose disk cache is warm: compile+load
  (tracer.stats().compile_s + load_s) and the whole evaluation;
- eight: a graph of 8 new kernels compiled one by one in the process, against batched and in
  worker processes (TRACER_COMPILE=sync both times);
- first: time to first result of a never-seen `a*b + c*sin(d) - exp(-a*a)` on 2e7 float32,
  tracer (tiered) written lazily on `np.asarray` snapshots of the inputs, and tracer.jit
  called on the numpy arrays as jax.jit is, against jax.jit's first call, each in a fresh
  process of the same run, so that tracer's background compile does not slow jax (jax
  skipped where not installed).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TEN = """
import json, time, numpy
t0 = time.perf_counter()
import tracer, tracer.numpy as np
t1 = time.perf_counter()
a = np.asarray(numpy.arange(1000, dtype=numpy.float64)); b = np.asarray(numpy.ones((50, 20)))
outs = [(a*2+1).sum(), np.sin(a).max(), (a*a).argmax(), np.exp(-a).mean(), (b*3).sum(axis=0),
        (b+1).sum(axis=1), np.sqrt(a+1).std(), (a>3).any(), np.tanh(a).min(), (b*b).T.copy()]
t2 = time.perf_counter()
tracer.evaluate(*outs)
t3 = time.perf_counter()
s = tracer.stats()
print(json.dumps(dict(import_s=t1-t0, eval_s=t3-t2, compile_load_s=s.compile_s+s.load_s,
                      launched=s.kernels_launched, compiled=s.kernels_compiled,
                      disk=s.cache_hits_disk)))
"""

EIGHT = """
import json, time, numpy
import tracer, tracer.numpy as np
x = np.asarray(numpy.linspace(0, 1, 1 << 17)); m = np.asarray(numpy.ones((256, 512)))
outs = [np.sin(x) * 3 + 1, (x * x).sum(), np.exp(-x).max(), (m * 2).sum(axis=0),
        (m + 1).sum(axis=1), np.sqrt(x + 1).std(), np.tanh(x).argmin(), (m * m).T * 1.5]
t0 = time.perf_counter()
tracer.evaluate(*outs)
s = tracer.stats()
print(json.dumps(dict(eval_s=time.perf_counter()-t0, compiled=s.kernels_compiled,
                      launched=s.kernels_launched)))
"""

FIRST = """
import json, time, numpy
rng = numpy.random.default_rng(0)
a, b, c, d = (rng.standard_normal(20_000_000, dtype=numpy.float32) for _ in range(4))
import sys
out = {}
try:
    if sys.argv[1] != "jax":
        raise ImportError
    import jax, jax.numpy as jnp
    jax.config.update("jax_platforms", "cpu")
    f = jax.jit(lambda a, b, c, d: a*b + c*jnp.sin(d) - jnp.exp(-a*a))
    t0 = time.perf_counter()  # from numpy arrays, as tracer's timing is: both copy them in
    numpy.asarray(f(a, b, c, d))
    out["jax_first_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    numpy.asarray(f(a, b, c, d))
    out["jax_second_s"] = time.perf_counter() - t0
except ImportError:
    pass
if sys.argv[1] == "jax":
    print(json.dumps(out)); sys.exit(0)
import tracer, tracer.numpy as np
if sys.argv[1] == "jit":  # as jax.jit is called: numpy arguments, bound without a copy
    f = tracer.jit(lambda a, b, c, d: a*b + c*np.sin(d) - np.exp(-a*a))
    t0 = time.perf_counter()
    numpy.asarray(f(a, b, c, d))
    out["tracer_jit_first_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    numpy.asarray(f(a, b, c, d))
    out["tracer_jit_second_s"] = time.perf_counter() - t0
    print(json.dumps(out)); sys.exit(0)
t0 = time.perf_counter()
A, B, C, D = (np.asarray(v) for v in (a, b, c, d))
r = numpy.asarray(A*B + C*np.sin(D) - np.exp(-A*A))
out["tracer_first_s"] = time.perf_counter() - t0
out["tiered_runs"] = tracer.stats().tiered_runs
ref = a.astype(numpy.float64)*b + c*numpy.sin(d.astype(numpy.float64)) - numpy.exp(-(a.astype(numpy.float64)**2))
out["tracer_max_rel_err"] = float(numpy.max(numpy.abs(r - ref) / (numpy.abs(ref) + 1e-3)))
t0 = time.perf_counter()
numpy.asarray(A*B + C*np.sin(D) - np.exp(-A*A))
out["tracer_second_s"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def run(code: str, cache: str, *argv, **env) -> dict:
    # small arrays on purpose: their kernels are what is timed, so they must not run by NumPy
    e = dict(os.environ, TRACER_CACHE_DIR=cache, TRACER_BACKEND="cpu", TRACER_SMALL_GRAPH="0",
             **env)
    e.pop("NUMBA_CACHE_DIR", None)
    p = subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, env=e, capture_output=True,
                       text=True, timeout=600)
    if p.returncode:
        raise RuntimeError(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["warm", "eight", "first"])
    args = ap.parse_args(argv)
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "warm"):
            cache = os.path.join(tmp, "warm")
            run(TEN, cache, TRACER_COMPILE="sync")  # fills the cache
            rs = [run(TEN, cache, TRACER_COMPILE="sync") for _ in range(args.repeat)]
            print(f"warm cache, 10-kernel program ({rs[0]['launched']} kernels, "
                  f"{rs[0]['disk']} from disk, {rs[0]['compiled']} compiled), fresh process, "
                  f"median of {args.repeat}:")
            print(f"  compile+load {1e3 * med(r['compile_load_s'] for r in rs):.1f} ms, whole "
                  f"evaluation {1e3 * med(r['eval_s'] for r in rs):.1f} ms, import tracer "
                  f"{1e3 * med(r['import_s'] for r in rs):.0f} ms")
        if args.only in (None, "eight"):
            one, par = [], []
            for i in range(args.repeat):
                one.append(run(EIGHT, os.path.join(tmp, f"one{i}"), TRACER_COMPILE="sync",
                               TRACER_COMPILE_WORKERS="0"))
                par.append(run(EIGHT, os.path.join(tmp, f"par{i}"), TRACER_COMPILE="sync"))
            a, b = med(r["eval_s"] for r in one), med(r["eval_s"] for r in par)
            print(f"8 new kernels ({one[0]['launched']} launched), fresh process and cache, "
                  f"median of {args.repeat}: one by one {a:.2f} s, batched+parallel "
                  f"({os.cpu_count()} cores) {b:.2f} s: {a / b:.2f}x")
        if args.only in (None, "first"):
            rs = []
            for i in range(args.repeat):  # each in a fresh process, one after the other
                r = run(FIRST, os.path.join(tmp, f"first{i}"), "tracer")
                r.update(run(FIRST, os.path.join(tmp, f"jit{i}"), "jit"))
                r.update(run(FIRST, os.path.join(tmp, f"jax{i}"), "jax"))
                rs.append(r)
            print(f"never-seen W1 on 2e7 float32, first result, median of {args.repeat}:")
            for k in ("tracer_first_s", "tracer_jit_first_s", "jax_first_s", "tracer_second_s",
                      "tracer_jit_second_s", "jax_second_s"):
                if k in rs[0]:
                    print(f"  {k}: {1e3 * med(r[k] for r in rs):.0f} ms")
            print(f"  tracer tiered runs {rs[0]['tiered_runs']}, max rel err "
                  f"{max(r['tracer_max_rel_err'] for r in rs):.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
