"""Benchmark for the gather/scatter issue: writes into big buffers and `np.add.at`, tracer
against NumPy eager in one process (cpu backend).

    python bench/bench_indexing.py            # full sizes (a 1.6 GB buffer; 1e7 updates)
    python bench/bench_indexing.py --quick    # tiny sizes: a smoke run

- rows:   200 rows written one at a time into a 4000 x 100000 float32 buffer made with
          `zeros`, then evaluated (tracer) / the same loop in NumPy. Target: <= 3x NumPy.
          A copy per write would move 200 x 1.6 GB; the plan's bytes_copied is reported.
- add.at: 1e7 random indices into 1e5 bins, int64 (must match exactly) and float64 (1e-6
          relative). Target: faster than NumPy's `np.add.at`.

Each timed call builds the whole program (buffer, writes) and evaluates it; one warm-up call,
then the median of --repeat calls.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("TRACER_BACKEND", "cpu")
os.environ.setdefault("TRACER_COMPILE", "sync")  # timings of compiled kernels, not of the NumPy tier
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402

import tracer  # noqa: E402
import tracer.numpy as tnp  # noqa: E402
from bench.bench_foundation import machine_info, timed  # noqa: E402

FULL = dict(rows=4000, cols=100000, writes=200, updates=10_000_000, bins=100_000)
QUICK = dict(rows=40, cols=100, writes=20, updates=1000, bins=50)


def rows(sz, repeat):
    src = numpy.random.default_rng(0).standard_normal((sz["writes"], sz["cols"]))
    src = src.astype(numpy.float32)
    step = sz["rows"] // sz["writes"]

    def program(m):
        buf = m.zeros((sz["rows"], sz["cols"]), m.float32)
        for i in range(sz["writes"]):
            buf[i * step] = src[i]
        return buf

    _, t_tr, _ = timed(lambda: tracer.evaluate(program(tnp)), repeat)
    _, t_np, _ = timed(lambda: program(numpy), repeat)
    lazy = program(tnp)
    copied = tracer.explain(lazy).bytes_copied
    ok = numpy.array_equal(numpy.asarray(lazy), program(numpy))
    size = sz["rows"] * sz["cols"] * 4
    return [f"{sz['writes']} row writes into a {size / 1e9:.2f} GB float32 buffer", t_tr, t_np,
            "<= 3", t_tr / t_np <= 3 and ok and copied == 0,
            f"bytes_copied {copied}; values equal: {ok}"]


def add_at(sz, repeat, dtype):
    rng = numpy.random.default_rng(0)
    idx = rng.integers(0, sz["bins"], sz["updates"])
    vals = (rng.standard_normal(sz["updates"]) * 100).astype(dtype)
    ti, tv = tnp.asarray(idx), tnp.asarray(vals)

    def lazy():
        a = tnp.zeros(sz["bins"], dtype)
        tnp.add.at(a, ti, tv)
        return tracer.evaluate(a)

    def eager():
        a = numpy.zeros(sz["bins"], dtype)
        numpy.add.at(a, idx, vals)
        return a

    _, t_tr, _ = timed(lazy, repeat)
    _, t_np, _ = timed(eager, repeat)
    got, want = numpy.asarray(lazy()), eager()
    if dtype == numpy.int64:
        ok, acc = numpy.array_equal(got, want), f"exact: {numpy.array_equal(got, want)}"
    else:
        err = float(numpy.max(numpy.abs(got - want)) / numpy.max(numpy.abs(want)))
        ok, acc = err <= 1e-6, f"max rel err {err:.1e}"
    return [f"add.at {sz['updates']:.0e} indices into {sz['bins']:.0e} bins, "
            f"{numpy.dtype(dtype).name}", t_tr, t_np, "< 1", t_tr < t_np and ok, acc]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one timed call")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "indexing.md"))
    args = ap.parse_args(argv)
    sz, repeat = (QUICK, 1) if args.quick else (FULL, args.repeat)
    results = [rows(sz, repeat), add_at(sz, repeat, numpy.int64),
               add_at(sz, repeat, numpy.float64)]
    lines = machine_info(os.environ["TRACER_BACKEND"]) + [
        f"- one warm-up call, then median of {repeat}", "",
        "| program | tracer ms | numpy ms | tracer / numpy | target | met | notes |",
        "| --- | ---: | ---: | ---: | --- | --- | --- |"]
    for what, t_tr, t_np, target, ok, notes in results:
        lines.append(f"| {what} | {t_tr * 1e3:.2f} | {t_np * 1e3:.2f} | {t_tr / t_np:.2f} | "
                     f"{target} | {'yes' if ok else 'no'} | {notes} |")
    text = "\n".join(lines)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
