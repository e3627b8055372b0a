"""Bigger arrays (10^4 to 10^6 elements): the values a script computes on real data."""

# %% sensor_statistics
import numpy as np

rng = np.random.default_rng(100)
readings = rng.normal(20.0, 5.0, size=(24, 3600))
hourly = readings.mean(axis=1)
print(np.round(hourly[:4], 4))
print(readings.mean())
print(readings.std())
print(np.round(readings.max(axis=1) - readings.min(axis=1), 3)[:4])

# %% image_normalize_uint8
import numpy as np

rng = np.random.default_rng(12)
img = rng.integers(0, 256, size=(480, 640, 3), dtype=np.uint8)
gray = (0.299 * img[..., 0] + 0.587 * img[..., 1] + 0.114 * img[..., 2]).astype(np.uint8)
print(gray.shape, gray.dtype)
print(gray[:2, :5])
print(gray.mean())
norm = (img / 255.0).astype(np.float32)
print(norm.dtype, norm.max(), norm.sum(axis=(0, 1)))

# %% float32_sum_printed
import numpy as np

x = np.linspace(0, 1, 100_001, dtype=np.float32)
print(x.sum())
print(x.mean())
print((x * x).sum(), np.sqrt((x * x).mean()))

# %% float64_sum_random
import numpy as np

np.random.seed(10)
data = np.random.rand(250_000)
print(data.sum())
print(data.mean(), data.var())
print(np.median(data))

# %% threshold_and_count_large
import numpy as np

rng = np.random.default_rng(77)
x = rng.standard_exponential(300_000)
print((x > 3).sum(), np.count_nonzero(x < 0.1))
print(np.round(np.percentile(x, [50, 90, 99]), 4))
clipped = np.clip(x, 0, 3)
print(round(float(clipped.mean()), 6))

# %% cumulative_returns
import numpy as np

rng = np.random.default_rng(8)
returns = rng.normal(0.0005, 0.01, size=10_000)
wealth = np.cumprod(1 + returns)
print(f"{wealth[-1]:.6f}")
peak = np.maximum.accumulate(wealth)
print(f"{((wealth - peak) / peak).min():.6f}")
print(np.argmax(wealth), np.argmin(wealth))

# %% int_histogram_large
import numpy as np

rng = np.random.default_rng(5)
rolls = rng.integers(1, 7, size=(100_000, 3)).sum(axis=1)
counts = np.bincount(rolls)
print(counts[3:])
print(rolls.mean(), rolls.min(), rolls.max())

# %% distance_to_centroids_large
import numpy as np

rng = np.random.default_rng(1)
X = rng.standard_normal((20_000, 8))
C = rng.standard_normal((16, 8))
d = np.sqrt(((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2))
labels = d.argmin(axis=1)
print(np.bincount(labels, minlength=16))
print(round(float(d.min(axis=1).mean()), 6))

# %% softmax_large_batch
import numpy as np

rng = np.random.default_rng(3)
logits = rng.standard_normal((2048, 100)).astype(np.float32) * 4
z = logits - logits.max(axis=1, keepdims=True)
p = np.exp(z)
p /= p.sum(axis=1, keepdims=True)
print(p.dtype, p.shape)
print(np.abs(p.sum(axis=1) - 1).max() < 1e-5)
print(np.round(p[0, :5], 5))
print(p.argmax(axis=1)[:10])

# %% matrix_normalize_rows_large
import numpy as np

rng = np.random.default_rng(4)
M = rng.random((1000, 300))
rows = M / M.sum(axis=1, keepdims=True)
cols = (M - M.mean(axis=0)) / M.std(axis=0)
print(np.round(rows.sum(axis=1)[:3], 12))
print(np.round(cols.std(axis=0)[:3], 12))
print(f"{np.abs(cols).max():.6f}")

# %% where_and_masking_large
import numpy as np

x = np.linspace(-10, 10, 400_001)
y = np.where(x > 0, np.sqrt(np.abs(x)), -x ** 2)
print(y[:3], y[-3:])
print(round(float(y.sum()), 4))
print(np.argmax(y), np.argmin(y))

# %% uint8_overflow_large
import numpy as np

a = np.full(50_000, 200, dtype=np.uint8)
b = a + a
print(b[:5], b.dtype)
print(b.sum(), a.sum(dtype=np.uint8))
print((a.astype(np.int32) + a).sum())
