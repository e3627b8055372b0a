"""Small data-science programs: normalization, distances, fitting, ML steps."""

# %% softmax_rows
import numpy as np

logits = np.array([[2.0, 1.0, 0.1], [1.0, 3.0, 0.2], [1000.0, 1001.0, 999.0]])
shifted = logits - logits.max(axis=1, keepdims=True)
p = np.exp(shifted)
p /= p.sum(axis=1, keepdims=True)
print(np.round(p, 4))
print(p.sum(axis=1))

# %% softmax_cross_entropy
import numpy as np

def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

rng = np.random.default_rng(0)
logits = rng.standard_normal((8, 5))
y = rng.integers(0, 5, 8)
p = softmax(logits)
loss = -np.log(p[np.arange(8), y]).mean()
print(f"loss {loss:.5f}")
print(p.argmax(axis=1), y)

# %% moving_average_convolve
import numpy as np

x = np.array([3.0, 5.0, 7.0, 2.0, 8.0, 10.0, 11.0, 65.0, 72.0, 81.0, 99.0, 100.0])
w = 3
print(np.convolve(x, np.ones(w) / w, mode="valid"))
print(np.round(np.convolve(x, np.ones(w) / w, mode="same"), 3))

# %% moving_average_cumsum
import numpy as np

# Moving average using cumsum
def moving_average(a, n=3):
    ret = np.cumsum(a, dtype=float)
    ret[n:] = ret[n:] - ret[:-n]
    return ret[n - 1:] / n

Z = np.arange(20)
print(moving_average(Z, n=3))
print(moving_average(np.arange(10) ** 2, n=4))

# %% sliding_window_view_mean
import numpy as np

from numpy.lib.stride_tricks import sliding_window_view
x = np.arange(10.0) ** 2
win = sliding_window_view(x, 4)
print(win.shape)
print(win.mean(axis=1))
print(win.max(axis=-1))

# %% minmax_normalization
import numpy as np

X = np.array([[1.0, 200.0, 0.5], [2.0, 180.0, 0.1], [3.0, 240.0, 0.9], [4.0, 210.0, 0.3]])
mn, mx = X.min(axis=0), X.max(axis=0)
Xs = (X - mn) / (mx - mn)
print(np.round(Xs, 4))
print(Xs.min(axis=0), Xs.max(axis=0))

# %% standardize_features
import numpy as np

rng = np.random.default_rng(1)
X = rng.normal(loc=[5.0, -2.0, 100.0], scale=[1.0, 0.5, 20.0], size=(1000, 3))
Z = (X - X.mean(axis=0)) / X.std(axis=0)
print(np.round(X.mean(axis=0), 3))
print(np.round(Z.mean(axis=0), 12) + 0.0)
print(np.round(Z.std(axis=0), 12))

# %% pairwise_distance_matrix
import numpy as np

P = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0], [1.0, 1.0]])
D = np.sqrt(((P[:, None, :] - P[None, :, :]) ** 2).sum(axis=-1))
print(np.round(D, 4))
i, j = np.unravel_index(np.argmax(D), D.shape)
print("farthest:", i, j)

# %% nearest_neighbor_large
import numpy as np

rng = np.random.default_rng(42)
A = rng.random((500, 3))
B = rng.random((800, 3))
d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
nn = d2.argmin(axis=1)
print(nn[:10])
print(f"{np.sqrt(d2.min(axis=1)).mean():.5f}")

# %% cosine_similarity
import numpy as np

docs = np.array([[1, 0, 2, 0], [0, 1, 1, 1], [2, 0, 4, 0], [0, 0, 0, 3]], dtype=float)
norms = np.linalg.norm(docs, axis=1)
sim = docs @ docs.T / np.outer(norms, norms)
print(np.round(sim, 3))

# %% kmeans_one_step
import numpy as np

X = np.array([[1.0, 1.0], [1.5, 2.0], [3.0, 4.0], [5.0, 7.0], [3.5, 5.0], [4.5, 5.0], [3.5, 4.5]])
centroids = X[[0, 3]]
for it in range(3):
    d = np.linalg.norm(X[:, None, :] - centroids[None, :, :], axis=2)
    labels = d.argmin(axis=1)
    centroids = np.array([X[labels == k].mean(axis=0) for k in range(2)])
    print(it, labels, np.round(centroids, 3).tolist())

# %% kmeans_blobs
import numpy as np

rng = np.random.default_rng(5)
centers = np.array([[0.0, 0.0], [5.0, 5.0], [0.0, 6.0]])
X = np.concatenate([c + rng.standard_normal((300, 2)) for c in centers])
C = X[rng.choice(len(X), 3, replace=False)]
for _ in range(10):
    labels = ((X[:, None] - C[None]) ** 2).sum(-1).argmin(1)
    C = np.stack([X[labels == k].mean(0) for k in range(3)])
order = np.argsort(C[:, 0] + 10 * C[:, 1])
print(np.round(C[order], 2))
print(np.sort(np.bincount(labels)))

# %% polyfit_quadratic
import numpy as np

x = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
y = np.array([1.0, 1.8, 5.1, 10.2, 16.8, 26.1])
coef = np.polyfit(x, y, 2)
print(np.round(coef, 4))
print(np.round(np.polyval(coef, 6.0), 3))
p = np.poly1d(coef)
print(np.round(p(np.array([0.5, 1.5])), 4))

# %% linear_regression_normal_equations
import numpy as np

rng = np.random.default_rng(123)
n = 200
X = np.column_stack([np.ones(n), rng.random(n), rng.random(n)])
true_w = np.array([1.0, 2.0, -3.0])
y = X @ true_w + 0.01 * rng.standard_normal(n)
w = np.linalg.solve(X.T @ X, X.T @ y)
print(np.round(w, 2))
print(f"{np.mean((X @ w - y) ** 2):.2e}")

# %% gradient_descent_regression
import numpy as np

rng = np.random.default_rng(0)
X = rng.random((100, 2))
y = 3 * X[:, 0] - 2 * X[:, 1] + 0.5
w = np.zeros(2)
b = 0.0
lr = 0.5
for epoch in range(2000):
    err = X @ w + b - y
    w -= lr * (X.T @ err) / len(y)
    b -= lr * err.mean()
print(np.round(w, 3), round(b, 3))
print(f"mse {np.mean((X @ w + b - y) ** 2):.2e}")

# %% logistic_regression_steps
import numpy as np

rng = np.random.default_rng(7)
X = rng.standard_normal((200, 2))
y = (X[:, 0] + X[:, 1] > 0).astype(float)
w = np.zeros(2)
for _ in range(200):
    p = 1 / (1 + np.exp(-(X @ w)))
    w -= 0.1 * X.T @ (p - y) / len(y)
acc = ((1 / (1 + np.exp(-(X @ w))) > 0.5) == y).mean()
print(np.round(w, 3))
print(f"accuracy {acc:.2f}")

# %% pca_two_components
import numpy as np

rng = np.random.default_rng(11)
X = rng.standard_normal((300, 2)) @ np.array([[3.0, 1.0], [1.0, 0.5]])
Xc = X - X.mean(axis=0)
C = np.cov(Xc, rowvar=False)
vals, vecs = np.linalg.eigh(C)
order = vals.argsort()[::-1]
explained = vals[order] / vals.sum()
print(np.round(explained, 4))
proj = Xc @ vecs[:, order]
print(np.round(proj.var(axis=0, ddof=1) / vals[order], 6))

# %% image_convolution_3x3
import numpy as np

img = np.arange(36, dtype=float).reshape(6, 6)
kernel = np.array([[0, -1, 0], [-1, 4, -1], [0, -1, 0]], dtype=float)
H, W = img.shape
out = np.zeros((H - 2, W - 2))
for di in range(3):
    for dj in range(3):
        out += kernel[di, dj] * img[di:di + H - 2, dj:dj + W - 2]
print(out)
img[2, 3] = 100.0
out2 = sum(kernel[i, j] * img[i:i + 4, j:j + 4] for i in range(3) for j in range(3))
print(out2)

# %% one_hot_accuracy
import numpy as np

y_true = np.array([0, 2, 1, 2, 0, 1])
y_pred_proba = np.array([[0.8, 0.1, 0.1], [0.2, 0.2, 0.6], [0.3, 0.4, 0.3],
                         [0.5, 0.1, 0.4], [0.9, 0.05, 0.05], [0.1, 0.8, 0.1]])
pred = y_pred_proba.argmax(axis=1)
onehot = np.eye(3)[y_true]
print(onehot.astype(int))
print("accuracy:", (pred == y_true).mean())
conf = np.zeros((3, 3), dtype=int)
np.add.at(conf, (y_true, pred), 1)
print(conf)

# %% confusion_matrix_bincount
import numpy as np

y_true = np.array([0, 1, 2, 2, 1, 0, 2, 1])
y_pred = np.array([0, 2, 2, 2, 1, 0, 1, 1])
cm = np.bincount(3 * y_true + y_pred, minlength=9).reshape(3, 3)
print(cm)
precision = np.diag(cm) / cm.sum(axis=0)
recall = np.diag(cm) / cm.sum(axis=1)
print(np.round(precision, 3), np.round(recall, 3))

# %% exponential_smoothing
import numpy as np

x = np.array([10.0, 12.0, 9.0, 14.0, 15.0, 13.0, 18.0])
alpha = 0.3
s = np.empty_like(x)
s[0] = x[0]
for t in range(1, len(x)):
    s[t] = alpha * x[t] + (1 - alpha) * s[t - 1]
print(np.round(s, 4))

# %% outlier_detection_iqr
import numpy as np

data = np.array([10, 12, 12, 13, 12, 11, 14, 13, 15, 10, 10, 100, 12, 14, -40])
q1, q3 = np.percentile(data, [25, 75])
iqr = q3 - q1
mask = (data < q1 - 1.5 * iqr) | (data > q3 + 1.5 * iqr)
print(q1, q3, iqr)
print(data[mask])
print(np.flatnonzero(mask))

# %% attention_block
import numpy as np

rng = np.random.default_rng(2)
T, d = 6, 4
X = rng.standard_normal((T, d))
Wq, Wk, Wv = (rng.standard_normal((d, d)) for _ in range(3))
Q, K, V = X @ Wq, X @ Wk, X @ Wv
S = Q @ K.T / np.sqrt(d)
S = S + np.triu(np.full((T, T), -np.inf), k=1)
A = np.exp(S - S.max(axis=1, keepdims=True))
A /= A.sum(axis=1, keepdims=True)
out = A @ V
print(np.round(A, 3))
print(np.round(out.sum(axis=0), 4))

# %% rolling_zscore_signal
import numpy as np

rng = np.random.default_rng(9)
t = np.arange(50_000)
signal = np.sin(2 * np.pi * t / 1000) + 0.1 * rng.standard_normal(t.size)
w = 100
c = np.cumsum(np.concatenate([[0.0], signal]))
c2 = np.cumsum(np.concatenate([[0.0], signal ** 2]))
mean = (c[w:] - c[:-w]) / w
var = (c2[w:] - c2[:-w]) / w - mean ** 2
print(mean.shape)
print(f"{mean.max():.3f} {mean.min():.3f} {np.sqrt(var).mean():.4f}")
