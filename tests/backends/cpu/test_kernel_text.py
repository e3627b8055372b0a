"""Readable kernels: names that say what a kernel does, a comment naming the graph node of
each temporary, and the text explain shows is the complete module that runs."""
from __future__ import annotations

import re

import numpy
import pytest
from numba.core.config import NUMBA_NUM_THREADS

import tracer
import tracer.numpy as np
from tracer.cuda_kernels.compiler import _kernel_name, _request_key
from tracer.cuda_kernels import backends
from tracer.cuda_kernels.cpu.pairwise import scratch_types

pytestmark = pytest.mark.lazy  # the backend's kernels are the subject


def _kernel(*arrays):
    (k,) = tracer.explain(*arrays).kernels
    return k


def test_names_are_readable_short_and_unique_per_structure():
    h = numpy.arange(24.0, dtype=numpy.float32)
    a, b = np.asarray(h), np.asarray(h[::-1].copy())
    flat = _kernel(a * b + a)
    strided = _kernel(a.reshape(4, 6).T * b.reshape(6, 4) + 1)  # same ops, another structure
    assert flat.name.startswith("loop_mul_add_f32_") and strided.name.startswith("loop_mul_add_f32_")
    assert flat.name != strided.name
    red = _kernel(((a - 1) ** 2).sum())
    assert red.name.startswith("reduce_sum_sub_sq_f32_")
    assert max(len(k.name) for k in (flat, strided, red)) <= 48


def test_the_variants_of_one_body_have_different_names():
    (fusion,) = tracer.explain(np.asarray(numpy.arange(6.0)) * 2).graph_after.roots
    body, be = fusion.attr("body"), backends.get("cpu")
    names = {_kernel_name(body, "loop", _request_key(be, body, "loop", f, p))
             for f in (False, True) for p in (False, True)}
    assert len(names) == 4


def test_each_temporary_names_its_graph_node():
    h = numpy.linspace(-2, 2, 50)
    plan = tracer.explain(np.exp(np.asarray(h) - 1.5) * np.asarray(h))
    (k,) = plan.kernels
    temps = [line.strip() for line in k.source.splitlines() if re.match(r"\s*t\d+ = ", line)]
    assert temps and all(re.search(r"  # node \d+: \w+$", t) for t in temps)
    ops = [t.rsplit(": ", 1)[1] for t in temps]
    assert {"param", "subtract", "exp", "multiply"} <= set(ops)
    # explain maps the numbers to the graph's nodes
    head = next(line for line in str(plan).splitlines() if line.startswith(f"== kernel {k.name}"))
    n = int(re.search(r"node (\d+): subtract", k.source).group(1))
    uid = re.search(rf"\b{n} %(\d+)", head).group(1)
    assert re.search(rf"%{uid}:\S+ = subtract", str(plan.graph_after))


def test_explained_source_is_a_complete_module_that_runs():
    h = numpy.linspace(0, 1, 30, dtype=numpy.float32)
    k = _kernel(np.sqrt(np.asarray(h)).sum())
    assert "_f32 = np.float32" in k.source and f"def {k.name}(" in k.source
    ns = {"_CACHE": False}  # what the cpu backend binds when it imports a generated module
    exec(compile(k.source, "<explained>", "exec"), ns)
    out = numpy.zeros((), numpy.float32)
    scratch = [numpy.zeros(s, dt) for s, dt in
               scratch_types(numpy.float32, NUMBA_NUM_THREADS, True)]
    ns[k.name](out, h, h.shape[0], h.shape[0], *scratch)  # out, p0, m0, ch, the stacks
    assert out.tobytes() == numpy.sqrt(h).sum().tobytes()


def test_one_structure_gives_byte_identical_source():
    def src(h):
        x = np.asarray(h)
        return _kernel(np.where(x > 0, x * x, -x).sum(axis=0)).source

    a, b = src(numpy.ones((5, 3))), src(numpy.arange(35.0).reshape(7, 5)[:, :3].copy())
    assert a == b and "# node" in a


def test_row_kernels_are_named_by_their_reductions():
    h = numpy.random.default_rng(0).standard_normal((8, 16))
    x = np.asarray(h)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    k = _kernel(e / e.sum(axis=1, keepdims=True))
    assert k.kind == "row" and k.name.startswith("row_max_sum_")
