"""Reductions and descriptive statistics."""

# %% sum_mean_axes
import numpy as np

a = np.arange(12).reshape(3, 4)
print(a.sum())
print(a.sum(axis=0))
print(a.sum(axis=1))
print(a.mean(), a.mean(axis=0))
print(a.sum(axis=1, keepdims=True))

# %% min_max_argmin_argmax
import numpy as np

a = np.array([[4, 9, 2], [7, 1, 8]])
print(a.min(), a.max())
print(a.argmin(), a.argmax())
print(a.min(axis=0), a.argmax(axis=1))
print(np.unravel_index(a.argmax(), a.shape))

# %% var_std_ddof
import numpy as np

x = np.array([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
print(x.mean())
print(x.var(), x.std())
print(x.var(ddof=1))
print(round(x.std(ddof=1), 6))

# %% prod_and_cumprod
import numpy as np

a = np.array([1, 2, 3, 4, 5])
print(a.prod())
print(np.cumprod(a))
print(np.prod(np.array([[1.0, 2.0], [3.0, 4.0]]), axis=0))

# %% any_all
import numpy as np

a = np.array([[True, False, True], [True, True, True]])
print(a.any(), a.all())
print(a.all(axis=1))
print(np.any(a, axis=0))
x = np.array([0.1, 0.5, 0.9])
print(bool(((x > 0) & (x < 1)).all()))

# %% median_percentile
import numpy as np

data = np.array([7, 1, 3, 9, 5, 11, 2])
print(np.median(data))
print(np.percentile(data, [25, 50, 75]))
print(np.quantile(data, 0.9))
print(np.median(np.array([[1, 4, 2], [8, 3, 5]]), axis=1))

# %% percentile_methods
import numpy as np

x = np.array([1.0, 2.0, 4.0, 7.0, 11.0, 16.0])
for m in ["linear", "lower", "higher", "nearest", "midpoint"]:
    print(m, np.percentile(x, 40, method=m))

# %% average_weighted
import numpy as np

grades = np.array([85, 92, 78])
weights = np.array([0.2, 0.5, 0.3])
print(np.average(grades, weights=weights))
avg, wsum = np.average(grades, weights=weights, returned=True)
print(avg, wsum)

# %% ptp_and_range
import numpy as np

a = np.array([[3, 8, 1], [9, 2, 6]])
print(np.ptp(a))
print(np.ptp(a, axis=0))
print(a.max(axis=1) - a.min(axis=1))

# %% count_nonzero
import numpy as np

a = np.array([[0, 1, 7, 0], [3, 0, 2, 19]])
print(np.count_nonzero(a))
print(np.count_nonzero(a, axis=0))
print(np.count_nonzero(a > 2, axis=1))

# %% cov_corrcoef
import numpy as np

x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
y = np.array([2.0, 4.1, 5.9, 8.2, 9.9])
print(np.round(np.cov(x, y), 4))
r = np.corrcoef(x, y)[0, 1]
print(f"r = {r:.5f}")

# %% column_stats_table
import numpy as np

data = np.array([[170, 65.0, 30],
                 [180, 80.5, 45],
                 [165, 55.2, 22],
                 [175, 72.3, 35]])
for name, col in zip(["height", "weight", "age"], data.T):
    print(f"{name:>6}: mean={col.mean():7.2f} std={col.std():6.2f} min={col.min():6.1f} max={col.max():6.1f}")

# %% mean_of_large_random
import numpy as np

rng = np.random.default_rng(0)
x = rng.standard_normal(1_000_000)
print(f"{x.mean():.4f} {x.std():.4f}")
print(f"{np.abs(x).max():.4f}")
print((x > 2).mean().round(4))

# %% sum_dtype_argument
import numpy as np

a = np.array([200, 100, 50], dtype=np.uint8)
print(a.sum(), a.sum().dtype)
print(a.sum(dtype=np.uint8))
print(np.mean(a, dtype=np.float32))

# %% argmax_ties_first
import numpy as np

a = np.array([1, 7, 3, 7, 2, 7])
print(np.argmax(a), np.argmin(a))
b = np.array([[1, 5, 5], [6, 6, 0]])
print(b.argmax(axis=1), b.argmax(axis=0))

# %% empty_reductions
import numpy as np

e = np.array([])
print(e.sum(), e.prod())
print(np.zeros((0, 3)).sum(axis=0))
print(np.ones((2, 0)).sum(axis=1))

# %% multi_axis_reduction
import numpy as np

a = np.arange(24).reshape(2, 3, 4)
print(a.sum(axis=(0, 2)))
print(a.max(axis=(1, 2)))
print(a.mean(axis=-1))

# %% zscore_table
import numpy as np

scores = np.array([[56, 78, 90], [65, 88, 72], [80, 91, 60], [72, 70, 85]], dtype=float)
z = (scores - scores.mean(axis=0)) / scores.std(axis=0)
print(np.round(z, 3))
print(np.round(z.mean(axis=0), 10))

# %% mode_with_bincount
import numpy as np

votes = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5])
counts = np.bincount(votes)
print(counts)
print("mode:", counts.argmax())
