"""The first evaluation in a process (issue 19 item 6): a fresh interpreter that imports the
library, makes a 10-element array and reads one value, NumPy against tracer.

    python -m bench.bench_startup [--runs 21] [--base OTHER_PYTHON]

Each variant runs `--runs` times in a fresh subprocess (the variants interleaved, so a change
in the machine's load hits them alike); the time is the subprocess's wall time, interpreter
start-up included (the same for every variant), and its cpu time (user + system), which moves
less with the machine's load. Bytecode is cached as after an install (the first, untimed run
writes tracer's; PYTHONDONTWRITEBYTECODE is cleared: with it, every start compiles each tracer
module from source). Variants:
- numpy: `import numpy as np`, the program below;
- tracer: `import tracer.numpy as np`, the same program, default settings (adaptive laziness:
  a small program runs by NumPy op by op, nothing recorded or compiled);
- tracer-lazy: TRACER_EAGER_SIZE=0, every op recorded; the 10-element graph runs by NumPy op
  by op through the engine (the small-graph path), nothing compiled;
- tracer-kernel: TRACER_EAGER_SIZE=0 TRACER_SMALL_GRAPH=0, one fused kernel loaded from a warm
  disk cache (TRACER_CACHE_DIR; the untimed run fills it).
`--base`: the interpreter of another checkout's environment (an earlier commit installed in
its own venv): its tracer variants run too, interleaved, as `base:...`.
Medians and lower quartiles go to stdout, with each variant's difference from numpy.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

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
            "TRACER_DUMP", "TRACER_VERIFY", "PYTHONPROFILEIMPORTTIME", "PYTHONDONTWRITEBYTECODE")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def once(python: str, name: str) -> tuple[float, float]:
    """(wall, cpu) seconds one fresh interpreter takes to run the variant; checks its printed
    value. It runs in a folder with no package in it, so the installed tracer is imported."""
    head, extra = VARIANTS[name]
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update(extra)
    c0, t0 = _cpu(), time.perf_counter()
    out = subprocess.run([python, "-c", f"{head}; {PROGRAM}"], env=env,
                         cwd=tempfile.gettempdir(), capture_output=True, text=True)
    dt, dc = time.perf_counter() - t0, _cpu() - c0
    if out.returncode != 0 or out.stdout.strip() != "100.0":
        raise RuntimeError(f"{name} failed (rc {out.returncode}):\n{out.stdout}{out.stderr}")
    return dt, dc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated, of: " + ", ".join(VARIANTS))
    ap.add_argument("--base", help="another environment's python: its tracer variants too")
    args = ap.parse_args()
    names = args.variants.split(",")
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants: {unknown}")
    runs = [(n, sys.executable, n) for n in names]  # (label, python, variant)
    if args.base:
        runs += [(f"base:{n}", args.base, n) for n in names if n != "numpy"]
    for _, python, n in runs:  # untimed: bytecode, the page cache and the kernel cache warm
        once(python, n)
    wall: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    cpu: dict[str, list[float]] = {label: [] for label, _, _ in runs}
    for _ in range(args.runs):
        for label, python, n in runs:
            dt, dc = once(python, n)
            wall[label].append(dt)
            cpu[label].append(dc)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}; "
          f"python {platform.python_version()}; {args.runs} runs each, interleaved")
    print("| variant | wall median ms | wall lower quartile ms | wall median - numpy ms "
          "| cpu median ms | cpu median - numpy ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    med = statistics.median
    for label in wall:
        ts = sorted(wall[label])
        cells = [f"{med(ts) * 1e3:.1f}", f"{ts[len(ts) // 4] * 1e3:.1f}", "",
                 f"{med(cpu[label]) * 1e3:.1f}", ""]
        if "numpy" in wall:
            cells[2] = f"{(med(ts) - med(wall['numpy'])) * 1e3:+.1f}"
            cells[4] = f"{(med(cpu[label]) - med(cpu['numpy'])) * 1e3:+.1f}"
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
