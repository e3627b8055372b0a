"""Launch geometry from occupancy: how many blocks of a kernel one SM holds at once, from the
registers and shared memory the kernel uses and the device's limits. A grid-stride kernel is
launched with that many blocks per SM (a full wave; more would only queue behind it), not a
fixed multiple of the SM count.

The rules are NVIDIA's, as the CUDA Occupancy Calculator and
cudaOccupancyMaxActiveBlocksPerMultiprocessor apply them (CUDA C++ Programming Guide,
"Compute Capabilities", table of technical specifications; Best Practices Guide, "Occupancy"):
- a block takes ceil(tpb / 32) warps; an SM holds at most threads_per_sm / 32 warps and
  blocks_per_sm blocks;
- registers are allocated per warp, in units of 256: a warp of a kernel using r registers a
  thread takes ceil(32 r / 256) * 256 of the SM's register file, and a block fits only whole;
- shared memory is allocated per block in units of 128 bytes, with 1 KiB per block reserved
  by CUDA itself (compute capability 8.0 and later), out of smem_per_sm.
"""
from __future__ import annotations

from dataclasses import dataclass

WARP = 32


@dataclass(frozen=True)
class Limits:
    """One SM's limits; the defaults are sm_90's (H100)."""
    sms: int = 132
    regs_per_sm: int = 65536
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32
    smem_per_sm: int = 228 * 1024
    smem_reserved: int = 1024  # per block, taken by CUDA (sm_80+)
    reg_unit: int = 256        # registers are allocated a warp at a time in these units
    smem_unit: int = 128
    max_regs_per_thread: int = 255
    max_tpb: int = 1024

    @classmethod
    def of(cls, dev) -> "Limits":
        """The limits a numba-cuda Device reports (allocation units are not queryable: the
        defaults hold from sm_50 to sm_90)."""
        return cls(sms=int(dev.MULTIPROCESSOR_COUNT),
                   regs_per_sm=int(dev.MAX_REGISTERS_PER_MULTIPROCESSOR),
                   threads_per_sm=int(dev.MAX_THREADS_PER_MULTIPROCESSOR),
                   blocks_per_sm=int(dev.MAX_BLOCKS_PER_MULTIPROCESSOR),
                   smem_per_sm=int(dev.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
                   smem_reserved=int(dev.RESERVED_SHARED_MEMORY_PER_BLOCK),
                   max_tpb=int(dev.MAX_THREADS_PER_BLOCK))


SM90 = Limits()


def resident_blocks(regs: int, smem: int, tpb: int, lim: Limits = SM90) -> int:
    """Blocks of `tpb` threads, each thread using `regs` registers and each block `smem` bytes
    of shared memory (static and dynamic), that one SM holds at once; 0 where not even one fits
    (the launch would fail). regs = 0: not known, not a limit."""
    if not 0 < tpb <= lim.max_tpb or regs > lim.max_regs_per_thread:
        return 0
    warps = -(-tpb // WARP)
    limit = min(lim.blocks_per_sm, lim.threads_per_sm // WARP // warps)
    if regs > 0:
        per_warp = -(-regs * WARP // lim.reg_unit) * lim.reg_unit
        limit = min(limit, lim.regs_per_sm // per_warp // warps)
    per_block = -(-(smem + lim.smem_reserved) // lim.smem_unit) * lim.smem_unit
    return min(limit, lim.smem_per_sm // per_block)


def resident_warps(regs: int, smem: int, tpb: int, lim: Limits = SM90) -> int:
    return resident_blocks(regs, smem, tpb, lim) * -(-tpb // WARP)


def best_tpb(regs: int, smem: int, lim: Limits = SM90,
             choices: tuple[int, ...] = (256, 128, 512)) -> int:
    """The block size, of `choices`, that keeps the most warps resident on an SM (the first
    on a tie): for kernels whose source does not depend on it (grid-stride loops)."""
    return max(choices, key=lambda t: (resident_warps(regs, smem, t, lim), -choices.index(t)))


def grid(work: int, per_block: int, blocks_per_sm: int, lim: Limits = SM90) -> int:
    """Blocks to launch for `work` items handled `per_block` at a time by a grid-stride
    kernel: enough for the work, at most one full wave of resident blocks."""
    return max(1, min(-(-work // per_block), max(blocks_per_sm, 1) * lim.sms))


def _layouts(args) -> tuple:
    """The array layouts numba types `args` with ("" for a scalar)."""
    return tuple(getattr(getattr(a, "_numba_type_", None), "layout", "") for a in args)


class Geometry:
    """Launch geometry on the device: its limits (read once) and each kernel's registers and
    static shared memory as compiled, the most over its overloads (a grid-stride launch is
    right at any grid), kept while its overloads stay the same."""

    def __init__(self, device):
        self._device = device  # () -> the numba-cuda Device
        self._lim: Limits | None = None
        # (id(kernel), its arguments' layouts) -> (it, overloads, (regs, shared))
        self._use: dict[tuple, tuple] = {}

    @property
    def limits(self) -> Limits:
        if self._lim is None:
            try:
                self._lim = Limits.of(self._device())
            except Exception:  # noqa: BLE001 - an attribute an odd driver lacks: sm_90's
                self._lim = SM90
        return self._lim

    def usage(self, fn, args=()) -> tuple[int, int]:
        """(registers a thread, static shared bytes a block) of kernel `fn`; a kernel with no
        overload for `args` yet is compiled for them first (its launch would compile it: a
        strided view's layout 'A' is an overload of its own, with its own registers). (0, 0):
        not known (no kernel, a driver that does not tell)."""
        if fn is None:
            return 0, 0
        overloads = getattr(fn, "overloads", None) or {}
        key = (id(fn), _layouts(args))
        hit = self._use.get(key)
        if hit is not None and hit[0] is fn and hit[1] == len(overloads):
            return hit[2]
        try:
            if args:
                sig = tuple(fn.typeof_pyval(a) for a in args)
                if sig not in overloads:
                    fn.compile(sig)
                    overloads = fn.overloads
            use = (max((k.regs_per_thread for k in overloads.values()), default=0),
                   max((k.shared_mem_per_block for k in overloads.values()), default=0))
        except Exception:  # noqa: BLE001 - attributes a driver does not give: limits only
            use = (0, 0)
        self._use[key] = (fn, len(overloads), use)
        return use

    def resident_blocks(self, fn, tpb: int, shared: int = 0, args=()) -> int:
        """Blocks of kernel `fn` one SM holds at once with `tpb` threads and `shared` bytes of
        dynamic shared memory, at least 1; with no kernel, what the thread and block limits
        allow."""
        regs, smem = self.usage(fn, args)
        return max(1, resident_blocks(regs, smem + shared, tpb, self.limits))

    def tpb(self, fn, args=()) -> int:
        """The block size of a grid-stride kernel whose source does not depend on it."""
        return best_tpb(self.usage(fn, args)[0], 0, self.limits)

    def grid(self, work: int, per_block: int, fn=None, args=(), tpb: int = 256) -> int:
        return grid(work, per_block, self.resident_blocks(fn, tpb, 0, args), self.limits)

