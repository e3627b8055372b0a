"""Host memory of the cpu backend: a pool that hands large buffers out again across evaluations."""
from __future__ import annotations

import sys

import numpy as np

# References to an unused pool block seen from a loop over the pool: the pool's list, the loop
# variable and getrefcount's own argument.
_UNUSED = 3


class HostPool:
    """Reuse of large host buffers across evaluations. A freed large block goes back to the OS,
    and touching fresh pages costs about 0.2 s/GiB here, paid again by every evaluation of a
    program (a 4096^2 float32 softmax: 14 of its 55 ms). Blocks stay in the pool; one is handed
    out again once no array refers to it (every numpy view of a block holds a reference to it,
    so its reference count tells). Idle blocks past `IDLE_CAP` bytes are let go."""

    MIN_BYTES = 1 << 20  # smaller blocks come from malloc's free lists, already touched
    IDLE_CAP = 1 << 30

    def __init__(self):
        self.blocks: list[np.ndarray] = []

    def empty(self, shape, dtype) -> np.ndarray:
        if not isinstance(dtype, np.dtype):
            dtype = np.dtype(dtype)
        nbytes = dtype.itemsize
        for d in shape:
            nbytes *= d
        if nbytes < self.MIN_BYTES:
            return np.empty(shape, dtype)
        for block in self.blocks:
            if block.nbytes == nbytes and sys.getrefcount(block) <= _UNUSED:
                return block.view(dtype).reshape(shape)
        block = np.empty(nbytes, np.uint8)
        self.blocks.append(block)
        idle = [b for b in self.blocks if b is not block and sys.getrefcount(b) <= _UNUSED]
        excess = sum(b.nbytes for b in idle) - self.IDLE_CAP
        for b in idle:  # oldest first
            if excess <= 0:
                break
            excess -= b.nbytes
            self.blocks = [x for x in self.blocks if x is not b]
        del idle
        return block.view(dtype).reshape(shape)
