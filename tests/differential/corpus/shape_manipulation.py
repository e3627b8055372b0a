"""Reshaping, transposing, stacking and splitting."""

# %% reshape_basics
import numpy as np

a = np.arange(12)
print(a.reshape(3, 4))
print(a.reshape(2, -1))
print(a.reshape(2, 3, 2).shape)
print(a.reshape((4, 3), order="F"))

# %% ravel_flatten
import numpy as np

m = np.array([[1, 2, 3], [4, 5, 6]])
print(m.ravel())
print(m.flatten())
print(m.T.ravel())
print(m.ravel(order="F"))

# %% transpose_swapaxes
import numpy as np

a = np.arange(24).reshape(2, 3, 4)
print(a.T.shape)
print(np.transpose(a, (1, 0, 2)).shape)
print(np.swapaxes(a, 0, 2)[1])
print(np.moveaxis(a, -1, 0).shape)

# %% expand_squeeze
import numpy as np

v = np.array([1, 2, 3])
print(np.expand_dims(v, 0).shape, np.expand_dims(v, 1).shape)
x = np.zeros((1, 3, 1, 2))
print(x.squeeze().shape)
print(np.squeeze(x, axis=2).shape)
print(v[None, :, None].shape)

# %% concatenate_stack
import numpy as np

a = np.array([[1, 2], [3, 4]])
b = np.array([[5, 6]])
print(np.concatenate([a, b]))
print(np.concatenate([a, b.T], axis=1))
print(np.stack([a, a * 10]))
print(np.stack([a, a * 10], axis=-1).shape)

# %% vstack_hstack_column_stack
import numpy as np

x = np.array([1, 2, 3])
y = np.array([4, 5, 6])
print(np.vstack([x, y]))
print(np.hstack([x, y]))
print(np.column_stack([x, y]))
print(np.dstack([x, y]).shape)

# %% split_and_array_split
import numpy as np

a = np.arange(10)
print(np.split(a, 5))
print(np.array_split(a, 3))
print(np.split(a, [3, 7]))
m = np.arange(16).reshape(4, 4)
top, bottom = np.vsplit(m, 2)
print(bottom)
left, right = np.hsplit(m, [1])
print(left.ravel(), right.shape)

# %% tile_repeat
import numpy as np

a = np.array([1, 2, 3])
print(np.tile(a, 2))
print(np.tile(a, (2, 2)))
print(np.repeat(a, 3))
print(np.repeat(np.array([[1, 2], [3, 4]]), [1, 2], axis=0))

# %% flip_roll_rot90
import numpy as np

m = np.arange(6).reshape(2, 3)
print(np.flip(m))
print(np.flipud(m))
print(np.roll(m, 1))
print(np.roll(m, -1, axis=1))
print(np.rot90(m))

# %% pad_image
import numpy as np

img = np.arange(1, 7).reshape(2, 3)
print(np.pad(img, 1))
print(np.pad(img, ((0, 1), (2, 0)), mode="edge"))
print(np.pad(np.array([1, 2, 3]), 2, mode="reflect"))

# %% atleast_nd
import numpy as np

print(np.atleast_1d(5.0))
print(np.atleast_2d(np.array([1, 2])).shape)
print(np.atleast_3d(np.ones((2, 3))).shape)

# %% batch_images_channels_last
import numpy as np

batch = np.arange(2 * 3 * 4 * 4).reshape(2, 3, 4, 4)   # N, C, H, W
nhwc = batch.transpose(0, 2, 3, 1)
print(nhwc.shape)
print(nhwc[1, 0, 0])
flat = nhwc.reshape(2, -1)
print(flat.shape, flat[0, :6])

# %% triangular_parts
import numpy as np

m = np.arange(1, 17).reshape(4, 4)
print(np.triu(m))
print(np.tril(m, k=-1))
print(np.tri(3, dtype=int))
iu = np.triu_indices(4, k=1)
print(m[iu])

# %% block_matrix
import numpy as np

A = np.ones((2, 2), dtype=int)
B = np.zeros((2, 3), dtype=int)
C = np.full((1, 5), 7)
print(np.block([[A, B], [C]]))
print(np.block([np.arange(2), np.arange(3)]))

# %% broadcast_to_and_arrays
import numpy as np

v = np.array([1, 2, 3])
b = np.broadcast_to(v, (3, 3))
print(b)
print(b.flags.writeable)
x, y = np.broadcast_arrays(np.array([[1], [2]]), np.array([10, 20, 30]))
print(x)
print(y)

# %% kron_and_outer
import numpy as np

print(np.kron(np.eye(2, dtype=int), np.array([[1, 2], [3, 4]])))
print(np.outer([1, 2, 3], [1, 0, -1]))

# %% reshape_large_blocks
import numpy as np

img = np.arange(256 * 256, dtype=np.float64).reshape(256, 256)
pooled = img.reshape(128, 2, 128, 2).mean(axis=(1, 3))
print(pooled.shape)
print(pooled[0, :3], pooled[-1, -1])

# %% append_insert_delete
import numpy as np

a = np.array([1, 2, 3])
print(np.append(a, [4, 5]))
print(np.insert(a, 1, 99))
print(np.delete(np.arange(8), [0, 3, 5]))
print(np.append(np.ones((2, 2)), np.zeros((1, 2)), axis=0))
