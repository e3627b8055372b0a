"""Benchmarks: `python -m bench.ablation`, `python bench/bench_foundation.py`."""
