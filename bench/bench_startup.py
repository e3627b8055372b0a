"""The first evaluation in a process (issue 19 item 6): a fresh interpreter that imports the
library, makes a 10-element array and reads one value, NumPy against tracer.

    python -m bench.bench_startup [--runs 21]

Each variant runs `--runs` times in a fresh subprocess (the variants interleaved, so a change
in the machine's load hits them alike); the time is the subprocess's wall time, interpreter
start-up included (the same for every variant). Variants:
- numpy: `import numpy as np`, the program below;
- tracer: `import tracer.numpy as np`, the same program, default settings (adaptive laziness:
  a small program runs by NumPy op by op, nothing compiled);
- tracer-lazy: TRACER_EAGER_SIZE=0, every op recorded; the 10-element graph still runs by NumPy
  op by op through the engine (the small-graph path), nothing compiled;
- tracer-kernel: TRACER_EAGER_SIZE=0 TRACER_SMALL_GRAPH=0, one fused kernel loaded from a warm
  disk cache (TRACER_CACHE_DIR; one untimed run first fills it).
Medians and lower quartiles go to stdout, with each variant's difference from numpy.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = "a = np.arange(10.); print(float((a*2+1).sum()))"
VARIANTS = {  # name -> (import line, environment)
    "numpy": ("import numpy as np", {}),
    "tracer": ("import tracer.numpy as np", {}),
    "tracer-lazy": ("import tracer.numpy as np", {"TRACER_EAGER_SIZE": "0"}),
    "tracer-kernel": ("import tracer.numpy as np",
                      {"TRACER_EAGER_SIZE": "0", "TRACER_SMALL_GRAPH": "0"}),
}
# settings of the caller's that would change what a variant measures
_CLEARED = ("TRACER_EAGER_SIZE", "TRACER_SMALL_GRAPH", "TRACER_DEBUG", "TRACER_EAGER",
            "TRACER_DUMP", "TRACER_VERIFY", "PYTHONPROFILEIMPORTTIME")


def once(name: str) -> float:
    """Seconds one fresh interpreter takes to run the variant; checks its printed value."""
    head, extra = VARIANTS[name]
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update(extra)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", f"{head}; {PROGRAM}"], env=env, cwd=ROOT,
                         capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if out.returncode != 0 or out.stdout.strip() != "100.0":
        raise RuntimeError(f"{name} failed (rc {out.returncode}):\n{out.stdout}{out.stderr}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated, of: " + ", ".join(VARIANTS))
    args = ap.parse_args()
    names = args.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants: {unknown}")
    for n in names:  # untimed: bytecode caches, the page cache and the kernel cache warm
        once(n)
    times: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(args.runs):
        for n in names:
            times[n].append(once(n))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}; "
          f"python {platform.python_version()}; {args.runs} runs each, interleaved")
    base = statistics.median(times["numpy"]) if "numpy" in times else None
    print("| variant | median ms | lower quartile ms | median - numpy ms |")
    print("| --- | ---: | ---: | ---: |")
    for n, ts in times.items():
        ts.sort()
        med = statistics.median(ts)
        diff = f"{(med - base) * 1e3:+.1f}" if base is not None else ""
        print(f"| {n} | {med * 1e3:.1f} | {ts[len(ts) // 4] * 1e3:.1f} | {diff} |")


if __name__ == "__main__":
    main()
