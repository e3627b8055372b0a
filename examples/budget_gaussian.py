"""A Gaussian kernel matrix times a vector under a memory budget (eXLA's sparse-GP case).

    python examples/budget_gaussian.py [N] [budget]

exp(-dist2(X, Z) / l) @ v builds an N x M kernel matrix (and an N x M x D difference) in
NumPy; under the budget only blocks of X's rows exist at a time.
"""
import sys

import numpy

import tracer
import tracer.numpy as np

N = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
budget = sys.argv[2] if len(sys.argv) > 2 else "256 MiB"
M, D, lengthscale = 4000, 8, 2.0
rng = numpy.random.default_rng(0)
X = np.asarray(rng.standard_normal((N, D), dtype=numpy.float32))
Z = np.asarray(rng.standard_normal((M, D), dtype=numpy.float32))
v = np.asarray(rng.standard_normal(M, dtype=numpy.float32))

dist2 = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
kv = np.exp(-dist2 / lengthscale) @ v

print(f"unbudgeted plan: {tracer.explain(kv).peak_bytes / 2**20:.0f} MiB")
with tracer.memory_budget(budget):
    tracer.evaluate(kv)
s = tracer.stats()
print(f"under {budget}: {s.split_chunks} chunks, planned {s.planned_peak_bytes / 2**20:.1f} MiB, "
      f"measured {s.measured_peak_bytes / 2**20:.1f} MiB")
print("K(X, Z) @ v, first 5:", numpy.asarray(kv[:5]).round(3))
