"""einsum and tensor contractions."""

# %% einsum_trace_diag_sum
import numpy as np

A = np.arange(9).reshape(3, 3)
print(np.einsum("ii", A))
print(np.einsum("ii->i", A))
print(np.einsum("ij->", A))
print(np.einsum("ij->j", A))

# %% einsum_matmul_transpose
import numpy as np

A = np.arange(6).reshape(2, 3)
B = np.arange(12).reshape(3, 4)
print(np.einsum("ij,jk->ik", A, B))
print(np.einsum("ij->ji", A))
print(np.array_equal(np.einsum("ij,jk", A, B), A @ B))

# %% einsum_dot_outer
import numpy as np

a = np.array([1.0, 2.0, 3.0])
b = np.array([4.0, 5.0, 6.0])
print(np.einsum("i,i->", a, b))
print(np.einsum("i,j->ij", a, b))
print(np.einsum("i,i->i", a, b))

# %% einsum_batched
import numpy as np

rng = np.random.default_rng(0)
A = rng.random((4, 2, 3))
B = rng.random((4, 3, 5))
C = np.einsum("bij,bjk->bik", A, B)
print(C.shape)
print(np.allclose(C, A @ B))

# %% einsum_row_norms
import numpy as np

X = np.array([[1.0, 2.0, 2.0], [3.0, 0.0, 4.0]])
print(np.sqrt(np.einsum("ij,ij->i", X, X)))

# %% einsum_bilinear_form
import numpy as np

x = np.array([1.0, 2.0])
M = np.array([[2.0, 1.0], [1.0, 3.0]])
print(np.einsum("i,ij,j->", x, M, x))
print(x @ M @ x)

# %% einsum_ellipsis
import numpy as np

a = np.arange(24).reshape(2, 3, 4)
print(np.einsum("...ij->...ji", a).shape)
print(np.einsum("i...->...", a))

# %% einsum_attention_scores
import numpy as np

rng = np.random.default_rng(4)
q = rng.standard_normal((2, 5, 8))
k = rng.standard_normal((2, 5, 8))
scores = np.einsum("bqd,bkd->bqk", q, k) / np.sqrt(8)
print(scores.shape)
print(np.allclose(scores, q @ k.transpose(0, 2, 1) / np.sqrt(8)))

# %% tensordot_axes
import numpy as np

a = np.arange(60.0).reshape(3, 4, 5)
b = np.arange(24.0).reshape(4, 3, 2)
c = np.tensordot(a, b, axes=([1, 0], [0, 1]))
print(c.shape)
print(c)

# %% einsum_optimize_chain
import numpy as np

rng = np.random.default_rng(9)
A = rng.random((8, 16))
B = rng.random((16, 32))
C = rng.random((32, 4))
r = np.einsum("ij,jk,kl->il", A, B, C, optimize=True)
print(r.shape, np.allclose(r, A @ B @ C))

# %% inner_outer_vdot
import numpy as np

a = np.array([[1, 2], [3, 4]])
b = np.array([[0, 1], [1, 0]])
print(np.inner(a, b))
print(np.vdot(a, b))
print(np.outer(a, b).shape)

# %% einsum_weighted_sum_large
import numpy as np

rng = np.random.default_rng(21)
X = rng.random((20_000, 16))
w = rng.random(16)
y = np.einsum("nd,d->n", X, w)
print(y.shape)
print(np.allclose(y, X @ w))
print(f"{y.mean():.4f}")
