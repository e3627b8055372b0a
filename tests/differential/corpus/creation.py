"""Array creation: the first cells of every tutorial."""

# %% from_python_lists
import numpy as np

a = np.array([1, 2, 3, 4])
b = np.array([[1.5, 2.0, 3.0], [4.0, 5.0, 6.5]])
print(a)
print(b)
print(a.dtype, a.shape, a.ndim, a.size)
print(b.dtype, b.shape, b.ndim, b.size)

# %% zeros_ones_full
import numpy as np

z = np.zeros((2, 3))
o = np.ones((3, 2), dtype=int)
f = np.full((2, 2), 7.5)
print(z)
print(o)
print(f)
print(z.dtype, o.dtype, f.dtype)

# %% arange_variants
import numpy as np

print(np.arange(10))
print(np.arange(2, 20, 3))
print(np.arange(0.0, 1.0, 0.25))
print(np.arange(10, 0, -2))
print(np.arange(5, dtype=np.float32))

# %% linspace_endpoints
import numpy as np

x = np.linspace(0, 1, 5)
print(x)
y, step = np.linspace(0, 10, 4, endpoint=False, retstep=True)
print(y, step)
print(np.linspace(-1, 1, 9).reshape(3, 3))

# %% identity_and_eye
import numpy as np

print(np.eye(3))
print(np.identity(4, dtype=int))
print(np.eye(3, 4, k=1))
print(np.eye(4, k=-1, dtype=np.int8))

# %% like_functions
import numpy as np

a = np.arange(6).reshape(2, 3)
print(np.zeros_like(a))
print(np.ones_like(a, dtype=float))
print(np.full_like(a, 9))
print(np.full_like(a, 0.7))
e = np.empty_like(a)
print(e.shape, e.dtype)

# %% exercise_null_vector_fifth
import numpy as np

# Create a null vector of size 10 but the fifth value which is 1
Z = np.zeros(10)
Z[4] = 1
print(Z)

# %% exercise_vector_10_to_49
import numpy as np

# Create a vector with values ranging from 10 to 49, then reverse it
Z = np.arange(10, 50)
print(Z)
Z = Z[::-1]
print(Z)

# %% exercise_3x3_0_to_8
import numpy as np

Z = np.arange(9).reshape(3, 3)
print(Z)
print(Z.T)

# %% exercise_border_ones
import numpy as np

# 1 on the border and 0 inside
Z = np.ones((6, 6))
Z[1:-1, 1:-1] = 0
print(Z)

# %% exercise_checkerboard
import numpy as np

Z = np.zeros((8, 8), dtype=int)
Z[1::2, ::2] = 1
Z[::2, 1::2] = 1
print(Z)
print(Z.sum())

# %% checkerboard_tile
import numpy as np

Z = np.tile(np.array([[0, 1], [1, 0]]), (4, 4))
print(Z)

# %% diag_from_vector
import numpy as np

Z = np.diag(1 + np.arange(4), k=-1)
print(Z)
print(np.diag(np.array([3, 1, 2])))

# %% meshgrid_grid
import numpy as np

x = np.linspace(0, 1, 3)
y = np.linspace(0, 2, 4)
X, Y = np.meshgrid(x, y)
print(X.shape, Y.shape)
print(X)
print(Y)
print(X + Y)

# %% fromfunction_table
import numpy as np

table = np.fromfunction(lambda i, j: (i + 1) * (j + 1), (5, 5), dtype=int)
print(table)

# %% logspace_geomspace
import numpy as np

print(np.logspace(0, 3, 4))
print(np.geomspace(1, 1000, 4))
print(np.logspace(0, 4, 5, base=2))

# %% copy_vs_view
import numpy as np

a = np.arange(5)
b = a
c = a.copy()
a[0] = 100
print(b)
print(c)
print(b is a, c is a)

# %% array_from_range_and_tuple
import numpy as np

a = np.array(range(6))
b = np.array((1, 2, 3), dtype=float)
c = np.array([[1, 2], [3, 4]], dtype=np.uint8)
print(a, b, c, sep="\n")
print(a.itemsize, b.itemsize, c.itemsize, c.nbytes)

# %% large_arange_sum
import numpy as np

n = 1_000_000
a = np.arange(n, dtype=np.int64)
print(a.sum())
print(a[-3:])
print((a % 7 == 0).sum())
