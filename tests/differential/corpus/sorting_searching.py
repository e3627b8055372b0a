"""Sorting, argsort, partition, searchsorted and friends."""

# %% sort_basic
import numpy as np

a = np.array([3, 1, 4, 1, 5, 9, 2, 6])
print(np.sort(a))
print(np.sort(a)[::-1])
m = np.array([[9, 2, 7], [4, 8, 1]])
print(np.sort(m))
print(np.sort(m, axis=0))
print(np.sort(m, axis=None))

# %% sort_in_place_method
import numpy as np

a = np.array([5.5, -1.0, 3.25, 0.0])
a.sort()
print(a)
m = np.array([[3, 1, 2], [9, 7, 8]])
m.sort(axis=1)
print(m)

# %% argsort_reorder
import numpy as np

names = np.array(["carol", "alice", "bob", "dave"])
ages = np.array([35, 28, 42, 19])
order = np.argsort(ages)
print(order)
print(names[order])
print(ages[order[::-1]])

# %% argsort_stable_ties
import numpy as np

keys = np.array([2, 1, 2, 1, 3, 1])
print(np.argsort(keys, kind="stable"))
print(np.argsort(-keys, kind="stable"))

# %% sort_by_column
import numpy as np

# Sort a matrix by its second column
Z = np.array([[1, 9, 3], [4, 2, 6], [7, 5, 0], [3, 2, 8]])
print(Z[Z[:, 1].argsort(kind="stable")])

# %% lexsort_two_keys
import numpy as np

last = np.array(["smith", "jones", "smith", "adams"])
first = np.array(["bob", "amy", "al", "zed"])
idx = np.lexsort((first, last))
print(idx)
print([f"{first[i]} {last[i]}" for i in idx])

# %% partition_kth
import numpy as np

a = np.array([7, 2, 9, 4, 1, 8, 3])
p = np.partition(a, 3)
print(p[3])
print(np.sort(p[:3]), np.sort(p[4:]))
print(np.sort(a[np.argpartition(a, 3)[:3]]))

# %% top_k_largest
import numpy as np

# Get the n largest values of an array
rng = np.random.default_rng(42)
Z = rng.permutation(1000)
n = 5
print(np.sort(Z[np.argpartition(-Z, n)[:n]]))
print(np.sort(Z)[-n:])

# %% searchsorted_bins
import numpy as np

edges = np.array([0, 10, 20, 30, 40])
values = np.array([5, 10, 15, 29, 30, 45, -1])
print(np.searchsorted(edges, values))
print(np.searchsorted(edges, values, side="right"))
print(np.searchsorted(edges, 25))

# %% searchsorted_insert_keep_sorted
import numpy as np

a = np.array([1, 3, 5, 7, 9])
for x in [4, 0, 10, 7]:
    i = np.searchsorted(a, x)
    a = np.insert(a, i, x)
print(a)

# %% closest_value
import numpy as np

# Find the closest value to a given scalar in an array
Z = np.arange(100) * 0.37
v = 17.0
index = (np.abs(Z - v)).argmin()
print(index, Z[index])

# %% sort_floats_with_nan
import numpy as np

a = np.array([3.0, np.nan, 1.0, -np.inf, 2.0, np.nan])
print(np.sort(a))
print(np.argsort(a))

# %% sort_descending_2d_rows
import numpy as np

scores = np.array([[70, 95, 80], [60, 55, 90]])
print(-np.sort(-scores, axis=1))
print(np.argsort(-scores, axis=1))

# %% argmax_per_row_labels
import numpy as np

probs = np.array([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.05, 0.05, 0.9]])
labels = np.array(["cat", "dog", "bird"])
print(labels[probs.argmax(axis=1)])

# %% sort_large_random
import numpy as np

rng = np.random.default_rng(7)
x = rng.integers(0, 1_000_000, size=200_000)
s = np.sort(x)
print(s[:5], s[-5:])
print(bool(np.all(np.diff(s) >= 0)))
print(np.searchsorted(s, 500_000))

# %% median_via_sort
import numpy as np

x = np.array([12.0, 3.5, 7.25, 9.0, 1.0, 4.0])
s = np.sort(x)
n = len(s)
med = (s[n // 2 - 1] + s[n // 2]) / 2
print(med, np.median(x))

# %% rank_of_values
import numpy as np

x = np.array([40, 10, 30, 20])
ranks = np.empty_like(x)
ranks[np.argsort(x)] = np.arange(len(x))
print(ranks)
print(x.argsort().argsort())

# %% sort_strings
import numpy as np

fruits = np.array(["pear", "apple", "fig", "banana"])
print(np.sort(fruits))
print(fruits[np.argsort([len(f) for f in fruits], kind="stable")])
