"""Basic and advanced indexing, slices as views, masks and fancy writes."""

# %% basic_slicing
import numpy as np

a = np.arange(10)
print(a[2:7])
print(a[::3])
print(a[-4:])
print(a[7:2:-1])
print(a[5], a[-1])

# %% slicing_2d
import numpy as np

M = np.arange(20).reshape(4, 5)
print(M[1])
print(M[:, 2])
print(M[1:3, ::2])
print(M[-1, -1], M[2, 3])
print(M[::-1, ::-1])

# %% slice_is_a_view
import numpy as np

a = np.arange(12).reshape(3, 4)
row = a[1]
row[:] = -1
print(a)
sub = a[:, 1:3]
sub *= 10
print(a)
print(np.shares_memory(a, sub))

# %% boolean_mask_select
import numpy as np

data = np.array([4, -2, 7, 0, -5, 3, 8])
mask = data > 0
print(mask)
print(data[mask])
print(data[data % 2 == 0])
print(data[(data > -3) & (data < 5)])

# %% boolean_mask_assign
import numpy as np

temps = np.array([21.5, 35.2, 19.0, 40.1, 28.3, 33.3])
temps[temps > 30] = 30
print(temps)
arr = np.arange(10)
arr[arr % 3 == 0] *= -1
print(arr)

# %% fancy_index_read
import numpy as np

a = np.arange(10, 100, 10)
idx = np.array([0, 2, 2, 8, -1])
print(a[idx])
M = np.arange(16).reshape(4, 4)
print(M[[0, 2, 3]])
print(M[[0, 1, 2], [3, 2, 1]])
print(M[np.ix_([0, 3], [1, 2])])

# %% fancy_index_write_duplicates
import numpy as np

a = np.zeros(6, dtype=int)
a[[1, 3, 3, 5]] = [10, 20, 30, 40]
print(a)
b = np.zeros(5)
b[[0, 0, 2]] += 1
print(b)
c = np.zeros(5)
np.add.at(c, [0, 0, 2], 1)
print(c)

# %% newaxis_and_ellipsis
import numpy as np

a = np.arange(24).reshape(2, 3, 4)
print(a[..., 0])
print(a[0, ...].shape)
print(a[:, np.newaxis, :, 1].shape)
print(a[1, ..., 2:])

# %% diagonal_and_trace
import numpy as np

M = np.arange(1, 10).reshape(3, 3)
print(np.diagonal(M))
print(M.diagonal(offset=1))
print(np.trace(M))
print(np.fliplr(M).diagonal())

# %% where_indices
import numpy as np

a = np.array([[0, 3, 0], [5, 0, 7]])
print(np.nonzero(a))
rows, cols = np.where(a > 0)
print(rows, cols)
print(np.argwhere(a))
print(np.flatnonzero(a))

# %% take_and_compress
import numpy as np

a = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
print(np.take(a, [0, 2]))
print(np.take(a, [0, 2], axis=1))
print(np.compress([True, False, True], a, axis=0))
print(a.take([5, 1]))

# %% swap_rows
import numpy as np

# Swap two rows of an array
A = np.arange(25).reshape(5, 5)
A[[0, 1]] = A[[1, 0]]
print(A)

# %% reverse_and_strides
import numpy as np

a = np.arange(8)
r = a[::-1]
print(r)
print(r.base is a)
a[0] = 99
print(r[-1])

# %% row_and_column_assignment
import numpy as np

grid = np.zeros((4, 5), dtype=int)
grid[0] = 1
grid[:, -1] = 2
grid[2, 1:4] = [7, 8, 9]
print(grid)

# %% masked_mean_per_row
import numpy as np

scores = np.array([[88, -1, 92], [75, 80, -1], [-1, -1, 60]])
valid = scores >= 0
means = np.where(valid, scores, 0).sum(axis=1) / valid.sum(axis=1)
print(means)

# %% take_along_axis_topk
import numpy as np

a = np.array([[5, 1, 9, 3], [2, 8, 4, 7]])
idx = np.argsort(a, axis=1)[:, ::-1][:, :2]
print(idx)
print(np.take_along_axis(a, idx, axis=1))

# %% scalar_element_types
import numpy as np

a = np.array([1.5, 2.5, 3.5])
x = a[1]
print(x, type(x).__name__)
print(a[0] + a[2])
print(int(a[2]), float(a[0]))
print(a.item(1), a.tolist())

# %% large_mask_count
import numpy as np

x = np.linspace(-5, 5, 500_001)
inside = x[np.abs(x) < 1.0]
print(inside.size)
print(inside[:3])
print(round(float(inside.sum()), 6))

# %% iterate_rows
import numpy as np

m = np.arange(6).reshape(3, 2)
for row in m:
    print(row, row.sum())
for i, v in enumerate(m[:, 1]):
    print(i, v)

# %% setitem_broadcast_column
import numpy as np

a = np.zeros((3, 4))
a[:, :] = np.array([1, 2, 3, 4])
a[1:, 2:] = np.array([[9], [8]])
print(a)
