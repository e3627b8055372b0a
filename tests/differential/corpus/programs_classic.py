"""Small complete programs: the classics of NumPy exercise sets."""

# %% game_of_life
import numpy as np

def life_step(Z):
    N = (Z[0:-2, 0:-2] + Z[0:-2, 1:-1] + Z[0:-2, 2:] +
         Z[1:-1, 0:-2] + Z[1:-1, 2:] +
         Z[2:, 0:-2] + Z[2:, 1:-1] + Z[2:, 2:])
    birth = (N == 3) & (Z[1:-1, 1:-1] == 0)
    survive = ((N == 2) | (N == 3)) & (Z[1:-1, 1:-1] == 1)
    Z[...] = 0
    Z[1:-1, 1:-1][birth | survive] = 1
    return Z

Z = np.zeros((8, 8), dtype=int)
Z[1, 2] = Z[2, 3] = Z[3, 1] = Z[3, 2] = Z[3, 3] = 1   # glider
for _ in range(4):
    Z = life_step(Z)
print(Z)
print(Z.sum())

# %% game_of_life_roll
import numpy as np

rng = np.random.default_rng(3)
grid = (rng.random((64, 64)) < 0.3).astype(np.int8)
for step in range(20):
    n = sum(np.roll(np.roll(grid, i, 0), j, 1)
            for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
    grid = ((n == 3) | ((grid == 1) & (n == 2))).astype(np.int8)
print(grid.sum())
print(grid[:4, :16])

# %% monte_carlo_pi
import numpy as np

rng = np.random.default_rng(2024)
n = 1_000_000
xy = rng.random((n, 2))
inside = (xy ** 2).sum(axis=1) <= 1.0
pi_est = 4 * inside.mean()
print(f"pi ~ {pi_est:.4f}")
print(inside.sum())

# %% monte_carlo_pi_legacy
import numpy as np

np.random.seed(0)
x = np.random.uniform(-1, 1, 100_000)
y = np.random.uniform(-1, 1, 100_000)
print(round(4 * np.mean(x * x + y * y < 1), 3))

# %% sieve_of_eratosthenes
import numpy as np

N = 100
is_prime = np.ones(N + 1, dtype=bool)
is_prime[:2] = False
for i in range(2, int(N ** 0.5) + 1):
    if is_prime[i]:
        is_prime[i * i::i] = False
primes = np.nonzero(is_prime)[0]
print(primes)
print(len(primes), primes.sum())

# %% mandelbrot_small
import numpy as np

xs = np.linspace(-2.0, 0.5, 40)
ys = np.linspace(-1.1, 1.1, 20)
C = xs[None, :] + 1j * ys[:, None]
Z = np.zeros_like(C)
counts = np.zeros(C.shape, dtype=int)
for _ in range(30):
    mask = np.abs(Z) <= 2
    Z[mask] = Z[mask] ** 2 + C[mask]
    counts += mask
for row in counts[::2]:
    print("".join("#" if c == 30 else "." for c in row))

# %% newton_sqrt
import numpy as np

targets = np.array([2.0, 10.0, 144.0, 0.25])
x = targets.copy()
for _ in range(20):
    x = 0.5 * (x + targets / x)
print(x)
print(np.allclose(x, np.sqrt(targets)))

# %% heat_equation_1d
import numpy as np

n = 21
u = np.zeros(n)
u[n // 2] = 100.0
alpha = 0.25
for _ in range(50):
    u[1:-1] = u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
print(np.round(u, 2))
print(round(u.sum(), 6))

# %% random_walk_2d_distance
import numpy as np

rng = np.random.default_rng(10)
steps = rng.integers(0, 4, size=(500, 1000))
dx = (steps == 0).astype(int) - (steps == 1)
dy = (steps == 2).astype(int) - (steps == 3)
x, y = dx.cumsum(axis=1), dy.cumsum(axis=1)
d2 = (x ** 2 + y ** 2).mean(axis=0)
print(d2[[9, 99, 999]])

# %% fibonacci_binet
import numpy as np

n = np.arange(1, 21)
phi = (1 + np.sqrt(5)) / 2
fib = np.rint((phi ** n - (-1 / phi) ** n) / np.sqrt(5)).astype(int)
print(fib)

# %% pascal_triangle
import numpy as np

rows = [np.array([1])]
for _ in range(7):
    prev = rows[-1]
    rows.append(np.concatenate([[1], prev[1:] + prev[:-1], [1]]))
for r in rows:
    print(" ".join(str(v) for v in r).center(30))

# %% magic_square_check
import numpy as np

M = np.array([[2, 7, 6], [9, 5, 1], [4, 3, 8]])
sums = np.concatenate([M.sum(axis=0), M.sum(axis=1), [np.trace(M), np.trace(np.fliplr(M))]])
print(sums)
print("magic" if np.all(sums == sums[0]) else "not magic")

# %% birthday_paradox_simulation
import numpy as np

rng = np.random.default_rng(365)
trials, people = 20_000, 23
bdays = rng.integers(0, 365, size=(trials, people))
bdays.sort(axis=1)
shared = (np.diff(bdays, axis=1) == 0).any(axis=1)
print(f"{shared.mean():.3f}")

# %% dice_game_expected_value
import numpy as np

faces = np.arange(1, 7)
outcomes = faces[:, None] + faces[None, :]
print(outcomes)
print(outcomes.mean(), (outcomes == 7).sum() / outcomes.size)

# %% bouncing_ball
import numpy as np

dt, g = 0.05, -9.81
pos, vel = np.array([0.0, 10.0]), np.array([2.0, 0.0])
heights = []
for _ in range(60):
    vel = vel + np.array([0.0, g]) * dt
    pos = pos + vel * dt
    if pos[1] < 0:
        pos[1] = -pos[1]
        vel[1] = -0.8 * vel[1]
    heights.append(pos[1])
print(np.round(np.array(heights[::10]), 3))
print(np.round(pos, 3))
