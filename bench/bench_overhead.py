"""Host overhead of the lazy path (issue 19, item 6): what one evaluation that hits the plan
cache costs beyond its kernels, and what recording one op costs.

    TRACER_EAGER_SIZE=0 TRACER_SMALL_GRAPH=0 python -m bench.bench_overhead [--repeat 2000]
    ... [--profile hit|record]   (cProfile of that loop, sorted by tottime)

Adaptive laziness off and compiled kernels (what the test suite does), cpu backend, warm
(kernels compiled, plan cached):
- hit: `numpy.asarray(x + y)` and `float((a * b + c).sum())` on 10-element float64 arrays, in
  a loop; per evaluation, less the time the same loop takes to record the expression alone.
  The kernels' own time on 10 elements is below a microsecond.
- record: `x = x * 1.0001 + y`, 1000 ops on 10-element float32 arrays, nothing evaluated;
  per op, beside NumPy's per-op time for the same loop.
Times are the lower quartile of the repeats (steady state, less scheduler noise).

    python -m bench.bench_overhead --eager [--repeat 2000] [--profile eager]

The eager section (issue 19, items 1 and 3): adaptive laziness on (the default eager size),
the per-op cost of ops and element access on small realized arrays (float64, 10 elements and
20x20), beside NumPy's for the same statement. Each row times a loop of 20 statements.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TRACER_COMPILE", "sync")  # compiled kernels, not the NumPy tier
os.environ.setdefault("TRACER_BACKEND", "cpu")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402

import tracer  # noqa: E402
import tracer.numpy as tnp  # noqa: E402
from tracer import store  # noqa: E402
from tracer.ir.config import context  # noqa: E402

RECORD_OPS = 1000


def quartile(f, repeat: int) -> float:
    """Lower quartile of `repeat` timed calls of f, after two untimed ones."""
    f()
    f()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 4]


def hit_loops(np):
    rng = numpy.random.default_rng(0)
    hx, hy, ha, hb, hc = (rng.standard_normal(10) for _ in range(5))
    x, y, a, b, c = (np.array(h) for h in (hx, hy, ha, hb, hc))
    tracer.evaluate(x, y, a, b, c)

    def add():
        return numpy.asarray(x + y)

    def add_record():
        return x + y

    def fma_sum():
        return float((a * b + c).sum())

    def fma_sum_record():
        return (a * b + c).sum()
    return (add, add_record, numpy.asarray(hx + hy)), \
        (fma_sum, fma_sum_record, float((ha * hb + hc).sum()))


def record_loop(np, x0, y0):
    def f():
        x = x0
        for _ in range(RECORD_OPS // 2):
            x = x * 1.0001 + y0
        return x
    return f


EAGER_INNER = 20  # statements per timed call: the timer's own cost is shared by them


def eager_cases(np):
    """(label, f) per row: f runs its statement EAGER_INNER times on arrays made with np."""
    rng = numpy.random.default_rng(2)
    a, b = np.array(rng.random(10)), np.array(rng.random(10))
    m = np.array(rng.random((20, 20)))
    x, y = np.array(rng.random(10)), np.array(rng.random(10) * 1e-9)
    r = range(EAGER_INNER)

    def add():
        for _ in r:
            a + b

    def mul_scalar():
        for _ in r:
            a * 2.0

    def sqrt():
        for _ in r:
            np.sqrt(a)

    def dot_rows():
        for _ in r:
            np.dot(m[7, :5], m[5, :5])

    def get_element():
        for _ in r:
            m[7, 5]

    def set_element():
        for _ in r:
            m[7, 5] = 0.5

    def get_row():
        for _ in r:
            m[7]

    def get_row_slice():
        for _ in r:
            m[7, :5]

    def isub():
        for _ in r:
            x.__isub__(y)

    def sum_():
        for _ in r:
            a.sum()

    def iterate():
        for _ in r:
            for _v in a:
                pass

    def tolist():
        for _ in r:
            a.tolist()
    return [("a + b", add), ("a * 2.0", mul_scalar), ("np.sqrt(a)", sqrt),
            ("np.dot(m[i, :j], m[j, :j])", dot_rows), ("m[i, j]", get_element),
            ("m[i, j] = v", set_element), ("m[i]", get_row), ("m[i, :j]", get_row_slice),
            ("x -= y", isub), ("a.sum()", sum_), ("for v in a (10)", iterate),
            ("a.tolist()", tolist)]


def eager_section(repeat: int, profile: bool) -> None:
    ours, theirs = eager_cases(tnp), eager_cases(numpy)
    if profile:
        import cProfile
        import pstats
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(max(1, repeat // 10)):
            for _, f in ours:
                f()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(40)
        return
    print(f"numpy {numpy.__version__}, python {sys.version.split()[0]}, {os.cpu_count()} cpus; "
          f"eager size {tracer.CONFIG.eager_size}; lower quartile of {repeat}, per statement")
    print(f"{'statement':<28} {'tracer us':>9} {'NumPy us':>9} {'ratio':>6}")
    for (label, f), (_, g) in zip(ours, theirs):
        t, tn = 0.0, 0.0
        for _ in range(2):  # interleaved halves: both sides see the same load
            t += quartile(f, repeat // 2) / 2
            tn += quartile(g, repeat // 2) / 2
        t, tn = t / EAGER_INNER, tn / EAGER_INNER
        print(f"{label:<28} {t * 1e6:9.2f} {tn * 1e6:9.2f} {t / tn:6.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=2000)
    ap.add_argument("--profile", choices=("hit", "record", "eager"))
    ap.add_argument("--eager", action="store_true", help="the eager section only")
    args = ap.parse_args()
    if args.eager or args.profile == "eager":
        eager_section(args.repeat, args.profile == "eager")
        return
    with context(eager_size=0, small_graph=0, backend="cpu"):
        hits = hit_loops(tnp)
        rng = numpy.random.default_rng(1)
        hx = rng.standard_normal(10).astype(numpy.float32)
        hy = rng.standard_normal(10).astype(numpy.float32)
        x, y = tnp.array(hx), tnp.array(hy)
        tracer.evaluate(x, y)
        rec = record_loop(tnp, x, y)

        def rec_clean():
            rec()
            store.flush()  # nothing live is pending: only resets the flush counter

        if args.profile:
            import cProfile
            import pstats
            for f, _, _ in hits:
                quartile(f, 50)
            fn = (lambda: [f() for f, _, _ in hits]) if args.profile == "hit" else rec_clean
            n = args.repeat if args.profile == "hit" else max(1, args.repeat // 100)
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(n):
                fn()
            pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(35)
            return

        for f, _, _ in hits:  # compile the kernels, cache the plans
            f()
            f()
        s0 = tracer.stats()
        hits0, kernels0 = s0.plan_cache_hits, s0.kernels_compiled
        print(f"numpy {numpy.__version__}, python {sys.version.split()[0]}, "
              f"{os.cpu_count()} cpus; lower quartile of {args.repeat}")
        for (f, rf, want), label in zip(hits, ("numpy.asarray(x + y)",
                                               "float((a * b + c).sum())")):
            got = f()
            assert numpy.allclose(got, want), (got, want)
            t_all = quartile(f, args.repeat)
            t_rec = quartile(rf, args.repeat)
            print(f"hit   {label:<26} {t_all * 1e6:8.1f} us per evaluation, recording "
                  f"{t_rec * 1e6:6.1f} us -> hit cost {(t_all - t_rec) * 1e6:6.1f} us")
        s1 = tracer.stats()
        assert s1.kernels_compiled == kernels0, "a kernel compiled inside the timed loop"
        assert s1.plan_cache_hits > hits0
        reps = max(20, args.repeat // 50)
        t_rec = quartile(rec_clean, reps) / RECORD_OPS
        t_np = quartile(record_loop(numpy, hx, hy), reps) / RECORD_OPS
        print(f"record x = x * 1.0001 + y ({RECORD_OPS} ops, float32[10]): "
              f"{t_rec * 1e6:6.2f} us per op; NumPy {t_np * 1e6:5.2f} us per op")


if __name__ == "__main__":
    main()
