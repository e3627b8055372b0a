"""The memory_budget issue's program at its size: x = arange(n) / n, 30 chained elementwise ops,
then the mean and the standard deviation, under a budget; how much the process grows
(tests/api/test_budget_rss.py measures it) against the budget, in fresh processes.

    python bench/bench_budget_rss.py [--n 2e7] [--budget "512 MiB"]

Rows: compiled with a warm kernel cache (the cache filled by a first process), and tiered with
a cold one (the groups run on NumPy tiles while their kernels compile).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.api.test_budget_rss import fresh_run  # noqa: E402
from tracer.budget import fmt_bytes, parse_size  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=float, default=2e7)
    ap.add_argument("--budget", default="512 MiB")
    a = ap.parse_args()
    n, limit = int(a.n), parse_size(a.budget)
    with tempfile.TemporaryDirectory() as tmp:
        fresh_run(Path(tmp) / "warm", 100_000, None, "sync")  # its parallel kernels
        rows = {"compiled, warm cache": fresh_run(Path(tmp) / "warm", n, limit, "sync"),
                "tiered, cold cache": fresh_run(Path(tmp) / "cold", n, limit, "tiered")}
    print(f"n = {n:,}, budget {fmt_bytes(limit)}")
    for name, r in rows.items():
        print(f"{name:<22} grew {fmt_bytes(r['grew']):>10}  planned {fmt_bytes(r['planned']):>10}"
              f"  measured {fmt_bytes(r['measured']):>10}  tiered groups {r['tiered']}")


if __name__ == "__main__":
    main()
