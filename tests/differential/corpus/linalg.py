"""np.linalg and matrix products."""

# %% matmul_dot
import numpy as np

A = np.array([[1, 2], [3, 4]])
B = np.array([[5, 6], [7, 8]])
print(A @ B)
print(np.dot(A, B))
print(A * B)
v = np.array([1, -1])
print(A @ v, v @ A)
print(np.dot(v, v))

# %% solve_linear_system
import numpy as np

# 3x + y = 9, x + 2y = 8
A = np.array([[3.0, 1.0], [1.0, 2.0]])
b = np.array([9.0, 8.0])
x = np.linalg.solve(A, b)
print(x)
print(np.allclose(A @ x, b))

# %% inverse_and_identity
import numpy as np

A = np.array([[4.0, 7.0], [2.0, 6.0]])
Ainv = np.linalg.inv(A)
print(np.round(Ainv, 4))
print(np.round(A @ Ainv, 10))

# %% determinant
import numpy as np

A = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 4.0], [5.0, 6.0, 0.0]])
print(round(np.linalg.det(A), 6))
print(round(np.linalg.det(np.eye(4) * 2), 6))
sign, logdet = np.linalg.slogdet(A)
print(sign, round(logdet, 6))

# %% norms
import numpy as np

v = np.array([3.0, 4.0, 12.0])
print(np.linalg.norm(v))
print(np.linalg.norm(v, 1), np.linalg.norm(v, np.inf))
M = np.array([[1.0, -2.0], [3.0, 4.0]])
print(round(np.linalg.norm(M), 6), np.linalg.norm(M, "fro") == np.linalg.norm(M))
print(np.linalg.norm(M, axis=1))
print(np.linalg.norm(M, ord=1), np.linalg.norm(M, ord=np.inf))

# %% normalize_rows_with_norm
import numpy as np

X = np.array([[3.0, 4.0], [1.0, 1.0], [0.0, 2.0]])
Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
print(np.round(Xn, 4))
print(np.round((Xn ** 2).sum(axis=1), 12))

# %% eigh_symmetric
import numpy as np

S = np.array([[2.0, -1.0, 0.0], [-1.0, 2.0, -1.0], [0.0, -1.0, 2.0]])
w, V = np.linalg.eigh(S)
print(np.round(w, 6))
print(np.allclose(S @ V, V * w))
print(np.round(np.abs(V[:, 0]), 6))

# %% eigvals_general
import numpy as np

A = np.array([[2.0, 0.0], [1.0, 3.0]])
w = np.linalg.eigvals(A)
print(np.sort(w))
w2, v2 = np.linalg.eig(A)
print(np.allclose(A @ v2, v2 * w2))

# %% svd_reconstruct
import numpy as np

A = np.array([[3.0, 1.0, 1.0], [-1.0, 3.0, 1.0]])
U, s, Vt = np.linalg.svd(A, full_matrices=False)
print(U.shape, s.shape, Vt.shape)
print(np.round(s, 6))
print(np.allclose(U @ np.diag(s) @ Vt, A))
print(np.linalg.matrix_rank(A))

# %% qr_decomposition
import numpy as np

A = np.array([[12.0, -51.0, 4.0], [6.0, 167.0, -68.0], [-4.0, 24.0, -41.0]])
Q, R = np.linalg.qr(A)
print(np.allclose(Q @ R, A))
print(np.allclose(Q.T @ Q, np.eye(3)))
print(np.round(np.abs(np.diag(R)), 4))

# %% cholesky_spd
import numpy as np

A = np.array([[4.0, 12.0, -16.0], [12.0, 37.0, -43.0], [-16.0, -43.0, 98.0]])
L = np.linalg.cholesky(A)
print(L)
print(np.allclose(L @ L.T, A))

# %% lstsq_line_fit
import numpy as np

x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
y = np.array([1.1, 2.9, 5.2, 7.1, 8.8])
A = np.column_stack([x, np.ones_like(x)])
coef, residuals, rank, sv = np.linalg.lstsq(A, y, rcond=None)
print(np.round(coef, 4))
print(np.round(residuals, 4), rank)

# %% matrix_power_fibonacci
import numpy as np

F = np.array([[1, 1], [1, 0]])
print(np.linalg.matrix_power(F, 10))
print(np.linalg.matrix_power(F, 10)[0, 1])
print(np.linalg.matrix_power(np.array([[2.0, 0.0], [0.0, 0.5]]), -2))

# %% multi_dot_chain
import numpy as np

rng = np.random.default_rng(0)
A = rng.random((10, 100))
B = rng.random((100, 5))
C = rng.random((5, 50))
D = np.linalg.multi_dot([A, B, C])
print(D.shape)
print(np.allclose(D, A @ B @ C))

# %% pinv_overdetermined
import numpy as np

A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
P = np.linalg.pinv(A)
print(np.round(P, 4))
print(np.allclose(P @ A, np.eye(2)))

# %% batched_matmul
import numpy as np

a = np.arange(2 * 3 * 4).reshape(2, 3, 4)
b = np.arange(2 * 4 * 2).reshape(2, 4, 2)
c = a @ b
print(c.shape)
print(c)
print(np.matmul(a[0], b[0]) - c[0])

# %% power_iteration
import numpy as np

A = np.array([[2.0, 1.0], [1.0, 3.0]])
v = np.ones(2)
for _ in range(50):
    v = A @ v
    v = v / np.linalg.norm(v)
lam = v @ A @ v
print(f"{lam:.6f}")
print(f"{np.linalg.eigvalsh(A).max():.6f}")

# %% gram_schmidt
import numpy as np

A = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
Q = np.zeros_like(A)
for j in range(A.shape[1]):
    v = A[:, j].copy()
    for i in range(j):
        v -= (Q[:, i] @ A[:, j]) * Q[:, i]
    Q[:, j] = v / np.linalg.norm(v)
print(np.round(Q, 4))
print(np.allclose(Q.T @ Q, np.eye(3)))

# %% matmul_larger_float32
import numpy as np

rng = np.random.default_rng(5)
A = rng.standard_normal((300, 200)).astype(np.float32)
B = rng.standard_normal((200, 100)).astype(np.float32)
C = A @ B
print(C.dtype, C.shape)
print(np.allclose(C, A.astype(np.float64) @ B.astype(np.float64), atol=1e-3))

# %% cond_and_trace
import numpy as np

A = np.array([[1.0, 2.0], [2.0, 4.0001]])
print(f"{np.linalg.cond(A):.3e}")
print(np.trace(A))
