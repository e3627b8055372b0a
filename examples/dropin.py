"""Drop-in: an ordinary NumPy script, run by tracer after changing one line.

    python examples/dropin.py           # tracer.numpy
    python examples/dropin.py --numpy   # the same script on NumPy, for comparison

The script is what a notebook might hold: seeded data, standardization, a few rounds of k-means,
per-cluster statistics, percentiles and a histogram. Both runs print the same numbers.
"""
import sys

if "--numpy" in sys.argv:
    import numpy as np
else:
    import tracer.numpy as np  # the one changed line

# ---- the user's script, unchanged from here
rng = np.random.default_rng(42)
centers = np.array([[0.0, 0.0], [5.0, 5.0], [-4.0, 6.0]])
labels_true = rng.integers(0, 3, size=30000)
points = centers[labels_true] + rng.standard_normal((30000, 2))

# standardize the features
mu, sigma = points.mean(axis=0), points.std(axis=0)
z = (points - mu) / sigma
print("standardized:", np.allclose(z.mean(axis=0), 0), np.allclose(z.std(axis=0), 1))

# k-means, ten rounds from three seeded points
k = 3
c = z[rng.choice(len(z), size=k, replace=False)]
for _ in range(10):
    d2 = ((z[:, None, :] - c[None, :, :]) ** 2).sum(axis=-1)
    assign = d2.argmin(axis=1)
    onehot = assign[:, None] == np.arange(k)
    c = (onehot.T @ z) / onehot.sum(axis=0)[:, None]
inertia = d2.min(axis=1).sum()
print(f"inertia: {inertia:.3f}")

# cluster sizes and centers in the original units, largest cluster first
sizes = np.bincount(assign, minlength=k)
order = np.argsort(-sizes)
print("sizes:", sizes[order])
print("centers:\n", np.round(c[order] * sigma + mu, 2))

# distance of each point to its center: percentiles and a histogram
dist = np.sqrt(d2[np.arange(len(z)), assign])
print("distance percentiles (50, 90, 99):", np.round(np.percentile(dist, [50, 90, 99]), 4))
counts, edges = np.histogram(dist, bins=5)
print("histogram:", counts, np.round(edges, 3))
print("points farther than 3:", int((dist > 3).sum()))

if "--numpy" not in sys.argv:
    import tracer
    s = tracer.stats()
    print(f"[tracer] {s.evaluations} evaluations, {s.kernels_launched} kernel launches, "
          f"{s.fallbacks} NumPy fallbacks")
    print(tracer.coverage_report())
