"""Kernel cache: a fusion body -> compiled kernel, in memory and through Numba's disk cache.

The in-memory key is the body's canonical structure with sizes abstracted (see emit.body_key),
plus the backend and the flat/strided variant. Lowering plans kernels (`plan_kernels`: source
text only, nothing written or imported); compiling loads them (`load_kernels`): generated modules
are written once, atomically, under TRACER_CACHE_DIR, and registered in sys.modules before they
run (Numba's disk cache needs both: see NUMBA_NOTES.md section 4).

A damaged cache is repaired, with one warning: a file where one of its folders belongs (or a
folder where a file belongs) is removed, and a batch module whose text no longer matches the
hash in its name (truncated, overwritten) is generated again. A cache that cannot be written
(read-only, or under no writable home) is not used: modules are compiled in memory, with one
warning, and nothing is kept for later runs.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from tracer.ir import log
from tracer.ir.node import Node
from tracer.ir.config import CONFIG
from tracer.ir.stats import STATS
from .base import Backend
from .emit import body_key, kernel_label, key_hash, type_aliases


_WARNED: set[str] = set()


def warn_once(topic: str, message: str) -> None:
    """One warning per topic and process: a damaged or read-only cache would otherwise warn
    at every kernel."""
    if topic not in _WARNED:
        _WARNED.add(topic)
        warnings.warn(f"tracer: {message}", RuntimeWarning, stacklevel=3)


def damaged(what: str) -> None:
    warn_once("damaged", f"the kernel cache had a damaged entry ({what}); damaged entries are "
                         "built again")


def read_only(why: str) -> None:
    warn_once("read-only", f"no writable kernel cache ({why}); compiling in memory, so nothing "
                           "is kept for later runs")


_WRITABLE: dict[str, bool] = {}  # cache folder -> whether it can be written (checked once)


def cache_dir() -> str:
    d = os.environ.get("TRACER_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "tracer")
    if d not in _WRITABLE:
        _WRITABLE[d] = _prepare(d)
    return d


def writable() -> bool:
    """Whether kernels go to disk; if not, they are compiled in memory (see the module doc)."""
    return _WRITABLE[cache_dir()]


def _prepare(d: str) -> bool:
    """Make the cache's folders, replacing whatever else stands where one belongs; whether
    the cache can be written."""
    gen = os.path.join(d, "gen")
    try:
        for sub in (gen, os.path.join(gen, "index"), os.path.join(gen, "__pycache__")):
            if os.path.lexists(sub) and not os.path.isdir(sub):
                damaged(f"{sub} is not a folder")
                _remove(sub)
            os.makedirs(sub, exist_ok=True)
        with tempfile.TemporaryFile(dir=gen):
            pass
        return True
    except OSError as e:
        read_only(f"{d}: {e.strerror or e}")
        return False


def _remove(path: str) -> None:
    """Remove a file or a folder (another process may have removed it first)."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    except FileNotFoundError:
        pass


@dataclass
class Kernel:
    name: str
    backend: str
    kind: str               # loop | reduce | row | horizontal
    source: str             # its own complete module: what a batch of this kernel alone writes
    key: str
    flat: bool
    parallel: bool = True
    fn: Any = None          # the compiled entry point, bound by load_kernels (None: planned only)
    n_consts: int = 0
    meta: dict = field(default_factory=dict)
    module: str = ""       # the generated module that holds it
    pending: Any = None     # a background compile not yet finished (tiered execution)
    gen: Any = None         # its generated parts (base.Gen), which load_kernels writes

    def __repr__(self) -> str:
        return f"Kernel({self.name}, {self.backend}, {self.kind})"


_MEM: dict[tuple[str, str, bool, bool], Kernel] = {}
# A body planned again for another size class (PARALLEL_MIN: a serial kernel below it, a
# parallel one above) is a new kernel, which the stats count as a recompile. Not a runtime
# branch: both loops in every kernel would double each kernel's compile time to save a compile
# when a program's sizes cross the line


def write_atomic(path: str, data: str | bytes) -> None:
    """Write a file whole or not at all (a temporary file renamed over it), so a process
    reading it at the same time sees the old or the new contents, never a part. A folder
    standing where the file belongs (a damaged cache) is removed first, and a folder removed
    while this process runs is made again."""
    if os.path.isdir(path):
        damaged(f"{path} is a folder")
        _remove(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


_SOURCES: dict[str, str] = {}  # modules compiled in memory (no writable cache): path -> source


def module_path(name: str) -> str:
    return os.path.join(cache_dir(), "gen", f"{name}.py")


def write_module(name: str, source: str) -> str:
    """Write the module once (atomic rename), so its mtime, and Numba's cache, stay valid.
    Without a writable cache it is kept in memory (and its backend binds no disk cache: see
    `module_globals`)."""
    path = module_path(name)
    if not writable():
        _SOURCES[path] = source
        return path
    try:
        with open(path) as f:
            if f.read() == source:
                return path
    except (OSError, UnicodeDecodeError):  # not written yet, or damaged: written anew
        pass
    write_atomic(path, source)
    return path


def purge_disk_cache(module: str, name: str) -> bool:
    """Delete Numba's cache entries of function `name` in generated module `module` (beside the
    module, or under NUMBA_CACHE_DIR where that is set); whether there were any."""
    from numba.core import config as numba_config
    roots = [os.path.join(cache_dir(), "gen", "__pycache__")]
    if numba_config.CACHE_DIR:
        roots.append(numba_config.CACHE_DIR)
    found = False
    for root in roots:
        for d, _, files in os.walk(root):
            for f in files:
                if f.startswith(f"{module}.{name}-") and f.endswith((".nbi", ".nbc")):
                    try:
                        os.remove(os.path.join(d, f))
                        found = True
                    except FileNotFoundError:  # another process removed it first
                        pass
    return found


def import_module(name: str, path: str, inject: dict | None = None):
    """Import a generated module; `inject` binds names (e.g. the CUDA jit decorators) first.
    Another thread sees the module only once it has finished executing (it is in
    sys.modules during its execution, as Numba's cache pickles need: `_DONE` tells)."""
    modname = f"tracer_gen.{name}"
    mod = sys.modules.get(modname)
    if mod is not None and _DONE.get(modname) == path:
        return mod
    with _IMPORTING:
        mod = sys.modules.get(modname)
        if mod is not None and _DONE.get(modname) == path:
            return mod
        spec = importlib.util.spec_from_file_location(modname, path)
        mod = importlib.util.module_from_spec(spec)
        mod.__dict__.update(inject or {})
        sys.modules[modname] = mod  # before exec: Numba's cache pickles refer to it
        try:
            if path in _SOURCES:
                exec(compile(_SOURCES[path], path, "exec"), mod.__dict__)
            else:
                spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[modname]  # a later import tries again
            raise
        _DONE[modname] = path
    return mod


_IMPORTING = threading.RLock()  # (reentrant: a module's execution may import another)
_DONE: dict[str, str] = {}  # generated modules fully executed: name -> path


def _request_key(be: Backend, body: Node, kind: str, flat: bool, parallel: bool) -> tuple:
    return be.name, body_key(body, kind) + be.variant(), flat, parallel


def _kernel_name(body: Node, kind: str, mk: tuple) -> str:
    """A readable label, then the hash of the whole request key: the name is unique per key,
    in a batched module and in the disk index."""
    backend, key, flat, parallel = mk
    variant = f"{backend} {'flat' if flat else 'strided'} {'parallel' if parallel else 'serial'}\n"
    return f"{kernel_label(body, kind)}_{key_hash(variant + key)}"


def _index_path(name: str) -> str:
    return os.path.join(cache_dir(), "gen", "index", name)


def _gen_hash(gen) -> str:
    return key_hash(gen.header + gen.helpers + gen.kernel)


def _indexed_module(name: str, gen) -> str | None:
    """The generated module that already holds kernel `name` with this very source (written by
    an earlier batch, in this process or another; a tracer whose code generation changed
    writes anew), or None. A module whose text does not match its name's hash is damaged."""
    if not writable():
        return None
    try:
        with open(_index_path(name)) as f:
            mod, h = f.read().split()
    except (OSError, ValueError):
        return None
    if h != _gen_hash(gen):
        return None
    try:
        with open(module_path(mod)) as f:
            intact = key_hash(f.read()) == mod.rsplit("_", 1)[-1]
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):  # a folder, or not text
        intact = False
    if not intact:
        damaged(f"{module_path(mod)} does not match its hash")
        _remove(module_path(mod))
        sys.modules.pop(f"tracer_gen.{mod}", None)
        _DONE.pop(f"tracer_gen.{mod}", None)
    return mod if intact else None


def _write_index(name: str, module: str, gen) -> None:
    if writable():
        write_atomic(_index_path(name), f"{module} {_gen_hash(gen)}")


_DEF = re.compile(r"^def (\w+)\(", re.M)


def batch_source(header: str, parts: list[tuple[str, str, str]]) -> str:
    """One module for several kernels: `parts` holds (kernel name, helpers, kernel source).
    Helpers shared by kernels appear once; two different definitions of one name fail loudly
    (a later `def` would silently replace an earlier kernel or helper)."""
    defs: dict[str, str] = {}
    chunks: list[str] = []
    for kname, helpers, kernel in parts:
        for block in [b for b in helpers.split("\n\n") if b.strip()] + [kernel]:
            names = _DEF.findall(block)
            if not names:
                raise ValueError(f"kernel {kname}: a generated block defines no function")
            if all(defs.get(n) == block for n in names):
                continue  # a helper another kernel of the batch already brought
            for n in names:
                if n in defs:
                    raise ValueError(f"batched module: two different definitions of `{n}` "
                                     f"(the second from kernel {kname}); generated names must "
                                     "be unique")
                defs[n] = block
            chunks.append(block)
    return "\n".join(["# generated by tracer: do not edit", header, type_aliases(), "",
                      "\n\n".join(chunks), ""])


def plan_kernels(requests: list[tuple[Node, str, bool, bool]], be: Backend) -> list[Kernel]:
    """Kernels of backend `be` for (body, kind, flat, parallel) requests, planned only: known
    ones come from memory (loaded or not), new ones are generated (source text) and kept in
    memory unloaded; nothing is written or imported (`load_kernels` does that)."""
    t0 = time.perf_counter()
    kernels, made = [], set()
    for body, kind, flat, parallel in requests:
        mk = _request_key(be, body, kind, flat, parallel)
        if mk not in _MEM:
            if (*mk[:3], not mk[3]) in _MEM:  # the other size class of a known kernel
                STATS.recompiles += 1
            name = _kernel_name(body, kind, mk)
            gen = be.generate(body, kind, name, flat, parallel)
            _MEM[mk] = Kernel(name, be.name, kind, batch_source(gen.header, [(name, gen.helpers,
                                                                             gen.kernel)]),
                              mk[1], flat, parallel, n_consts=len(gen.consts), meta=gen.meta,
                              gen=gen)
            made.add(mk)
        elif mk not in made:
            STATS.cache_hits_memory += 1
        kernels.append(_MEM[mk])
    STATS.codegen_s += time.perf_counter() - t0
    return kernels


_LOADING = threading.Lock()  # jit replays from any thread: one batch module per new kernel


def load_kernels(kernels: list[Kernel], be: Backend) -> None:
    """Bind the entry point of each kernel not loaded yet: from the module an earlier batch
    wrote (the on-disk index), else from one new module holding all the others (batched
    compilation), written once and imported once."""
    with _LOADING:
        todo = list({id(k): k for k in kernels if k.fn is None}.values())
        if not todo:
            return
        t0 = time.perf_counter()
        gens = {k.name: k.gen for k in todo}
        where = {name: _indexed_module(name, gen) for name, gen in gens.items()}
        fresh = [name for name, mod in where.items() if mod is None]
        source = batch_source(gens[fresh[0]].header, [(n, gens[n].helpers, gens[n].kernel)
                                                     for n in fresh]) if fresh else ""
        STATS.codegen_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        if fresh:
            batch = f"b_{be.name}_{key_hash(source)}"
            write_module(batch, source)
            for name in fresh:
                _write_index(name, batch, gens[name])
                where[name] = batch
        inject = be.module_globals()
        for k in todo:
            mod = import_module(where[k.name], module_path(where[k.name]), inject)
            k.fn, k.module = getattr(mod, k.name), where[k.name]
            k.gen = None  # the parts were for writing the module; `source` keeps the text
            if CONFIG.debug >= 1:
                log.debug(f"new kernel {k.name} ({k.kind}, {be.name}) in module {k.module}: "
                          "a structure not seen in this process")
        STATS.load_s += time.perf_counter() - t0
