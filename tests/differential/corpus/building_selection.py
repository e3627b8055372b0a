"""Building and selecting: block, put, put_along_axis, choose, piecewise, select."""

# %% put_flat_indices
import numpy as np

a = np.arange(10)
np.put(a, [0, 3, 9], [-1, -3, -9])
print(a)
b = np.zeros((2, 3))
np.put(b, [1, 5], 7.5)
print(b)

# %% put_along_axis_max
import numpy as np

a = np.array([[10, 30, 20], [60, 40, 50]])
idx = np.argmax(a, axis=1, keepdims=True)
np.put_along_axis(a, idx, 0, axis=1)
print(a)

# %% put_along_axis_one_hot
import numpy as np

labels = np.array([2, 0, 1, 2])
onehot = np.zeros((4, 3), dtype=int)
np.put_along_axis(onehot, labels[:, None], 1, axis=1)
print(onehot)
print(np.eye(3, dtype=int)[labels])

# %% choose_from_lists
import numpy as np

choices = [np.array([0, 1, 2, 3]), np.array([10, 11, 12, 13]), np.array([20, 21, 22, 23])]
which = np.array([2, 0, 1, 0])
print(np.choose(which, choices))
print(np.choose(np.array([0, 1, 1, 0]), [np.array([1, 2, 3, 4]), -1]))

# %% piecewise_function
import numpy as np

x = np.linspace(-2, 2, 9)
y = np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2])
print(y)
print(np.piecewise(x, [x < -1, x > 1], [-1, 1, 0]))

# %% select_grades
import numpy as np

scores = np.array([95, 82, 67, 58, 74, 88])
grade = np.select([scores >= 90, scores >= 80, scores >= 70, scores >= 60],
                  ["A", "B", "C", "D"], default="F")
print(grade)

# %% block_2x2
import numpy as np

A = np.eye(2)
Z = np.zeros((2, 2))
M = np.block([[A, 2 * A], [Z, A]])
print(M)
print(M.shape)

# %% block_1d_and_nested
import numpy as np

print(np.block([[1, 2], [3, 4]]))
print(np.block([np.zeros(2), np.ones(3)]))
top = np.block([np.ones((1, 2)), np.full((1, 1), 5.0)])
print(np.block([[top], [np.arange(3.0)]]))

# %% where_nested_categories
import numpy as np

bmi = np.array([17.5, 22.0, 27.3, 31.8])
cat = np.where(bmi < 18.5, 0, np.where(bmi < 25, 1, np.where(bmi < 30, 2, 3)))
print(cat)

# %% place_and_putmask
import numpy as np

a = np.arange(8)
np.place(a, a % 2 == 1, [-1, -2])
print(a)
b = np.arange(6.0)
np.putmask(b, b > 2, b ** 2)
print(b)

# %% copyto_where
import numpy as np

dst = np.zeros(5)
src = np.arange(5.0) + 1
np.copyto(dst, src, where=src > 2)
print(dst)

# %% vectorize_python_function
import numpy as np

def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps

f = np.vectorize(collatz_steps)
print(f(np.arange(1, 11)))

# %% apply_along_axis
import numpy as np

m = np.array([[3, 1, 2], [9, 7, 8]])
print(np.apply_along_axis(lambda r: r.max() - r.min(), 1, m))
print(np.apply_along_axis(np.sort, 0, m))

# %% fill_diagonal
import numpy as np

m = np.zeros((4, 4), dtype=int)
np.fill_diagonal(m, 5)
print(m)
m2 = np.ones((3, 3))
np.fill_diagonal(m2, [1.0, 2.0, 3.0])
print(m2)
