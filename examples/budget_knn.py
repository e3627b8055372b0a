"""k-nearest-neighbour distances under a memory budget, written naively.

    python examples/budget_knn.py [N] [budget]

The N x M x D difference tensor alone would need N*M*D*4 bytes; under the budget the program
runs in chunks of X's rows that fit.
"""
import sys

import numpy

import tracer
import tracer.numpy as np

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
budget = sys.argv[2] if len(sys.argv) > 2 else "256 MiB"
rng = numpy.random.default_rng(0)
X = np.asarray(rng.standard_normal((N, 64), dtype=numpy.float32))
Y = np.asarray(rng.standard_normal((N, 64), dtype=numpy.float32))

d2 = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)  # N x N squared distances
nearest, which = d2.min(1), d2.argmin(1)

print(f"NumPy, line by line: {N * N * 64 * 4 / 2**30:.1f} GiB for the difference tensor alone")
print(f"unbudgeted plan: {tracer.explain(nearest, which).peak_bytes / 2**20:.0f} MiB")
with tracer.memory_budget(budget):
    tracer.evaluate(nearest, which)
s = tracer.stats()
print(f"under {budget}: {s.split_chunks} chunks, planned {s.planned_peak_bytes / 2**20:.1f} MiB, "
      f"measured {s.measured_peak_bytes / 2**20:.1f} MiB")
print("nearest distance of the first 5 points:", numpy.asarray(nearest[:5]).round(3))
print("their nearest neighbours:", numpy.asarray(which[:5]))
