"""NumPy values meeting plain Python: builtins, scalars as keys, math, json, isinstance."""

# %% builtin_sum_max_sorted
import numpy as np

a = np.array([4, 1, 3, 2])
print(sum(a), max(a), min(a))
print(sorted(a))
print(list(a))
print(len(a), 3 in a, 7 in a)

# %% scalar_to_python
import math
import numpy as np

x = np.array([1.0, 4.0, 9.0])
total = x.sum()
print(math.sqrt(total))
print(int(x.max()) + 1, float(x.mean()) / 2)
print(round(x.mean(), 2), round(x.std()))
print(abs(-x.min()), divmod(int(x.sum()), 4))

# %% numpy_scalars_as_dict_keys
import numpy as np

labels = np.array([2, 0, 2, 1, 2, 0])
counts = {}
for v in labels:
    counts[v] = counts.get(v, 0) + 1
print(sorted((int(k), n) for k, n in counts.items()))

# %% dict_from_unique
import numpy as np

u, c = np.unique(np.array(["b", "a", "b", "c", "b"]), return_counts=True)
freq = dict(zip(u, c))
print(freq)
print(max(freq, key=freq.get))

# %% index_list_with_numpy_int
import numpy as np

names = ["ann", "bob", "cy", "dee"]
scores = np.array([71, 93, 88, 65])
best = scores.argmax()
print(names[best], scores[best])
order = np.argsort(scores)[::-1]
print([names[i] for i in order])

# %% range_from_array_values
import numpy as np

sizes = np.array([3, 1, 2])
for n in sizes:
    print(list(range(n)))
print(list(range(sizes.max())), "x" * sizes.sum())

# %% json_export
import json
import numpy as np

stats = {"mean": float(np.mean([1, 2, 3, 4])), "values": np.arange(3).tolist(),
         "matrix": np.eye(2).tolist()}
print(json.dumps(stats))
print(json.dumps({"n": int(np.int64(5)), "ok": bool(np.array([1, 2]).all())}))

# %% isinstance_checks
import numpy as np

a = np.arange(3)
print(isinstance(a, np.ndarray), type(a) is np.ndarray)
m = a.mean()
print(isinstance(m, float), isinstance(m, np.floating), isinstance(a[0], np.integer))

# %% format_helper_numbers
import numpy as np

def fmt(v):
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)

a = np.array([1.5, 2.25, 3.0])
print(fmt(a.mean()), fmt(a.sum()), fmt(len(a)))

# %% unpacking_and_zip
import numpy as np

point = np.array([3.0, 4.0])
x, y = point
print(x, y, np.hypot(x, y))
pairs = np.array([[1, 2], [3, 4], [5, 6]])
for a, b in pairs:
    print(a * b, end=" ")
print()
print(*np.arange(4), sep=", ")

# %% list_of_arrays_to_array
import numpy as np

rows = []
for i in range(3):
    rows.append(np.arange(4) * i)
M = np.array(rows)
print(M)
means = np.array([r.mean() for r in rows])
print(means, means.dtype)

# %% comprehension_over_matrix
import numpy as np

m = np.arange(9).reshape(3, 3)
print([row.max() for row in m])
print([int(v) for v in m.diagonal()])
print({i: float(r.mean()) for i, r in enumerate(m)})

# %% truthiness_scalars
import numpy as np

a = np.array([0, 3, 0])
if a.any():
    print("has nonzero")
if not a.all():
    print("has zero")
if a.sum() > 2:
    print("sum > 2")
print(bool(a[1]), bool(a[0]), bool(np.array([7])))

# %% array_equality_vs_identity
import numpy as np

a = np.array([1, 2, 3])
b = np.array([1, 2, 3])
print(a == b)
print(np.array_equal(a, b), (a == b).all(), a is b)
print(np.array_equal(a, b[:2]))

# %% asarray_aliasing
import numpy as np

a = np.array([1.0, 2.0, 3.0])
b = np.asarray(a)
b[0] = 100.0
print(a)
c = np.array(a)
c[1] = -1.0
print(a, c)

# %% function_modifies_argument
import numpy as np

def normalize_inplace(v):
    v -= v.min()
    v /= v.max()

data = np.array([2.0, 4.0, 6.0, 10.0])
normalize_inplace(data)
print(data)

# %% shape_attribute_assignment
import numpy as np

a = np.arange(6)
a.shape = (2, 3)
print(a)
a.shape = (3, -1)
print(a.shape)

# %% fill_and_resize
import numpy as np

a = np.empty(4)
a.fill(2.5)
print(a)
print(np.resize(np.array([1, 2, 3]), (2, 4)))

# %% copy_module_and_deepcopy
import copy
import numpy as np

a = np.arange(4)
b = copy.copy(a)
c = copy.deepcopy({"w": a})
a[0] = 9
print(a, b, c["w"])

# %% string_conversion_of_arrays
import numpy as np

a = np.array([1, 2, 3])
s = str(a)
print(s, len(s))
print("values: " + str(a.tolist()))
print(f"{a}", f"{a.sum()}", f"{a.mean()!r}")
