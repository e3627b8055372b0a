"""numpy.memmap inputs (tracer/mapped.py): a read-only mapping is read in place, never copied
when recorded; under a memory budget a reduction over a 1 GiB mapped file runs in chunks that
read only their rows of it, and the process grows by less than the budget. Writable mappings
are copied when recorded, as any NumPy array is: an op sees the value it had then."""
from __future__ import annotations

import tracemalloc

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir.config import context
from test_budget_rss import growth

MiB = 2**20


def _memmap(path, values, mode="r"):
    values.tofile(path)
    return numpy.memmap(path, values.dtype, mode, shape=values.shape)


def _same(got, want):
    got = numpy.asarray(got)
    assert got.dtype == numpy.asarray(want).dtype
    numpy.testing.assert_allclose(got, want, rtol=1e-6)


OPS = {
    "asarray": lambda m, x: m.asarray(x),
    "array": lambda m, x: m.array(x),
    "sum": lambda m, x: m.sum(x),
    "sum_axis0": lambda m, x: m.sum(x, axis=0),
    "max_axis1": lambda m, x: m.max(x, axis=1),
    "mean": lambda m, x: m.mean(x),
    "chain": lambda m, x: ((x - 1) * 2 + m.asarray(x)).sum(axis=1),
    "strided": lambda m, x: m.asarray(x[::2, 1::3]) * 3,
    "row": lambda m, x: m.asarray(x)[5] + 1,
    "astype": lambda m, x: m.asarray(x, dtype=m.float32),
    "to_int8": lambda m, x: m.array(x, dtype=m.int8),
    "ndmin": lambda m, x: m.array(x[3], dtype=m.complex128, ndmin=3, order="F"),
}


@pytest.mark.parametrize("dtype", ["f8", "f4", "i4", "u1", "?"])
@pytest.mark.parametrize("op", list(OPS))
def test_read_only_memmap_inputs_match_numpy(tmp_path, dtype, op):
    values = (numpy.arange(48 * 20) % 17).reshape(48, 20).astype(dtype)
    mm = _memmap(tmp_path / "a.bin", values)
    _same(OPS[op](np, mm), OPS[op](numpy, values))


@pytest.mark.parametrize("offset", [8 * 1024 + 16, 3])
def test_memmap_at_an_offset_in_chunks(tmp_path, offset):
    """An offset into the file (its own page, or not aligned for its dtype: copied), reduced in
    chunks whose pages are dropped as they are read."""
    values = numpy.random.default_rng(1).standard_normal((512, 64))
    path = tmp_path / "a.bin"
    with open(path, "wb") as f:
        f.write(b"x" * offset + values.tobytes())
    mm = numpy.memmap(path, numpy.float64, "r", offset=offset, shape=values.shape)
    with tracer.memory_budget("64 KiB"):
        s, m = np.sum(np.multiply(mm, 2), axis=1), np.max(mm)
        tracer.evaluate(s, m)
    _same(s, (values * 2).sum(axis=1))
    _same(m, values.max())
    assert tracer.stats().split_chunks > 1


def test_a_read_only_memmap_is_not_copied_when_recorded(tmp_path):
    mm = _memmap(tmp_path / "a.bin", numpy.arange(2**20, dtype=numpy.float64))  # 8 MiB
    tracemalloc.start()
    try:
        a = np.asarray(mm)
        b = np.multiply(mm, 2) + mm  # (mm * 2 would be NumPy's operator: NumPy's copy)
        s = np.sum(mm)
        f = np.asarray(mm, dtype=np.float32)  # converted when evaluated
        grew = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert grew < MiB // 4, grew
    assert numpy.shares_memory(numpy.asarray(a), mm)
    raw = bytes(range(256)) * 64  # immutable too: read in place
    r = np.asarray(numpy.frombuffer(raw, numpy.uint16))
    assert numpy.shares_memory(numpy.asarray(r), numpy.frombuffer(raw, numpy.uint8))
    _same(r * 1, numpy.frombuffer(raw, numpy.uint16))
    numpy.testing.assert_array_equal(numpy.asarray(b), numpy.arange(2**20) * 3.0)
    assert float(s) == float(numpy.arange(2**20, dtype=numpy.float64).sum())
    _same(f, numpy.arange(2**20, dtype=numpy.float32))


@pytest.mark.filterwarnings("ignore::UserWarning")  # np.load: a fallback, counted
def test_load_with_mmap_mode_reads_in_place(tmp_path):
    values = numpy.arange(4096, dtype=numpy.float32).reshape(64, 64)
    numpy.save(tmp_path / "a.npy", values)
    x = np.load(tmp_path / "a.npy", mmap_mode="r")
    y = np.asarray(x)
    assert numpy.shares_memory(numpy.asarray(y), x)
    _same((y * 2).sum(axis=0), (values * 2).sum(axis=0))


def test_writes_into_an_array_of_a_read_only_memmap(tmp_path):
    values = numpy.arange(12.0).reshape(3, 4)
    mm = _memmap(tmp_path / "a.bin", values)
    x, y = np.asarray(mm), np.asarray(mm)  # one leaf: the same memory
    x[0, 1] = 50
    x += 1
    x[2] *= 2
    want = values.copy()
    want[0, 1] = 50
    want += 1
    want[2] *= 2
    _same(x, want)
    _same(y, values)
    numpy.testing.assert_array_equal(numpy.fromfile(tmp_path / "a.bin").reshape(3, 4), values)


@pytest.mark.parametrize("mode", ["r+", "c", "w+"])
def test_writable_memmaps_give_the_value_at_the_op(tmp_path, mode):
    values = numpy.arange(12.0).reshape(3, 4)
    values.tofile(tmp_path / "a.bin")
    mm = numpy.memmap(tmp_path / "a.bin", numpy.float64, mode, shape=(3, 4))
    if mode == "w+":
        mm[...] = values
    a, s, t = np.asarray(mm), np.sum(mm, axis=1), mm * 2 + 1
    mm[...] = -7
    _same(a, values)
    _same(s, values.sum(axis=1))
    _same(t, values * 2 + 1)


# ---- a 1 GiB mapped file reduced under a 64 MiB budget

ROWS, COLS = 2**17, 1024  # float64: 1 GiB


def _sparse_file(path, rows: int):
    """A file of rows x COLS float64 zeros (a sparse file: holes) with a few rows of random
    values; those rows' values, by first row (for the expected results)."""
    with open(path, "wb") as f:
        f.truncate(rows * COLS * 8)
    rng = numpy.random.default_rng(0)
    w = numpy.memmap(path, numpy.float64, "r+", shape=(rows, COLS))
    written = {}
    for lo, n in ((0, 2), (rows // 2, 1), (rows - 3, 3)):
        written[lo] = w[lo:lo + n] = rng.standard_normal((n, COLS)) * 10
    w.flush()
    del w
    return written


def _expected(written, rows: int):
    """The cases' results from the written rows (every other row is zeros)."""
    data = numpy.concatenate(list(written.values()))
    zeros = rows - len(data)
    sum1 = numpy.zeros(rows)
    for lo, v in written.items():
        sum1[lo:lo + len(v)] = v.sum(axis=1)
    return {
        "sum": data.sum(),
        "mean": data.sum() / (rows * COLS),
        "max": max(data.max(), 0.0),
        "chain": ((data - 1) ** 2).sum() + zeros * COLS,
        "max_axis0": numpy.maximum(data.max(axis=0), 0),
        "max_rows_of_flat": numpy.maximum(data.max(axis=0), 0),
        "sum_axis1": sum1,
    }


CASES = {
    "sum": lambda x: np.sum(x),
    "mean": lambda x: np.mean(x),
    "max": lambda x: np.max(x),
    "chain": lambda x: ((np.asarray(x) - 1) ** 2).sum(),
    "max_axis0": lambda x: np.max(x, axis=0),
    "max_rows_of_flat": lambda x: np.asarray(x.reshape(-1)).reshape(-1, COLS).max(axis=0),
    "sum_axis1": lambda x: np.asarray(x).sum(axis=1),
}


def test_a_1gib_memmap_reduced_under_a_64mib_budget(tmp_path):
    """Each reduction reads the file in chunks and drops each chunk's pages once read: the
    process grows by less than the budget. Code is not in the budget: the kernels are
    compiled and loaded first, on a smaller file in chunks of the same size."""
    small = tmp_path / "small.bin"
    want_small = _expected(_sparse_file(small, ROWS // 8), ROWS // 8)  # 128 MiB
    ms = numpy.memmap(small, numpy.float64, "r", shape=(ROWS // 8, COLS))
    for name, case in CASES.items():
        with tracer.memory_budget("64 MiB"), context(compile_mode="sync"):
            got = numpy.asarray(case(ms))
        numpy.testing.assert_allclose(got, want_small[name], rtol=1e-9, atol=1e-6)
    big = tmp_path / "big.bin"
    want = _expected(_sparse_file(big, ROWS), ROWS)
    mm = numpy.memmap(big, numpy.float64, "r", shape=(ROWS, COLS))
    for name, case in CASES.items():
        got = []

        def run():
            with tracer.memory_budget("64 MiB"):
                got.append(numpy.asarray(case(mm)))
        grew = growth(run)
        assert grew < 64 * MiB, (name, grew / MiB)
        numpy.testing.assert_allclose(got[0], want[name], rtol=1e-9, atol=1e-6)
        assert tracer.stats().planned_peak_bytes <= 64 * MiB
    big.unlink()  # (a 1 GiB name, if not 1 GiB of disk: gone before the next test)


def test_a_budget_a_mapped_input_cannot_meet_raises_before_reading(tmp_path):
    """An argmax over a whole mapped file: its partials do not combine, so nothing splits and
    the whole file would be read at once; the budget raises before a page of it is read."""
    path = tmp_path / "big.bin"
    _sparse_file(path, ROWS // 8)  # 128 MiB
    mm = numpy.memmap(path, numpy.float64, "r", shape=(ROWS // 8, COLS))
    x = np.argmax(mm)

    def run():
        with tracer.memory_budget("32 MiB"), pytest.raises(tracer.MemoryBudgetError,
                                                          match="smallest budget"):
            numpy.asarray(x)
    assert growth(run) < 8 * MiB
    with tracer.memory_budget("256 MiB"):
        assert int(x) == numpy.argmax(mm)
