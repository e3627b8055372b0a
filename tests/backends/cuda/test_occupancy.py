"""Launch geometry from occupancy (cuda/occupancy.py): resident blocks per SM from a kernel's
registers and shared memory against sm_90's limits (65536 registers, 2048 threads, 32 blocks,
228 KiB of shared memory an SM; registers allocated 256 at a time per warp, shared memory 128
bytes at a time plus 1 KiB reserved per block), each value worked out by hand from NVIDIA's
rules; and the backend's grids from it, with stand-in kernels (no GPU needed)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tracer.cuda_kernels import backends
from tracer.cuda_kernels.cuda import occupancy
from tracer.cuda_kernels.cuda.occupancy import SM90, best_tpb, resident_blocks
from tracer.ir.config import context

KiB = 1024


@pytest.mark.parametrize("regs,smem,tpb,want", [
    (32, 0, 256, 8),        # 8 warps a block; 2048 threads: 8 blocks; 1024 regs a warp: 64 warps
    (75, 0, 256, 3),        # 2400 -> 2560 regs a warp: 25 warps, 3 whole blocks (37.5%)
    (33, 0, 256, 6),        # 1056 -> 1280 a warp (the 256 unit): 51 warps, 6 blocks
    (32, 0, 128, 16),       # the thread limit: 2048 / 128
    (16, 0, 32, 32),        # 64 blocks by threads, capped at 32 blocks an SM
    (0, 0, 64, 32),         # registers not known: thread and block limits only
    (64, 0, 1024, 1),       # 2048 regs a warp: 32 warps, one block of 32
    (255, 0, 256, 1),       # 8160 -> 8192 a warp: 8 warps, the whole register file
    (128, 0, 1024, 0),      # 4096 a warp: 16 warps < 32: the launch cannot run
    (32, 48 * KiB, 256, 4), # 48 KiB + 1 KiB reserved = 49 KiB a block: 228 // 49
    (32, 8 * KiB, 256, 8),  # 9 KiB a block: 25 fit, the threads allow 8
    (0, 100, 32, 32),       # 100 B + 1 KiB -> 1152 (the 128 unit): 202 fit, 32 allowed
    (0, 227 * KiB, 128, 1), # exactly 228 KiB with the reservation
    (0, 227 * KiB + 1, 128, 0),
    (32, 0, 0, 0), (32, 0, 1025, 0), (256, 0, 32, 0),  # no block / too many registers
])
def test_resident_blocks_follow_nvidias_rules_for_sm_90(regs, smem, tpb, want):
    assert resident_blocks(regs, smem, tpb, SM90) == want


def test_block_size_keeps_the_most_warps_resident():
    assert best_tpb(32, 0) == 256   # 64 warps at any size: the first choice
    assert best_tpb(72, 0) == 128   # 2304 a warp, 28 warps: 7 x 4 beats 3 x 8 and 1 x 16
    assert best_tpb(0, 0, choices=(512, 128)) == 512


def _kernel(regs, smem=0):
    return SimpleNamespace(overloads={"sig": SimpleNamespace(regs_per_thread=regs,
                                                             shared_mem_per_block=smem)})


class _Lazy:
    """A kernel with no overload yet: compiled (once) for the launch's arguments."""
    def __init__(self, regs):
        self.overloads, self.regs, self.compiles = {}, regs, 0

    def typeof_pyval(self, a):
        return type(a).__name__

    def compile(self, argtypes):
        self.compiles += 1
        self.overloads[argtypes] = SimpleNamespace(regs_per_thread=self.regs,
                                                   shared_mem_per_block=0)


@pytest.fixture
def device():
    """The cuda backend as it sizes grids on an H100 (132 SMs), with no device to ask."""
    be = backends.backend_class("cuda")()
    be.geometry._lim = occupancy.Limits(sms=132)
    with context(cuda_sim=False):
        yield be


def test_grids_are_one_wave_of_the_kernels_resident_blocks(device):
    assert device._blocks(10**9, 256, _kernel(75), (), 256) == 3 * 132
    assert device._blocks(10**9, 256, _kernel(32, 40 * KiB), (), 256) == 5 * 132
    assert device._blocks(10**9, 256) == 8 * 132  # no kernel: the thread limit
    assert device._blocks(1000, 256, _kernel(75), (), 256) == 4  # less work than a wave
    assert device.loop_tpb(_kernel(72), ()) == 128
    lazy = _Lazy(64)
    args = (1.0, 2)
    assert device._blocks(10**9, 1, lazy, args, 1024) == 132 and lazy.compiles == 1
    assert device.resident_blocks(lazy, 256, 0, args) == 4 and lazy.compiles == 1
    assert device.resident_blocks(lazy, 256, 48 * KiB, args) == 4  # smem: 228 // 49 = 4


def test_reduction_split_stays_within_one_wave(device):
    wave = 8 * 132
    assert device.reduce_split(1, 10**9) == wave           # was a fixed 1024
    assert device.reduce_split(1, 100) == 2
    assert device.reduce_split(10, 10**9) == -(-wave // 10)
    assert device.reduce_split(10**6, 10**9) == 1


def test_the_simulator_keeps_its_tiny_grids():
    be = backends.backend_class("cuda")()
    with context(cuda_sim=True):
        assert be._blocks(10**6, 8, _kernel(75), ()) == 2
        assert be.loop_tpb(_kernel(72), ()) == 8
        assert be.reduce_split(1, 10**6) == 2
