"""unique, isin and the set routines."""

# %% unique_basic
import numpy as np

a = np.array([3, 1, 2, 3, 1, 1, 5])
print(np.unique(a))
vals, counts = np.unique(a, return_counts=True)
print(vals, counts)
print(dict(zip(vals.tolist(), counts.tolist())))

# %% unique_index_inverse
import numpy as np

a = np.array([10, 20, 10, 30, 20, 10])
u, idx, inv = np.unique(a, return_index=True, return_inverse=True)
print(u, idx, inv)
print(np.array_equal(u[inv], a))

# %% unique_rows
import numpy as np

m = np.array([[1, 2], [3, 4], [1, 2], [0, 9], [3, 4]])
print(np.unique(m, axis=0))
print(len(np.unique(m, axis=0)))

# %% unique_strings
import numpy as np

words = np.array("the cat and the hat and the bat".split())
u, c = np.unique(words, return_counts=True)
for w, n in zip(u, c):
    print(w, n)

# %% isin_filter
import numpy as np

ids = np.array([101, 205, 333, 404, 512, 101])
banned = [205, 404, 999]
print(np.isin(ids, banned))
print(ids[~np.isin(ids, banned)])
print(np.isin(ids, banned, invert=True).sum())

# %% intersect_union_diff
import numpy as np

a = np.array([1, 3, 5, 7, 9, 3])
b = np.array([3, 4, 5, 6, 7])
print(np.intersect1d(a, b))
print(np.union1d(a, b))
print(np.setdiff1d(a, b))
print(np.setxor1d(a, b))

# %% intersect_return_indices
import numpy as np

a = np.array([5, 1, 8, 3])
b = np.array([3, 9, 5, 2])
common, ia, ib = np.intersect1d(a, b, return_indices=True)
print(common, ia, ib)

# %% common_values_two_arrays
import numpy as np

# How to find common values between two arrays?
rng = np.random.default_rng(1)
Z1 = rng.integers(0, 10, 10)
Z2 = rng.integers(0, 10, 10)
print(Z1, Z2)
print(np.intersect1d(Z1, Z2))

# %% unique_floats_rounding
import numpy as np

x = np.array([0.1 + 0.2, 0.3, 0.30000001, 1 / 3, 0.333])
print(np.unique(x).size)
print(np.unique(np.round(x, 3)))

# %% unique_large_labels
import numpy as np

rng = np.random.default_rng(3)
labels = rng.integers(0, 50, size=100_000)
u, c = np.unique(labels, return_counts=True)
print(u.size, c.sum())
print(c.min(), c.max(), u[c.argmax()])

# %% in1d_style_membership
import numpy as np

vocab = np.array(["apple", "banana", "cherry"])
tokens = np.array(["banana", "kiwi", "apple", "apple", "plum"])
known = np.isin(tokens, vocab)
print(known)
print(f"{known.mean():.0%} known")

# %% unique_sorted_2d_flat
import numpy as np

m = np.array([[3, 3, 1], [2, 1, 2]])
print(np.unique(m))
print(np.unique(m, return_counts=True)[1])
