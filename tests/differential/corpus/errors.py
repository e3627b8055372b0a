"""Common mistakes: the exception, at the line that made it."""

# %% broadcast_mismatch
import numpy as np

a = np.arange(6).reshape(2, 3)
b = np.arange(4)
print(a.shape, b.shape)
c = a + b
print(c)

# %% reshape_wrong_size
import numpy as np

a = np.arange(10)
print(a.reshape(2, 5))
b = a.reshape(3, 4)

# %% index_out_of_bounds
import numpy as np

a = np.array([10, 20, 30])
print(a[2])
print(a[3])

# %% index_out_of_bounds_2d
import numpy as np

grid = np.zeros((3, 3))
for i in range(4):
    grid[i, i] = 1
print(grid)

# %% matmul_shape_mismatch
import numpy as np

W = np.ones((3, 4))
x = np.ones(3)
y = W @ x

# %% axis_out_of_range
import numpy as np

m = np.ones((2, 3))
print(m.sum(axis=1))
print(m.sum(axis=2))

# %% singular_matrix_inverse
import numpy as np

A = np.array([[1.0, 2.0], [2.0, 4.0]])
print(np.linalg.det(A))
Ainv = np.linalg.inv(A)
print(Ainv)

# %% ambiguous_truth_value
import numpy as np

x = np.array([1, -2, 3])
if x > 0:
    print("positive")

# %% ambiguous_truth_in_and
import numpy as np

a = np.array([1, 5, 9])
mask = (a > 2) and (a < 8)

# %% concatenate_dim_mismatch
import numpy as np

a = np.zeros((2, 3))
b = np.ones((2, 2))
print(np.concatenate([a, b], axis=1).shape)
print(np.concatenate([a, b], axis=0))

# %% stack_unequal_shapes
import numpy as np

rows = [np.arange(3), np.arange(3), np.arange(4)]
m = np.stack(rows)

# %% inhomogeneous_list
import numpy as np

ragged = [[1, 2, 3], [4, 5]]
a = np.array(ragged)

# %% float_index
import numpy as np

a = np.arange(10)
mid = len(a) / 2
print(a[mid])

# %% inplace_cast_error
import numpy as np

counts = np.zeros(3, dtype=int)
counts += 0.5

# %% assign_shape_mismatch
import numpy as np

a = np.zeros(5)
a[:2] = np.array([1.0, 2.0])
print(a)
a[2:] = np.array([7.0, 8.0])

# %% errstate_raise_divide
import numpy as np

with np.errstate(divide="raise"):
    r = np.array([1.0, 2.0]) / np.array([1.0, 0.0])
    print(r)

# %% int_of_array
import numpy as np

a = np.array([1.5, 2.5])
n = int(a)

# %% cholesky_not_positive_definite
import numpy as np

A = np.array([[1.0, 2.0], [2.0, 1.0]])
L = np.linalg.cholesky(A)

# %% solve_nonsquare
import numpy as np

A = np.ones((3, 2))
b = np.ones(3)
x = np.linalg.solve(A, b)

# %% choice_bad_probabilities
import numpy as np

rng = np.random.default_rng(0)
print(rng.choice(3, size=2, p=[0.5, 0.25, 0.25]))
print(rng.choice(3, size=2, p=[0.5, 0.5, 0.5]))

# %% bool_mask_wrong_length
import numpy as np

a = np.arange(5)
mask = np.array([True, False, True])
print(a[mask])

# %% computed_index_out_of_bounds
import numpy as np

a = np.array([3.0, 9.0, 4.0])
i = a.argmax()
print(i)
print(a[i + 2])

# %% caught_and_reported
import numpy as np

for shape in [(2, 6), (4, 3), (5, 5)]:
    try:
        m = np.arange(12).reshape(shape)
        print(shape, "ok", m[-1, -1])
    except ValueError as e:
        print(shape, "error:", e)

# %% caught_linalg_error
import numpy as np

mats = [np.eye(2), np.zeros((2, 2)), np.array([[2.0, 1.0], [1.0, 2.0]])]
for M in mats:
    try:
        print(np.round(np.linalg.inv(M), 3).tolist())
    except np.linalg.LinAlgError as e:
        print("LinAlgError:", e)

# %% transpose_bad_axes
import numpy as np

t = np.zeros((2, 3, 4))
print(t.transpose(2, 0, 1).shape)
print(t.transpose(0, 1).shape)

# %% squeeze_non_unit
import numpy as np

x = np.zeros((3, 1))
print(x.squeeze(axis=1).shape)
print(x.squeeze(axis=0).shape)

# %% divide_by_zero_integer_scalar
import numpy as np

vals = np.array([4, 6, 8])
n = vals.size - 3
print(vals.sum() // n)

# %% percentile_out_of_range
import numpy as np

x = np.arange(10)
print(np.percentile(x, 50))
print(np.percentile(x, 150))

# %% string_add_to_array
import numpy as np

a = np.array([1, 2, 3])
label = "total: " + a.sum()

# %% chained_comparison
import numpy as np

x = np.array([0.5, 2.0, 7.5])
ok = 0 < x < 5
print(ok)

# %% write_to_diagonal_view
import numpy as np

m = np.arange(9).reshape(3, 3)
d = np.diagonal(m)
print(d)
d[0] = 100
print(m)

# %% write_to_broadcast_view
import numpy as np

row = np.array([1, 2, 3])
tiled = np.broadcast_to(row, (4, 3))
print(tiled.sum())
tiled[0, 0] = 9

# %% integer_negative_power
import numpy as np

n = np.arange(1, 5)
print(n ** 2)
print(n ** -1)

# %% computed_negative_power
import numpy as np

k = np.array([2, 3, 4])
e = k.min() - 3
print(e)
print(k ** e)

# %% keyerror_on_structured_field
import numpy as np

pts = np.zeros(3, dtype=[("x", float), ("y", float)])
pts["x"] = [1.0, 2.0, 3.0]
print(pts["x"].sum())
print(pts["z"])

# %% wrong_dtype_string
import numpy as np

a = np.zeros(3, dtype="float64")
b = np.zeros(3, dtype="flaot64")

# %% arange_huge_step_float_index
import numpy as np

vals = np.linspace(0, 1, 5)
half = vals.size // 2
print(vals[half])
print(vals[vals.size * 0.5])

# %% empty_argmax
import numpy as np

scores = np.array([3.0, -1.0, 2.0])
positive = scores[scores > 5]
print(positive.size)
best = positive.argmax()
