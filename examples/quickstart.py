"""Quickstart: ordinary NumPy code, run lazily as fused Numba kernels."""
import tracer
import tracer.numpy as np

# Nothing runs yet: each operation records a node and returns a lazy array.
x = np.arange(100_000.)
y = (x * 2 + 1).sum()

# Printing needs the value, so the graph is optimized, fused, compiled and run.
print(y)  # 10000000000.0

# Values of at most 4096 elements run op by op with NumPy instead: compiling a kernel for
# them would cost more than it saves (stats().small_graphs counts those evaluations).

# Two float32 matrices, built the NumPy way.
a = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
b = np.ones((3, 4), dtype=np.float32) * np.arange(4, dtype=np.float32)

# An elementwise expression: one fused kernel, no temporaries.
c = a * b + 0.5
print(c)

# A reduction with fused elementwise producers: squared distance per row.
dist = ((a - b) ** 2).sum(axis=1)

# Plan without running: graphs before and after, each pass, the kernels.
plan = tracer.explain(dist)
print(plan)

# Now force it.
print(dist)

# Counters and times: kernels compiled, cache hits, compile and run seconds.
print(tracer.stats())
