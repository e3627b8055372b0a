"""Seeded random numbers: the legacy global state and Generator."""

# %% legacy_seed_rand
import numpy as np

np.random.seed(0)
print(np.random.rand(3))
print(np.random.randint(0, 10, size=5))
print(np.round(np.random.randn(2, 2), 6))

# %% legacy_choice_shuffle
import numpy as np

np.random.seed(42)
deck = np.arange(10)
np.random.shuffle(deck)
print(deck)
print(np.random.choice(deck, 3, replace=False))
print(np.random.choice(["a", "b", "c"], size=6, p=[0.5, 0.3, 0.2]))

# %% legacy_distributions
import numpy as np

np.random.seed(1)
print(np.round(np.random.normal(10, 2, size=4), 4))
print(np.round(np.random.uniform(-1, 1, size=3), 4))
print(np.random.binomial(10, 0.3, size=6))
print(np.random.poisson(4, size=6))

# %% legacy_permutation
import numpy as np

np.random.seed(123)
print(np.random.permutation(8))
x = np.arange(12).reshape(4, 3)
print(np.random.permutation(x))

# %% legacy_random_sample_mean
import numpy as np

np.random.seed(2024)
x = np.random.random(100_000)
print(round(x.mean(), 4), round(x.var(), 4))
print(x.min() >= 0, x.max() < 1)

# %% generator_basics
import numpy as np

rng = np.random.default_rng(12345)
print(rng.random(3))
print(rng.integers(1, 7, size=10))
print(np.round(rng.normal(size=(2, 3)), 5))

# %% generator_choice_permutation
import numpy as np

rng = np.random.default_rng(7)
print(rng.choice(10, size=4, replace=False))
print(rng.permutation(6))
a = np.arange(5)
rng.shuffle(a)
print(a)
print(rng.choice(np.array([1.5, 2.5, 3.5]), size=5))

# %% generator_distributions
import numpy as np

rng = np.random.default_rng(99)
print(np.round(rng.uniform(0, 10, 4), 4))
print(np.round(rng.exponential(2.0, 4), 4))
print(rng.binomial(20, 0.5, 5))
print(rng.poisson(3.0, 5))
print(np.round(rng.standard_normal(3), 4))

# %% reproducible_streams
import numpy as np

a = np.random.default_rng(5).random(4)
b = np.random.default_rng(5).random(4)
print(np.array_equal(a, b))
np.random.seed(5)
c = np.random.rand(4)
np.random.seed(5)
d = np.random.rand(4)
print(np.array_equal(c, d))

# %% random_walk
import numpy as np

rng = np.random.default_rng(2)
steps = rng.choice(np.array([-1, 1]), size=1000)
walk = np.cumsum(steps)
print(walk[:10])
print(walk.min(), walk.max(), walk[-1])
print(np.abs(walk).argmax())

# %% dice_histogram
import numpy as np

rng = np.random.default_rng(31)
rolls = rng.integers(1, 7, size=(6000, 2)).sum(axis=1)
counts = np.bincount(rolls, minlength=13)[2:]
for total, n in zip(range(2, 13), counts):
    print(f"{total:2d} {n:4d} {'#' * (n // 50)}")

# %% bootstrap_mean_ci
import numpy as np

rng = np.random.default_rng(0)
sample = rng.exponential(scale=3.0, size=200)
boot = np.array([rng.choice(sample, size=sample.size).mean() for _ in range(500)])
lo, hi = np.percentile(boot, [2.5, 97.5])
print(f"mean={sample.mean():.3f} ci=({lo:.3f}, {hi:.3f})")

# %% train_test_split
import numpy as np

rng = np.random.default_rng(11)
X = np.arange(40).reshape(20, 2)
y = np.arange(20) % 2
idx = rng.permutation(len(X))
cut = int(0.75 * len(X))
train, test = idx[:cut], idx[cut:]
print(X[train].shape, X[test].shape)
print(test)
print(y[test].sum())

# %% random_matrix_stats_float32
import numpy as np

rng = np.random.default_rng(8)
M = rng.standard_normal((500, 400), dtype=np.float32)
print(M.dtype)
print(np.round(M.mean(axis=0)[:3], 4))
print(f"{M.std():.3f}")
