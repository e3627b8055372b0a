"""Pass ablation: what each pass in `opt.PIPELINE` is worth, one pass switched off at a time.

    python -m bench.ablation                      # all passes x all programs, a few minutes
    python -m bench.ablation --quick              # tiny sizes: a smoke run (used by a test)
    python -m bench.ablation --passes fusion,cse --programs softmax_rows,mlp --out ablation.md

As in seed 002's study of XLA's GPU passes (DIS_None against DIS_X), every program runs with the
full pipeline and then with each pass of PIPELINE disabled in turn (as TRACER_DISABLE_PASSES
does). The pass list is read at run time, so new passes are measured without editing this file.

What is timed: building the lazy expression from lazy inputs plus `tracer.evaluate`, on the cpu
backend; one warm-up call pays for compilation, then the median of --repeat calls. Kernels
launched and ops sent to the NumPy interpreter come from `tracer.stats()` over one warm call.
Every configuration's result is checked against NumPy in float64 (max error relative to the
largest reference value). A configuration that raises or gives a wrong answer shows as an
error in the table; the run goes on. With `fusion` off the unfused ops run through the NumPy
interpreter, so its row measures the interpreter, as expected.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

os.environ.setdefault("TRACER_BACKEND", "cpu")
os.environ.setdefault("TRACER_COMPILE", "sync")  # timings of compiled kernels, not of the NumPy tier

import numpy  # noqa: E402

from tracer import opt  # noqa: E402
import tracer  # noqa: E402
import tracer.numpy as tnp  # noqa: E402
from tracer.engine import backend  # noqa: E402  (no attribute of tracer until loaded)
from tracer.ir.config import CONFIG, context  # noqa: E402

TOLERANCE = 1e-3  # float32 programs checked against float64 NumPy


# ------------------------------------------------------------------ the programs
# Each takes the module (numpy or tracer.numpy) first, so one function is program and oracle.

def softmax_rows(m, x):
    e = m.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm_rows(m, x):
    mu = x.mean(axis=1, keepdims=True)
    return (x - mu) / m.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)


def logsumexp(m, x):
    top = x.max(axis=1, keepdims=True)
    return m.log(m.exp(x - top).sum(axis=1)) + top[:, 0]


def matvec_chain(m, a, b, v):
    return (a @ b) @ v


def min_distance(m, x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1).min(1)


def abcd(m, a, b, c, d):
    return a * b + c * d - a * a


def mlp(m, x, w1, b1, w2, b2):
    return m.maximum(x @ w1 + b1, 0) @ w2 + b2


def colnorm(m, x):
    return (x - x.mean(0)) / x.std(0)


def cosine(m, x):
    xn = x / m.sqrt((x * x).sum(axis=1, keepdims=True))
    return xn @ xn.T


def variance(m, x):
    return x.var(axis=1)


def param_update(m, w1, b1, w2, b2):
    """One momentum-SGD step over four small parameters of four shapes: small independent
    kernels, where launches cost as much as the work (horizontal fusion)."""
    return tuple(w - 0.01 * (0.9 * w + 0.1 * m.tanh(w)) for w in (w1, b1, w2, b2))


def row_writes(m, x):
    """Rows written one at a time into a zeros buffer 16x their size (in-place updates)."""
    buf = m.zeros((x.shape[0] * 16, x.shape[1]), x.dtype)
    for i in range(x.shape[0]):
        buf[i * 16] = x[i] * 2
    return buf


def histogram_add(m, x):
    """np.add.at of every value into 4096 bins picked by a fixed hash of its position."""
    bins = m.zeros(4096, x.dtype)
    m.add.at(bins, (m.arange(x.shape[0]) * 7919) % 4096, x)
    return bins


@dataclass(frozen=True)
class Program:
    fn: Callable
    shapes: Callable[[dict], list[tuple[int, ...]]]


FULL = dict(r=16384, c=1024, n=1536, p=4096, q=512, d=16, e=1 << 24, i=256, h=512, o=64, k=4096,
            w=128)
QUICK = dict(r=6, c=8, n=5, p=6, q=4, d=3, e=32, i=4, h=6, o=3, k=6, w=3)

PROGRAMS: dict[str, Program] = {
    "softmax_rows": Program(softmax_rows, lambda s: [(s["r"], s["c"])]),
    "layernorm_rows": Program(layernorm_rows, lambda s: [(s["r"], s["c"])]),
    "logsumexp": Program(logsumexp, lambda s: [(s["r"], s["c"])]),
    "matvec_chain": Program(matvec_chain, lambda s: [(s["n"], s["n"])] * 2 + [(s["n"],)]),
    "min_distance": Program(min_distance, lambda s: [(s["p"], s["d"]), (s["q"], s["d"])]),
    "abcd": Program(abcd, lambda s: [(s["e"],)] * 4),
    "mlp": Program(mlp, lambda s: [(s["p"], s["i"]), (s["i"], s["h"]), (s["h"],),
                                   (s["h"], s["o"]), (s["o"],)]),
    "colnorm": Program(colnorm, lambda s: [(s["r"], s["c"])]),
    "cosine": Program(cosine, lambda s: [(s["k"], s["o"])]),
    "variance": Program(variance, lambda s: [(s["r"], s["c"])]),
    "row_writes": Program(row_writes, lambda s: [(s["w"], s["k"])]),
    "histogram_add": Program(histogram_add, lambda s: [(s["e"],)]),
    "param_update": Program(param_update, lambda s: [(s["i"], s["o"]), (s["o"],), (s["o"], s["d"]),
                                                     (s["d"],)]),
}


def _outs(x) -> tuple:
    """A program's results as a tuple (programs may return several arrays)."""
    return x if isinstance(x, tuple) else (x,)


# ------------------------------------------------------------------ measuring

@dataclass
class Result:
    seconds: float = math.nan
    kernels: int = 0
    interpreted: int = 0
    error: float = math.nan
    failure: str = ""           # what went wrong: an exception or a wrong answer

    @property
    def ok(self) -> bool:
        return not self.failure


def measure(prog: Program, lazy: list, ref, repeat: int) -> Result:
    """Warm-up call (compiles), one counted call, then the median of `repeat` timed calls.
    `ref`: the expected array, or a list of them for a program with several results."""
    res = Result()
    ref = ref if isinstance(ref, list) else [ref]
    try:
        call = lambda: tracer.evaluate(*_outs(prog.fn(tnp, *lazy)))  # noqa: E731
        call()
        before = _counters()
        got = [numpy.asarray(g) for g in _outs(call())]
        after = _counters()
        res.kernels, res.interpreted = after[0] - before[0], after[1] - before[1]
        res.error = max(rel_error(g, r) for g, r in zip(got, ref))
        if len(got) != len(ref) or not res.error <= TOLERANCE:
            res.failure = f"wrong: {len(got)} results, max rel err {res.error:.1e}"
            return res
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        res.seconds = statistics.median(times)
    except Exception as e:  # noqa: BLE001 - a broken configuration is a table cell, not a crash
        res.failure = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:90]
    return res


def _counters() -> tuple[int, int]:
    s = tracer.stats()
    return s.kernels_launched, s.interpreted_nodes


def rel_error(got: numpy.ndarray, ref: numpy.ndarray) -> float:
    if got.shape != ref.shape:
        return math.inf
    scale = max(float(numpy.max(numpy.abs(ref), initial=0.0)), 1e-30)
    return float(numpy.max(numpy.abs(got.astype(numpy.float64) - ref), initial=0.0)) / scale


def pass_effects(prog: Program, lazy: list) -> dict[str, str]:
    """What each pass did to this program under the full pipeline: '41->37' or '-'."""
    try:
        plan = tracer.explain(*_outs(prog.fn(tnp, *lazy)))
    except Exception:  # noqa: BLE001 - the timing row reports the failure
        return {}
    did: dict[str, list[str]] = {}
    for e in plan.pass_effects:
        if e.changed:
            did.setdefault(e.name, []).append(f"{e.nodes_before}->{e.nodes_after}")
    return {name: ",".join(v) for name, v in did.items()}


def run_program(name: str, sizes: dict, passes: list[str], repeat: int, log) -> dict:
    prog = PROGRAMS[name]
    rng = numpy.random.default_rng(0)
    host = [rng.standard_normal(s).astype(numpy.float32) for s in prog.shapes(sizes)]
    with numpy.errstate(all="ignore"):
        ref = [numpy.asarray(r) for r in
               _outs(prog.fn(numpy, *(h.astype(numpy.float64) for h in host)))]
    lazy = [tnp.asarray(h) for h in host]
    base = set(CONFIG.disable_passes)
    out = {"effects": pass_effects(prog, lazy), "runs": {}}
    for p in [None] + passes:
        with context(disable_passes=base | ({p} if p else set())):
            t0 = time.perf_counter()
            r = measure(prog, lazy, ref, repeat)
        out["runs"][p] = r
        log(f"  {name:<15} {'DIS_' + (p or 'None'):<26} {_ms(r):>10}  kernels {r.kernels:<3} "
            f"interp {r.interpreted:<3} ({time.perf_counter() - t0:.1f} s) {r.failure}")
    return out


# ------------------------------------------------------------------ the table

def _ms(r: Result) -> str:
    return f"{r.seconds * 1e3:.2f} ms" if r.ok else "error"


def _err(r: Result) -> str:
    return f"{r.error:.1e}" if not math.isnan(r.error) else "-"


def _x(ratio: float) -> str:
    return "-" if math.isnan(ratio) else f"{ratio:.2f}x"


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def table(results: dict[str, dict], passes: list[str]) -> list[str]:
    lines = ["## Full pipeline (DIS_None)", "",
             "| program | time | kernels | interpreted ops | max rel err |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for prog, res in results.items():
        r = res["runs"][None]
        lines.append(f"| {prog} | {_ms(r) if r.ok else r.failure} | {r.kernels} | "
                     f"{r.interpreted} | {_err(r)} |")
    lines += ["", "## Each pass switched off (DIS_pass)", "",
              "Ratio is time without the pass over time with the full pipeline (>1: the pass "
              "helps). `did` is what the pass did to the graph under the full pipeline.", "",
              "| pass | program | did | time | ratio | kernels | interpreted ops | max rel err |",
              "| --- | --- | --- | ---: | ---: | --- | --- | ---: |"]
    summary = []
    for p in passes:
        ratios, failed = [], 0
        for prog, res in results.items():
            full, r = res["runs"][None], res["runs"][p]
            did = res["effects"].get(p, "-")
            if not r.ok:
                failed += 1
                lines.append(f"| {p} | {prog} | {did} | ERROR | - | - | - | "
                             f"{_err(r)} `{r.failure.replace('|', '/')}` |")
                continue
            ratio = r.seconds / full.seconds if full.ok else math.nan
            if full.ok:
                ratios.append(ratio)
            lines.append(f"| {p} | {prog} | {did} | {_ms(r)} | {_x(ratio)} | "
                         f"{full.kernels} -> {r.kernels} | {full.interpreted} -> "
                         f"{r.interpreted} | {_err(r)} |")
        g = geomean(ratios)
        lines.append(f"| **{p}** | **geomean** | | | **{_x(g)}** | | | {failed} errors |")
        summary.append(f"| {p} | {_x(g)} | {_x(max(ratios, default=math.nan))} | {failed} |")
    lines += ["", "## Summary per pass", "",
              "| pass | geomean slowdown | worst | errors |", "| --- | ---: | ---: | ---: |"]
    return lines + summary


# ------------------------------------------------------------------ main

def _pick(arg: str | None, known: list[str], what: str) -> list[str]:
    if not arg:
        return known
    want = [a.strip() for a in arg.split(",") if a.strip()]
    unknown = [a for a in want if a not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return want


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one timed call")
    ap.add_argument("--repeat", type=int, default=None, help="timed calls (default 7, quick 1)")
    ap.add_argument("--programs", help="comma-separated program names (default: all)")
    ap.add_argument("--passes", help="comma-separated pass names (default: all of PIPELINE)")
    ap.add_argument("--out", type=Path, help="also write the table as Markdown to this file")
    args = ap.parse_args(argv)
    pipeline_names = list(dict.fromkeys(name for name, _fn, _why in opt.PIPELINE))
    passes = _pick(args.passes, pipeline_names, "passes")
    programs = _pick(args.programs, list(PROGRAMS), "programs")
    repeat = args.repeat or (1 if args.quick else 7)
    sizes = QUICK if args.quick else FULL
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731

    t0 = time.perf_counter()
    results = {name: run_program(name, sizes, passes, repeat, log) for name in programs}
    head = [f"# Pass ablation ({'quick' if args.quick else 'full'} sizes, backend "
            f"{backend()}, median of {repeat}, {os.cpu_count()} cpus, "
            f"{time.perf_counter() - t0:.0f} s)", "",
            f"Pipeline: {' -> '.join(name for name, _fn, _why in opt.PIPELINE)}", ""]
    text = "\n".join(head + table(results, passes)) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
