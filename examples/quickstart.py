"""Quickstart: ordinary NumPy code, run lazily as fused Numba kernels."""
import tracer
import tracer.numpy as np

# Nothing runs yet: each operation on a large array records a node and returns a lazy array.
x = np.arange(1_000_000.)
y = (x * 2 + 1).sum()

# Printing needs the value, so the graph is optimized, fused, compiled and run.
print(y)  # 1000000000000.0

# Ops on small realized values (at most 16,384 elements each, TRACER_EAGER_SIZE) run at once
# through NumPy instead: a kernel would cost more than it saves. Their results are NumPy's.
s = np.arange(10.)
print(s * 2, s.sum(), type(s[3]).__name__)

# Two float32 matrices, built the NumPy way.
a = np.linspace(0, 1, 400_000, dtype=np.float32).reshape(1000, 400)
b = np.ones((1000, 400), dtype=np.float32) * np.arange(400, dtype=np.float32)

# A reduction with fused elementwise producers: squared distance per row, no temporaries.
dist = ((a - b) ** 2).sum(axis=1)

# Plan without running: graphs before and after, each pass, the kernels.
plan = tracer.explain(dist)
print(plan)

# Now force it.
print(dist[:3])

# Counters and times: kernels compiled, cache hits, compile and run seconds.
print(tracer.stats())
