"""How arrays and scalars print: str, repr, f-strings, print options."""

# %% print_str_repr
import numpy as np

a = np.array([1.0, 2.5, 3.25])
print(a)
print(repr(a))
print(str(a))
print(repr(np.arange(3)))

# %% repr_of_reduction
import numpy as np

a = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
total = a.sum()
print(total)
print(repr(total))
print(repr(a.argmax()))

# %% list_of_scalars
import numpy as np

a = np.array([4, 8, 15, 16, 23, 42])
stats = [a.min(), a.max(), a.sum()]
print(stats)
print([int(s) for s in stats])

# %% fstring_formatting
import numpy as np

x = np.array([3.14159, 2.71828, 1.41421])
print(f"mean: {x.mean():.3f}")
print(f"max: {x.max():.2e}")
print(f"first: {x[0]:8.4f}|")
print("sum = {:.5f}".format(x.sum()))
print("%0.2f" % x.std())

# %% printoptions_precision
import numpy as np

x = np.array([1 / 3, 2 / 3, 1.0, 1e-5])
np.set_printoptions(precision=3, suppress=True)
print(x)
np.set_printoptions(precision=8, suppress=False)
print(x)

# %% printoptions_context
import numpy as np

x = np.linspace(0, 1, 7)
with np.printoptions(precision=2):
    print(x)
print(x)

# %% long_array_summarized
import numpy as np

a = np.arange(2000)
print(a)
b = np.arange(5000.0).reshape(50, 100)
print(b)

# %% array2string_and_tolist
import numpy as np

a = np.array([[1.5, 2.25], [3.0, 4.125]])
print(np.array2string(a, separator=", "))
print(a.tolist())
print(np.array_repr(np.array([1, 2, 3])))

# %% print_mixed_magnitudes
import numpy as np

print(np.array([1e-10, 1.0, 1e10]))
print(np.array([0.001, 0.01, 0.1]))
print(np.array([1.0, 100.0, 12345.678]))
print(np.array([123456789.0, 1.5]))

# %% print_bools_ints_negative
import numpy as np

print(np.array([True, False, True]))
print(np.array([-1, 20, -300]))
print(np.array([[1, -2], [-30, 4]]))
print(np.array([], dtype=int), np.zeros((0, 3)))

# %% print_scalar_types
import numpy as np

print(np.float64(1.5), np.int64(7), np.float32(0.1), np.bool_(True))
print(repr(np.float32(0.1)), repr(np.int8(-3)))
x = np.array([1, 2, 3])
print(x[0], x.mean(), x.std())
print(x.sum() * 1.0, x.sum() / 2)

# %% print_3d_array
import numpy as np

t = np.arange(12).reshape(2, 2, 3)
print(t)
print(t.astype(float) / 7)

# %% string_join_of_values
import numpy as np

v = np.array([0.5, 1.25, 2.0])
print(", ".join(f"{x:.2f}" for x in v))
print(" ".join(map(str, np.arange(5))))
print(str(v.tolist()))

# %% report_table
import numpy as np

names = ["alpha", "beta", "gamma"]
vals = np.array([[1.2345, 10.5], [2.5, 0.125], [33.3333, 4.0]])
print(f"{'name':<6}{'x':>9}{'y':>9}")
for n, (x, y) in zip(names, vals):
    print(f"{n:<6}{x:>9.3f}{y:>9.3f}")
print(f"{'total':<6}{vals[:, 0].sum():>9.3f}{vals[:, 1].sum():>9.3f}")

# %% savetxt_to_string
import io
import numpy as np

buf = io.StringIO()
np.savetxt(buf, np.array([[1.0, 2.0], [3.5, 4.25]]), fmt="%.2f", delimiter=",")
print(buf.getvalue())
back = np.loadtxt(io.StringIO(buf.getvalue()), delimiter=",")
print(back.sum())

# %% complex_print
import numpy as np

z = np.array([1 + 2j, -0.5j, 3.0])
print(z)
print(repr(z[1]))
print(np.round(z * z, 2))
