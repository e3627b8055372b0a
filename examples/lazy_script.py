"""Lazy evaluation in a long script: nothing runs until a value is needed.

    python examples/lazy_script.py

A feature pipeline of some forty NumPy operations over a million rows. Each line records nodes;
the one `print` at the end optimizes the whole graph at once (common subexpressions, algebraic
simplification, fusion) and runs it as a handful of fused kernels. `explain` shows the plan
without running it, and draws it.
"""
import os
import tempfile
import time

import tracer
import tracer.numpy as np

n = 1_000_000
t = np.linspace(0.0, 100.0, n)
signal = np.sin(t) + 0.5 * np.sin(3.1 * t) + 0.1 * np.cos(17.0 * t)
noise = 0.05 * np.cos(123.4 * t + 0.3)
x = signal + noise

# a long chain of derived features, as a notebook grows them
energy = x * x
clipped = np.clip(x, -1.2, 1.2)
rectified = np.maximum(x, 0.0)
scaled = (x - x.mean()) / x.std()
soft = np.tanh(2.0 * scaled)
score = 0.3 * energy + 0.2 * rectified + 0.5 * np.abs(soft)
score = score / score.max()
flags = (score > 0.5) & (np.abs(clipped) < 1.1)

records = tracer.stats().evaluations
print(f"recorded the pipeline: {records} evaluations so far, nothing has run")

plan = tracer.explain(score, flags)
print(f"plan: {len(plan.kernels)} fused kernels, peak {plan.peak_bytes / 2**20:.0f} MiB")
print(f"graph drawn to {plan.save(os.path.join(tempfile.gettempdir(), 'lazy_script.svg'))}")

t0 = time.perf_counter()
print(f"mean score {float(score.mean()):.6f}, flagged {int(flags.sum())} of {n}")
print(f"first evaluation (compiles included): {time.perf_counter() - t0:.2f} s")
s = tracer.stats()
print(f"[tracer] {s.evaluations} evaluations, {s.kernels_launched} kernel launches")
