"""Attention at a long sequence length under a memory budget, written naively.

    python examples/budget_attention.py [L] [budget]

softmax(Q @ K.T / sqrt(d)) @ V needs an L x L score matrix; under the budget it exists one
block of query rows at a time.
"""
import math
import sys

import numpy

import tracer
import tracer.numpy as np

L = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
budget = sys.argv[2] if len(sys.argv) > 2 else "256 MiB"
d = 64
rng = numpy.random.default_rng(0)
Q, K, V = (np.asarray(rng.standard_normal((L, d), dtype=numpy.float32)) for _ in range(3))

scores = Q @ K.T / math.sqrt(d)
weights = np.exp(scores - scores.max(axis=1, keepdims=True))
out = (weights / weights.sum(axis=1, keepdims=True)) @ V

print(f"unbudgeted plan: {tracer.explain(out).peak_bytes / 2**20:.0f} MiB")
with tracer.memory_budget(budget):
    tracer.evaluate(out)
s = tracer.stats()
print(f"under {budget}: {s.split_chunks} chunks, planned {s.planned_peak_bytes / 2**20:.1f} MiB, "
      f"measured {s.measured_peak_bytes / 2**20:.1f} MiB")
print("first row of the output:", numpy.asarray(out[0, :4]).round(4))
