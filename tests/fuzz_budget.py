"""The memory-budget fuzzer: random programs whose intermediates dwarf their inputs and results
(outer broadcasts, products, row normalizations, then reductions) run under a
`memory_budget` between their results' size and NumPy's peak, and are checked against NumPy.

Per program: tracer either refuses with MemoryBudgetError (allowed, counted as `refused`) or
gives NumPy's shape, dtype and values (exact for integers, min/max and arg-reductions; float
sums and means to a relative 1e-5 of float32, 1e-12 of float64, scaled by the largest
|value|), and the run's measured peak (stats().measured_peak_bytes) stays within the budget.

    python -m tests.fuzz_budget --programs 300 [--seed 0] [--show] [--cuda]

`--cuda`: the cuda backend under Numba's simulator (the budget then is the device's).
"""
from __future__ import annotations

import argparse
import sys
import traceback
from dataclasses import dataclass

import numpy

UNARY = ["square", "absolute", "negative", "exp_clip", "sqrt_abs", None]
OUTER = ["subtract", "add", "multiply", "maximum", "minimum"]
REDUCE_D = ["sum", "max", "min", "mean", "prod", None]
REDUCE = ["sum", "max", "min", "mean", "argmin", "argmax", "any", "all", None]
DTYPES = ["float64", "float32", "int64", "int32"]


@dataclass
class Case:
    seed: int
    lines: list
    inputs: dict
    limit_frac: float
    split_frac: float


def _unary(u: str, e: str, kind: str) -> str:
    if u == "exp_clip":
        return f"np.exp(np.clip({e}, -5, 5))" if kind == "f" else e
    if u == "sqrt_abs":
        return f"np.sqrt(np.abs({e}))" if kind == "f" else e
    return f"np.{u}({e})" if u else e


def draw(seed: int) -> Case:
    rng = numpy.random.default_rng(seed)
    pick = lambda seq: seq[int(rng.integers(len(seq)))]  # noqa: E731
    n, m, d = int(rng.integers(2, 40)), int(rng.integers(2, 40)), int(rng.integers(1, 9))
    dt = pick(DTYPES)
    kind = numpy.dtype(dt).kind
    mk = (lambda s: (rng.standard_normal(s) * 2).astype(dt)) if kind == "f" else \
        (lambda s: rng.integers(-4, 5, s).astype(dt))
    inputs = {"x": mk((n, d)), "y": mk((m, d)), "w": mk((n,)), "z": mk((m,))}
    lines = []
    if rng.random() < 0.2 and kind == "f":  # a product instead of an outer broadcast
        lines.append("t = x @ y.T")
    else:
        e = f"np.{pick(OUTER)}(x[:, None, :], y[None, :, :])"
        e = _unary(pick(UNARY), e, kind)
        r = pick(REDUCE_D if kind == "f" else ["sum", "max", "min", None])
        lines.append(f"t = ({e}).{r}(-1)" if r else f"t = ({e}).sum(-1)")
    if rng.random() < 0.4:
        lines.append(f"t = t {pick(['+', '*', '-'])} {pick(['w[:, None]', 'z[None, :]'])}")
    if rng.random() < 0.3 and kind == "f":  # a row normalization (softmax-like)
        lines.append("t = t - t.max(1, keepdims=True)")
        lines.append("t = np.exp(t) / np.exp(t).sum(1, keepdims=True)")
    extra = rng.random()  # one of: a scan, a sort, a select, a concatenation, a write, a
    if extra < 0.08:      # product, a column statistic that meets the rows again
        lines.append(f"t = np.cumsum(t, {pick([0, 1])})")
    elif extra < 0.16:
        lines.append("t = np.sort(t, 1)")
    elif extra < 0.24:
        lines.append("t = np.where(t > 0, t, 0 * t)")
    elif extra < 0.32:
        lines.append(f"t = np.concatenate([t, t * 2], {pick([0, 1])})")
    elif extra < 0.40:
        lines.append(f"t[:, {int(rng.integers(0, m))}] = 1")
    elif extra < 0.48:
        lines.append("t = t @ np.ones((t.shape[1], 3), t.dtype)")
    elif extra < 0.56 and kind == "f":
        lines.append(f"t = t - t.mean({pick([0, 1])}, keepdims=True)")
    elif extra < 0.62 and kind == "f":
        lines.append(f"t = t.{pick(['std', 'var'])}({pick([0, 1])})[:, None] * t[:1]")
    if rng.random() < 0.2 and "std" not in lines[-1]:
        lo, hi = sorted(int(v) for v in rng.integers(0, n + 1, 2))
        lines.append(f"t = t[{lo}:{hi + 1}]")
    if rng.random() < 0.15:
        lines.append("t = t.T")
    r = pick(REDUCE)
    if r in ("any", "all"):
        lines.append(f"t = (t > 0).{r}({pick([0, 1, 'None'])})")
    elif r:
        axis = pick([0, 1, "None"]) if r not in ("argmin", "argmax") else pick([0, 1])
        lines.append(f"t = t.{r}({axis})")
    return Case(seed, lines, inputs, float(rng.uniform(0.02, 0.9)), float(rng.uniform(0.05, 0.5)))


def _run(case: Case, mod):
    ns = {"np": mod, **{k: (mod.asarray(v) if mod is not numpy else v)
                        for k, v in case.inputs.items()}}
    for line in case.lines:
        exec(line, ns)
    return ns["t"]


def _need(case: Case):
    """(bytes of the result, NumPy's largest intermediate) for the budget's range."""
    ns = {"np": numpy, **case.inputs}
    big = 0
    for line in case.lines:
        exec(line, ns)
        big = max(big, numpy.asarray(ns["t"]).nbytes)
    lines = " ".join(case.lines)
    if "[:, None, :]" in lines:  # the outer broadcast before its reduction
        x, y = case.inputs["x"], case.inputs["y"]
        big = max(big, x.shape[0] * y.shape[0] * x.shape[1] * x.itemsize)
    return numpy.asarray(ns["t"]).nbytes, big


def _close(got, want) -> str | None:
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape} {got.dtype} != {want.shape} {want.dtype}"
    if want.dtype.kind == "f":
        tol = 1e-5 if want.dtype == numpy.float32 else 1e-12
        fin = want[numpy.isfinite(want)]
        scale = max(1.0, float(numpy.abs(fin).max())) if fin.size else 1.0
        if not numpy.allclose(got, want, rtol=tol, atol=tol * scale, equal_nan=True):
            return f"values differ: max |diff| {numpy.nanmax(numpy.abs(got - want))}"
        return None
    return None if numpy.array_equal(got, want) else "values differ"


def check(case: Case) -> tuple[str, str]:
    import tracer
    import tracer.numpy as tnp
    from tracer.ir.stats import STATS
    with numpy.errstate(all="ignore"):
        want = numpy.asarray(_run(case, numpy))
        res, big = _need(case)
        limit = res + max(64, int(big * case.limit_frac))
        try:
            with tracer.memory_budget(limit, split_size=max(8, int(limit * case.split_frac))):
                got = numpy.asarray(_run(case, tnp))
                peak = STATS.measured_peak_bytes
        except tracer.MemoryBudgetError:
            return "refused", ""
        except Exception as e:
            return "crash", f"{type(e).__name__}: {e}\n" + "".join(traceback.format_exception(e)[-4:])
    bad = _close(got, want)
    if bad:
        return "mismatch", bad
    if peak > limit:
        return "over", f"measured peak {peak} > budget {limit}"
    return "ok", ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--cuda", action="store_true", help="the cuda backend, simulated")
    args = ap.parse_args(argv)
    if args.cuda:
        import os
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # (before numba is imported)
        sys.setswitchinterval(1e-4)  # the simulator's threads poll holding the GIL
    from tracer.ir.config import context
    counts: dict[str, int] = {}
    failing = []
    backend = dict(backend="cuda", cuda_sim=True) if args.cuda else {}
    with context(small_graph=0, eager_size=0, compile_mode="sync", **backend):
        for s in range(args.seed, args.seed + args.programs):
            case = draw(s)
            kind, detail = check(case)
            counts[kind] = counts.get(kind, 0) + 1
            if kind not in ("ok", "refused"):
                failing.append(s)
                if args.show:
                    print(f"--- seed {s}: {kind}: {detail}\n  sizes "
                          f"{ {k: v.shape for k, v in case.inputs.items()} } "
                          f"{case.inputs['x'].dtype} limit_frac {case.limit_frac:.3f} "
                          f"split_frac {case.split_frac:.3f}\n  " + "\n  ".join(case.lines),
                          flush=True)
    print(f"budget fuzz: {args.programs} programs, {counts}; failing seeds: {failing[:50]}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
