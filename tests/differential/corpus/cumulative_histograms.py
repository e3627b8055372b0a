"""Cumulative sums, differences, histograms, bincount and digitize."""

# %% cumsum_cumprod_axes
import numpy as np

a = np.arange(1, 7).reshape(2, 3)
print(np.cumsum(a))
print(np.cumsum(a, axis=0))
print(a.cumsum(axis=1))
print(np.cumprod(a, axis=1))

# %% running_balance
import numpy as np

transactions = np.array([100.0, -20.5, -30.0, 250.0, -99.99])
balance = np.cumsum(transactions)
print(balance)
print(f"lowest balance {balance.min():.2f} after transaction {balance.argmin() + 1}")

# %% diff_and_gradient
import numpy as np

x = np.array([1, 4, 9, 16, 25])
print(np.diff(x))
print(np.diff(x, n=2))
print(np.gradient(x.astype(float)))
print(np.ediff1d(x, to_begin=0))

# %% histogram_counts
import numpy as np

data = np.array([1.2, 2.5, 2.7, 3.1, 3.9, 4.4, 4.5, 6.0, 7.3, 9.9])
counts, edges = np.histogram(data, bins=4)
print(counts)
print(edges)
counts2, _ = np.histogram(data, bins=[0, 3, 5, 10])
print(counts2)

# %% histogram_density
import numpy as np

rng = np.random.default_rng(17)
x = rng.normal(0.0, 1.0, 5000)
hist, edges = np.histogram(x, bins=10, range=(-3, 3), density=True)
print(np.round(hist, 3))
print(np.round((hist * np.diff(edges)).sum(), 6))

# %% bincount_weights
import numpy as np

store = np.array([0, 2, 1, 2, 0, 2])
sales = np.array([10.0, 5.5, 3.0, 4.5, 1.0, 2.0])
print(np.bincount(store))
print(np.bincount(store, weights=sales))
print(np.bincount(store, minlength=5))

# %% digitize_age_groups
import numpy as np

ages = np.array([3, 17, 18, 25, 40, 64, 65, 90])
bins = np.array([0, 18, 65])
groups = np.digitize(ages, bins)
print(groups)
print(np.digitize(ages, bins, right=True))
labels = np.array(["", "child", "adult", "senior"])
print(labels[groups])

# %% cumulative_max_drawdown
import numpy as np

prices = np.array([100.0, 105.0, 102.0, 110.0, 95.0, 99.0, 120.0, 90.0])
peak = np.maximum.accumulate(prices)
drawdown = (prices - peak) / peak
print(np.round(drawdown, 4))
print(f"max drawdown {drawdown.min():.2%}")

# %% group_sums_with_add_at
import numpy as np

keys = np.array([1, 3, 1, 0, 3, 3])
vals = np.array([2.0, 1.0, 4.0, 8.0, 0.5, 0.5])
out = np.zeros(4)
np.add.at(out, keys, vals)
print(out)

# %% histogram2d_grid
import numpy as np

x = np.array([0.1, 0.4, 0.6, 0.9, 0.95])
y = np.array([0.2, 0.8, 0.3, 0.7, 0.1])
H, xe, ye = np.histogram2d(x, y, bins=2, range=[[0, 1], [0, 1]])
print(H)

# %% cumsum_normalized_cdf
import numpy as np

pmf = np.array([1, 3, 5, 1], dtype=float)
pmf /= pmf.sum()
cdf = np.cumsum(pmf)
print(cdf)
u = np.array([0.05, 0.3, 0.85, 0.99])
print(np.searchsorted(cdf, u))

# %% cumsum_large_int
import numpy as np

a = np.arange(1, 300_001, dtype=np.int64)
c = np.cumsum(a)
print(c[-1], c[-1] == 300_000 * 300_001 // 2)
print(np.cumsum(a % 3)[:9])

# %% unique_consecutive_runs
import numpy as np

# run-length encoding
x = np.array([1, 1, 2, 2, 2, 3, 1, 1])
change = np.flatnonzero(np.diff(x)) + 1
starts = np.concatenate([[0], change])
lengths = np.diff(np.concatenate([starts, [x.size]]))
print(x[starts], lengths)

# %% trapezoid_integral
import numpy as np

x = np.linspace(0, np.pi, 101)
y = np.sin(x)
area = np.sum((y[1:] + y[:-1]) * np.diff(x)) / 2
print(f"{area:.6f}")
print(f"{np.trapezoid(y, x):.6f}")
