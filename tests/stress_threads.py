"""Threads evaluating at once (issue 22 item 2): THREADS threads each evaluate random small
programs and check every value against NumPy; one more pair of threads writes into an array
while the other reads it lazily (each read must see one whole state, never a mix).

    python -m tests.stress_threads [--evals 200] [--runs 10] [--mode tiered|sync] [--eager]

Each run is a fresh process on a fresh kernel cache, then a second process on the warm one.
Exit status 1 on any error or mismatch. tests/api/test_threads.py runs a short version."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import traceback

THREADS = 4
PROGRAMS = [
    lambda m, a, b: a * b + m.sin(a),
    lambda m, a, b: (a * a).sum(axis=-1),
    lambda m, a, b: m.exp(a - a.max(axis=-1, keepdims=True)),
    lambda m, a, b: m.where(a > 0.5, a, b).cumsum(),
    lambda m, a, b: (a @ b.T).max(),
    lambda m, a, b: a[1:, ::2] * 3 - b[:-1, ::2],
    lambda m, a, b: m.sqrt(m.abs(a - b)).mean(axis=0),
    lambda m, a, b: m.sort(a, axis=-1)[:, :3] + b[:, :3],
]


def _evaluate(tid: int, evals: int, errors: list) -> None:
    import numpy
    import tracer.numpy as tnp
    rng = numpy.random.default_rng(tid)
    try:
        for _ in range(evals):
            k = int(rng.integers(len(PROGRAMS)))
            n = int(rng.choice([4, 7, 16, 33]))
            ha, hb = rng.random((n, 8)), rng.random((n, 8))
            got = numpy.asarray(PROGRAMS[k](tnp, tnp.asarray(ha), tnp.asarray(hb)))
            numpy.testing.assert_allclose(got, PROGRAMS[k](numpy, ha, hb), rtol=1e-12,
                                          atol=1e-14)
    except Exception:  # noqa: BLE001 - reported by the run
        errors.append(traceback.format_exc())


def _writer_reader(evals: int, errors: list) -> None:
    """One thread fills x with i (all of it), i = 1, 2, ..., until the other has read `x * 2`
    lazily `evals` times: every read is 2 * some i, whole."""
    import numpy
    import tracer.numpy as tnp
    x = tnp.zeros(64)
    done = threading.Event()

    def write():
        i = 0
        while not done.is_set():
            i += 1
            x[:] = float(i)

    def read():
        try:
            for _ in range(evals):
                v = numpy.asarray(x * 2)
                if not (v == v[0]).all() or v[0] % 2:
                    errors.append(f"torn read: {v}")
                    return
        except Exception:  # noqa: BLE001 - reported by the run
            errors.append(traceback.format_exc())
        finally:
            done.set()
    ts = [threading.Thread(target=write), threading.Thread(target=read)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def child(evals: int) -> int:
    errors: list = []
    ts = [threading.Thread(target=_evaluate, args=(t, evals, errors)) for t in range(THREADS)]
    ts.append(threading.Thread(target=_writer_reader, args=(evals, errors)))
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for e in errors[:3]:
        print(e, file=sys.stderr)
    print(f"{len(errors)} errors")
    return 1 if errors else 0


def run(evals: int, mode: str, cache: str, eager: bool = False) -> list[str]:
    """A cold process, then a warm one, on the cache folder `cache`: their failures. Every op
    recorded and compiled, or (`eager`) adaptive laziness at its default."""
    env = dict(os.environ, TRACER_CACHE_DIR=cache, TRACER_COMPILE=mode, TRACER_BACKEND="cpu",
               TRACER_EAGER_SIZE="" if eager else "0", TRACER_SMALL_GRAPH="" if eager else "0")
    out = []
    for state in ("cold", "warm"):
        p = subprocess.run([sys.executable, "-m", "tests.stress_threads", "--child", str(evals)],
                           env=env, capture_output=True, text=True, timeout=900,
                           cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        if p.returncode:
            out.append(f"{state}: {p.stdout[-200:]}{p.stderr[-3000:]}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--evals", type=int, default=200)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--mode", default="tiered")
    ap.add_argument("--eager", action="store_true", help="adaptive laziness at its default")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        return child(args.child)
    bad = 0
    for r in range(args.runs):
        with tempfile.TemporaryDirectory() as cache:
            failures = run(args.evals, args.mode, cache, args.eager)
        print(f"run {r + 1}: {'ok' if not failures else 'FAILED'}", flush=True)
        for f in failures:
            print(f)
        bad += bool(failures)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
