"""The loop suite (issue 19): ordinary Python loops over arrays, NumPy and tracer side by side.

    python -m bench.loops [--cases chol] [--repeat 5] [--quick] [--timeout 60]

Each case is one plain NumPy-style function `f(np, *inputs)`, run in one fresh worker process,
first with `numpy`, then with `tracer.numpy`, on the same inputs (numpy arrays; each function
copies what it writes into with `np.array`). A timed call includes reading the result back
(`numpy.asarray`), which for tracer is the evaluation. Per side: one untimed call, then the
median of --repeat calls; tracer's untimed call is its cold first run in that process (kernels
still to compile or load, first-use costs), reported on its own. The kernel cache is the usual
one, so a second run of the suite finds its kernels on disk.

tracer's side gets --timeout seconds per case, cold run included: the worker starts no timed call
that would end past it, and is killed (with its compile workers) at the limit, so a case over
budget shows as "> S s". tracer's result must equal NumPy's (assert_allclose, rtol 1e-9); a
mismatch or an exception is printed in the table and makes the exit status 1.
The table goes to stdout and to --out (bench/out/loops.md).
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRACER_COMPILE", "sync")  # compiled kernels, not the NumPy tier
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy  # noqa: E402


# ---------------------------------------------------------------- the cases

def per_cell(np, a):
    """Read-modify-write of single elements: a Gauss-Seidel-like sweep, one cell at a time."""
    a = np.array(a)
    n, m = a.shape
    for i in range(1, n):
        for j in range(1, m):
            a[i, j] = a[i, j] * 0.5 + a[i - 1, j] * 0.25 + a[i, j - 1] * 0.25
    return a


def scalar_dot(np, x, y):
    """Scalar arithmetic on elements: `r += X[i] * Y[j]`."""
    x, y = np.array(x), np.array(y)
    r = 0.0
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            r += x[i] * y[j]
    return r


def gradient_descent(np, x, y, steps):
    """Small-array updates in a loop: least squares by gradient descent."""
    x, y = np.array(x), np.array(y)
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        grad = x.T @ (x @ w - y) / x.shape[0]
        w = w - 0.1 * grad
    return w


def particles(np, pos, vel, steps):
    """A small simulation step: springs pulling particles to the origin, walls at +-1."""
    pos, vel = np.array(pos), np.array(vel)
    for _ in range(steps):
        vel = vel - 0.01 * pos
        pos = pos + 0.01 * vel
        vel = np.where(np.abs(pos) > 1.0, -vel, vel)
    return pos, vel


def for_iteration(np, t):
    """`for v in t` with a branch on each element."""
    t = np.array(t)
    count, total = 0, 0.0
    for v in t:
        if v > 0:
            count += 1
            total += v
    return count, total


def builtin_reductions(np, a):
    """Builtin `sum`, `min`, `max` over an array (iterating its elements)."""
    a = np.array(a)
    return sum(a), min(a), max(a)


def bfs_grid(np, walls):
    """Breadth-first search on a grid, reading `Z[y, x]` one cell at a time."""
    z = np.array(walls)
    h, w = z.shape
    dist = np.full((h, w), -1)
    dist[0, 0] = 0
    queue = collections.deque([(0, 0)])
    while queue:
        y, x = queue.popleft()
        d = dist[y, x]
        for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
            if 0 <= ny < h and 0 <= nx < w and z[ny, nx] == 0 and dist[ny, nx] < 0:
                dist[ny, nx] = d + 1
                queue.append((ny, nx))
    return dist


def stencil(np, u, steps):
    """A stencil time loop: explicit heat diffusion on a 2-D grid."""
    u = np.array(u)
    for _ in range(steps):
        u[1:-1, 1:-1] = u[1:-1, 1:-1] + 0.2 * (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:]
                                               + u[1:-1, :-2] - 4 * u[1:-1, 1:-1])
    return u


def cholesky(np, a):
    """Cholesky row by row, each element from a dot of two row slices."""
    a = np.array(a)
    n = a.shape[0]
    low = np.zeros_like(a)
    for i in range(n):
        for j in range(i + 1):
            s = a[i, j] - np.dot(low[i, :j], low[j, :j])
            low[i, j] = np.sqrt(s) if i == j else s / low[j, j]
    return low


def lu(np, a):
    """LU without pivoting (a diagonally dominant matrix), one pivot row at a time."""
    a = np.array(a)
    n = a.shape[0]
    for k in range(n - 1):
        a[k + 1:, k] = a[k + 1:, k] / a[k, k]
        a[k + 1:, k + 1:] = a[k + 1:, k + 1:] - np.outer(a[k + 1:, k], a[k, k + 1:])
    return a


def trisolve(np, low, b):
    """Forward substitution row by row, for each column of `b` in turn."""
    low, b = np.array(low), np.array(b)
    n, k = b.shape
    x = np.zeros_like(b)
    for c in range(k):
        for i in range(n):
            x[i, c] = (b[i, c] - np.dot(low[i, :i], x[:i, c])) / low[i, i]
    return x


def mask_histogram(np, data, edges):
    """A boolean mask per iteration, reducing `data[mask]`."""
    data, edges = np.array(data), np.array(edges)
    counts = np.zeros(edges.shape[0] - 1)
    sums = np.zeros(edges.shape[0] - 1)
    for k in range(edges.shape[0] - 1):
        mask = (data >= edges[k]) & (data < edges[k + 1])
        counts[k] = mask.sum()
        sums[k] = data[mask].sum()
    return counts, sums


def bit_loop(np, raw):
    """Bit twiddling over the bytes of a small array: a popcount per byte."""
    raw = np.array(raw)
    bits = np.zeros(raw.shape[0], dtype=np.int64)
    for i in range(raw.shape[0]):
        v = raw[i]
        c = 0
        while v:
            c += v & 1
            v = v >> 1
        bits[i] = c
    return bits


def small_evals(np, x, count):
    """A script of distinct small evaluations: each reads one small result back as a float."""
    x = np.array(x)
    fs = (np.sin, np.cos, np.exp, np.tanh, np.sqrt, np.log1p, np.abs, np.square)
    out = []
    for k in range(count):
        v = x[: 8 + k % 37]
        y = fs[k % 8](v) * fs[k // 8 % 8](v + k / 100)
        out.append(float(y.sum() / y.shape[0] + y.max()))
    return out


# ---------------------------------------------------------------- inputs and sizes

def spd(rng, n):
    m = rng.standard_normal((n, n))
    return m @ m.T / n + numpy.eye(n)


def walls(rng, n):
    z = (rng.random((n, n)) < 0.3).astype(numpy.int64)
    z[0, 0] = 0
    return z


def dominant(rng, n):
    return rng.standard_normal((n, n)) + n * numpy.eye(n)


def lower(rng, n):
    return numpy.tril(rng.standard_normal((n, n))) + n * numpy.eye(n)


# name -> (function, inputs(rng, quick)); full sizes put NumPy at about 5-50 ms, except where
# the issue fixes the size (the factorizations, 300 evaluations).
CASES = {
    "per_cell 100x100": (per_cell, lambda r, q: (r.random((8, 8) if q else (100, 100)),)),
    "scalar_dot 200x200": (scalar_dot, lambda r, q: (r.random(8 if q else 200),
                                                     r.random(8 if q else 200))),
    "gradient_descent 50x5": (gradient_descent, lambda r, q: (r.random((50, 5)), r.random(50),
                                                              5 if q else 2000)),
    "particles 100x2": (particles, lambda r, q: (r.uniform(-1, 1, (100, 2)),
                                                 r.standard_normal((100, 2)), 5 if q else 1500)),
    "for_iteration 1e5": (for_iteration, lambda r, q: (r.standard_normal(20 if q else 100_000),)),
    "builtin sum/min/max 1e5": (builtin_reductions,
                                lambda r, q: (r.standard_normal(20 if q else 100_000),)),
    "bfs_grid 100x100": (bfs_grid, lambda r, q: (walls(r, 6 if q else 100),)),
    "stencil 64x64": (stencil, lambda r, q: (r.random((64, 64)), 5 if q else 500)),
    "cholesky 100": (cholesky, lambda r, q: (spd(r, 6 if q else 100),)),
    "cholesky 400": (cholesky, lambda r, q: (spd(r, 6 if q else 400),)),
    "lu 100": (lu, lambda r, q: (dominant(r, 6 if q else 100),)),
    "lu 400": (lu, lambda r, q: (dominant(r, 6 if q else 400),)),
    "trisolve 100 x 40 rhs": (trisolve, lambda r, q: (lower(r, 6 if q else 100),
                                                      r.random((6, 2) if q else (100, 40)))),
    "trisolve 400 x 10 rhs": (trisolve, lambda r, q: (lower(r, 6 if q else 400),
                                                      r.random((6, 2) if q else (400, 10)))),
    "mask_histogram 1e5 / 50 bins": (mask_histogram, lambda r, q: (
        r.standard_normal(100 if q else 100_000), numpy.linspace(-3, 3, 6 if q else 51))),
    "bit_loop 8192 bytes": (bit_loop, lambda r, q: (
        r.integers(0, 256, 8 if q else 8192).astype(numpy.uint8),)),
    "small_evals 300": (small_evals, lambda r, q: (r.random(64), 5 if q else 300)),
}


# ---------------------------------------------------------------- one case, in a worker

def read_back(result):
    return tuple(map(numpy.asarray, result)) if isinstance(result, tuple) else numpy.asarray(result)


def check(got, want) -> None:
    for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        assert g.shape == w.shape, f"shape {g.shape} != {w.shape}"
        scale = float(numpy.max(abs(w), initial=1))  # atol for entries that cancel to ~0
        numpy.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12 * scale)


def worker(name: str, quick: bool, repeat: int, budget: float, lines: Path) -> None:
    """Runs one case, NumPy then tracer, appending one JSON line per finished step to `lines`."""
    fn, make = CASES[name]
    inputs = make(numpy.random.default_rng(0), quick)

    def emit(**kw):
        with lines.open("a") as f:
            f.write(json.dumps(kw) + "\n")

    def call(m):
        t0 = time.perf_counter()
        out = read_back(fn(m, *inputs))
        return out, time.perf_counter() - t0

    want, _ = call(numpy)
    t_np = statistics.median(call(numpy)[1] for _ in range(repeat))
    import tracer.numpy as tnp
    from tracer.engine import backend
    emit(numpy=t_np, backend=backend(), at=0.0)  # the parent starts tracer's budget here
    start = time.perf_counter()
    got, cold = call(tnp)
    emit(cold=cold, at=time.perf_counter() - start)
    try:
        check(got, want)
    except AssertionError as e:
        emit(mismatch=str(e).strip().replace("\n", " "))
    times = []
    while len(times) < repeat:
        if times and time.perf_counter() - start + max(times) > budget:
            break  # another call would not end inside the budget
        times.append(call(tnp)[1])
        emit(warm=statistics.median(times), runs=len(times), at=time.perf_counter() - start)


def run_case(name: str, quick: bool, repeat: int, budget: float) -> dict:
    """The case in a fresh worker process; tracer's side is killed `budget` s after it starts."""
    with tempfile.TemporaryDirectory() as tmp:
        lines, log = Path(tmp) / "lines.jsonl", Path(tmp) / "log.txt"
        cmd = [sys.executable, "-m", "bench.loops", "--worker", name, "--repeat", str(repeat),
               "--timeout", str(budget), "--lines", str(lines)] + ["--quick"] * quick
        # output to a file, not a pipe: compile workers may hold a pipe open past the exit
        with log.open("w") as out:
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        deadline = math.inf  # NumPy's side runs to its end; tracer's budget starts after it
        timeout = False
        while proc.poll() is None:
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)  # its session: it and its compile workers
                proc.wait()
                timeout = True
            elif deadline == math.inf and "numpy" in read_lines(lines):
                deadline = time.monotonic() + budget
            time.sleep(0.02)
        res = read_lines(lines)
        if proc.returncode and not timeout:
            res["error"] = log.read_text()[-2000:].strip() or f"exit status {proc.returncode}"
        return res


def read_lines(lines: Path) -> dict:
    res: dict = {}
    if lines.exists():
        for line in lines.read_text().splitlines():
            if line.endswith("}"):  # a line still being written is read next time
                res.update(json.loads(line))
    return res


# ---------------------------------------------------------------- the table

def ms(s: float) -> str:
    return f"{s * 1e3:.2f}"


def row(name: str, res: dict, budget: float, repeat: int) -> tuple[str, float | None, bool]:
    """A table row, the ratio (a lower bound where tracer ran out of time), and whether it
    failed (mismatch or error)."""
    if "numpy" not in res or ("error" in res and "warm" not in res):
        t_np = ms(res["numpy"]) if "numpy" in res else "-"
        error = one_line(res.get("error", "no result"))
        return f"| {name} | {t_np} | - | - | - | **ERROR**: {error} |", None, True
    t_np = res["numpy"]
    notes = []
    if "warm" in res:
        warm, ratio, bound = ms(res["warm"]), res["warm"] / t_np, ""
        if res["runs"] < repeat:
            notes.append(f"median of {res['runs']} (budget)")
    else:  # the warm call started at `at` and was still running at the budget's end
        left = budget - res["at"]
        warm, ratio, bound = f"> {left:.3g} s", left / t_np, "> "
    cold = ms(res["cold"]) if "cold" in res else f"> {budget:g} s"
    failed = "mismatch" in res or "error" in res
    if "mismatch" in res:
        notes.append(f"**MISMATCH**: {one_line(res['mismatch'])}")
    if "error" in res:
        notes.append(f"**ERROR**: {one_line(res['error'])}")
    return (f"| {name} | {ms(t_np)} | {warm} | {bound}{ratio:.1f} | {cold} | {'; '.join(notes)} |",
            ratio, failed)


def one_line(text: str) -> str:
    return " ".join(text.split())[-300:].replace("|", "/")


def summary(ratios: list[float], bounded: int) -> list[str]:
    if not ratios:
        return []
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
    note = (f" ({bounded} of {len(ratios)} cases ran out of time and count at their lower bound,"
            " so both are lower bounds)" if bounded else "")
    return ["", f"- tracer / NumPy: geometric mean {geo:.1f}, median "
                f"{statistics.median(ratios):.1f}{note}"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="", help="only the cases whose name contains this")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds for tracer per case")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "loops.md"))
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--lines", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.quick, args.repeat, args.timeout, Path(args.lines))
        return 0
    from bench.bench_foundation import machine_info
    names = [n for n in CASES if args.cases in n]
    if not names:
        ap.error(f"no case matches {args.cases!r}")
    lines, ratios, bounded, failed, backend = [], [], 0, False, "?"
    for name in names:
        res = run_case(name, args.quick, args.repeat, args.timeout)
        backend = res.get("backend", backend)
        text, ratio, bad = row(name, res, args.timeout, args.repeat)
        print(text, flush=True)
        lines.append(text)
        failed |= bad
        if ratio is not None:
            ratios.append(ratio)
            bounded += "warm" not in res
    head = machine_info(backend) + [
        f"- TRACER_COMPILE={os.environ['TRACER_COMPILE']}; each case in a fresh process; one "
        f"untimed call, then the median of {args.repeat}; tracer budget {args.timeout:g} s a case"
        + ("; --quick: tiny sizes, not those in the names" if args.quick else ""),
        "", "| case | NumPy ms | tracer ms (warm) | tracer / NumPy | tracer cold first run ms "
            "| notes |", "| --- | ---: | ---: | ---: | ---: | --- |"]
    text = "\n".join(head + lines + summary(ratios, bounded))
    print("\n" + text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
