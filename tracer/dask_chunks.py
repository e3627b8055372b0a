"""Tracer arrays as the chunks of a `dask.array` (`dask.array.from_array(t, chunks=...)`).

Dask wraps any NumPy-like array as its chunks: it calls NumPy's functions and ufuncs on them
(which tracer's protocols take over) and learns the chunk type from each array's 0-size
`_meta`. Registering tracer's array (`register`) adds what a chunk type needs beyond that:
Dask's arithmetic stops deferring to tracer arrays (NEP 13: Dask wraps them, so it is the
upcast type), its lookups for concatenate, tensordot, einsum, take, empty, percentile and
element counts answer with tracer's functions (results stay tracer arrays, as CuPy's stay
CuPy's), and `dask.sizeof` counts a chunk's bytes.

Within a task Dask calls the chunk functions one by one (its blockwise fusion puts a chain of
elementwise ops and a reduction's chunk step into one task); they record, and each task's
results are realized when the task ends, so the chain runs as fused kernels per chunk and
`compute()` and `persist()` hold values, not graphs. Dask's local schedulers (threads,
synchronous) hand each result to a callback (`_realize`) in the scheduler's thread; a
distributed worker measures each result (`_sizeof`) in the task's thread; sizing a chunk
anywhere else evaluates nothing. (Left pending, a chunk would be computed only where something
reads it, in one program with the chunks it depends on: Dask's compute() would return a graph
and persist() would hold none of its work.)

The registration runs when both tracer.numpy and dask.array are imported, in either order
(`when_dask_imported`, called by tracer.numpy's import): nothing of Dask is imported for it.
"""
from __future__ import annotations

import importlib.util
import sys

import numpy as np

from .array import evaluate, ndarray
from .dispatch import LAZY
from .store import HostVar

_DONE = False


def when_dask_imported() -> None:
    """Register now if dask.array is imported, else once its import has run."""
    if "dask.array" in sys.modules:
        register()
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())


class _AfterImport:
    """A finder on sys.meta_path that finds nothing itself: it wraps the loader of
    dask.array (found by the finders after it) so that `register` runs once its module has."""

    def find_spec(self, name, path=None, target=None):
        if name != "dask.array":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            register()

        spec.loader.exec_module = exec_then_register
        return spec


def register() -> None:
    """Register tracer's array as a Dask chunk type (once)."""
    global _DONE
    if _DONE:
        return
    _DONE = True
    from dask.array import backends, dispatch
    from dask.array.chunk_types import register_chunk_type
    from dask.callbacks import Callback
    from dask.sizeof import sizeof

    register_chunk_type(ndarray)
    dispatch.concatenate_lookup.register(ndarray, LAZY["concatenate"])
    dispatch.tensordot_lookup.register(ndarray, LAZY["tensordot"])
    dispatch.einsum_lookup.register(ndarray, LAZY["einsum"])
    dispatch.take_lookup.register(ndarray, LAZY["take"])
    dispatch.empty_lookup.register(ndarray, LAZY["empty"])
    dispatch.percentile_lookup.register(ndarray, backends.percentile)
    # counts as tracer arrays (NumPy's would be leaves of the graph of a mean)
    dispatch.numel_lookup.register(ndarray, backends._numel_arraylike)
    dispatch.nannumel_lookup.register(ndarray, backends._nannumel)
    dispatch.to_numpy_dispatch.register(ndarray, _to_numpy)
    sizeof.register(ndarray, _sizeof)
    Callback(posttask=_realize).register()


def _to_numpy(data, **kwargs):
    return np.asarray(data, **kwargs)


def _sizeof(a: ndarray) -> int:
    """A chunk's bytes, from its shape and dtype: nothing is evaluated where Dask sizes a value
    (on the client, on a worker's event loop, to weigh what it spills), except in a
    distributed worker's task thread, where the worker measures the task's result as it takes
    it: the one moment it hands it over there, so a pending chunk is realized first."""
    if _in_task() and _pending(a, []):
        evaluate(a)
    return int(a.nbytes)


def _in_task() -> bool:
    """Whether this thread runs a distributed worker's task (distributed's thread_state then
    holds the task's key)."""
    utils = sys.modules.get("distributed.utils")  # (none: Dask's local schedulers only)
    return utils is not None and getattr(utils.thread_state, "key", None) is not None


def _pending(value, out: list) -> list:
    """The tracer arrays in a task's result (an array, or the few in the tuples, lists and
    dicts that reductions' chunk steps return) whose value is still a graph. Long containers
    are not walked: they are other collections' partitions (a dask.bag's list of records)."""
    if isinstance(value, ndarray):
        var = value._var
        if type(var) is not HostVar and var.node.op != "input":
            out.append(value)
    elif isinstance(value, (tuple, list, dict)) and len(value) <= _WALKED:
        for v in value.values() if isinstance(value, dict) else value:
            _pending(v, out)
    return out


_WALKED = 16


def _realize(key, result, dsk, state, worker_id) -> None:
    """Dask's local schedulers call this with each task's result: its pending tracer arrays
    are realized together."""
    arrays = _pending(result, [])
    if arrays:
        evaluate(*arrays)
