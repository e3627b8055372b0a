"""CUDA kernels on disk: the compiled code of a generated kernel, per signature, kept under
TRACER_CACHE_DIR/gen/cuda so that a later process loads it without compiling.

Why not numba-cuda's own cache (`cuda.jit(cache=True)`): its index key holds the device's compute
capability and runtime version (`magic_tuple`, which needs a driver), so nothing can be stored or
found without a GPU, and it is keyed by the source file's mtime. This cache is keyed by content:
the generated module's text, the kernel's name, its argument types, its compile options, the
compute capability and the toolchain (Numba and numba-cuda versions, Python, and the NVVM and
libdevice libraries that make the PTX). It plugs into the kernel's dispatcher where Numba's cache
would (`dispatcher._cache`), so a launch on a device looks up and stores through it, and the
driverless PTX path (`ptx`) goes through the very same key and lookup: the tests exercise it
without a GPU.

An entry holds the PTX (and, from a device, the linked cubin with the driver version that made
it, used only under that same driver); loading one rebuilds numba-cuda's `_Kernel` around a code
library whose PTX/cubin caches are filled, which is what numba-cuda's own cache does. Entries are
written whole (a temporary file renamed), so concurrent processes see an old entry or a new one;
a damaged entry is removed, with one warning, and compiled again.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import re
import sys

from numba.cuda.core import sigutils
from numba.cuda.core.caching import _Cache

from tracer.ir.stats import STATS
from ..compiler import _remove, cache_dir, damaged, warn_once, writable, write_atomic

_FORMAT = 1  # bump when the entry layout changes
_TOOLCHAIN: list[str] = []
_SOURCE_HASH: dict[tuple, str] = {}  # (module path, mtime, size) -> hash of its text


def toolchain() -> str:
    """What makes the PTX besides the source: the versions, and the NVVM and libdevice
    libraries in use (path, size and mtime: the system toolkit's and a pip wheel's differ).
    (Only those two are looked up: numba-cuda's get_cuda_paths() costs about 0.25 s.)"""
    if not _TOOLCHAIN:
        import numba
        import numba_cuda
        from cuda.pathfinder import load_nvidia_dynamic_lib
        from numba.cuda.cuda_paths import _get_libdevice_path
        from numba.cuda.cudadrv import nvvm
        parts = [f"format {_FORMAT}", f"python {sys.version_info[0]}.{sys.version_info[1]}",
                 f"numba {numba.__version__}", f"numba-cuda {numba_cuda.__version__}",
                 f"nvvm {nvvm.NVVM().get_version()} ir {nvvm.NVVM().get_ir_version()}"]
        for lib, path in (("libnvvm", load_nvidia_dynamic_lib("nvvm").abs_path),
                          ("libdevice", _get_libdevice_path().info)):
            try:
                st = os.stat(path)
                parts.append(f"{lib} {path} {st.st_size} {st.st_mtime_ns}")
            except (OSError, TypeError):
                parts.append(f"{lib} {path}")
        _TOOLCHAIN.append("\n".join(parts))
    return _TOOLCHAIN[0]


def _source_hash(py_func) -> str | None:
    """The hash of the text of the generated module that defines the kernel (its helpers and
    header included), read while the module is being imported (`jit`), or None where it is
    not on disk (a cache that cannot be written)."""
    if not writable():
        return None
    path = py_func.__code__.co_filename
    try:
        st = os.stat(path)
        stamp = (path, st.st_mtime_ns, st.st_size)  # a module rewritten since is read again
        h = _SOURCE_HASH.get(stamp)
        if h is None:
            with open(path, "rb") as f:
                h = _SOURCE_HASH[stamp] = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None
    return h


def _options(targetoptions: dict) -> str:
    return repr(sorted((k, v) for k, v in targetoptions.items() if k != "extensions"))


def _cacheable(targetoptions: dict) -> bool:
    """Kernels whose code is all in their PTX: no debug build (its exceptions need the
    compile's call helper), no linked files, no LTO, no extensions, no carveout."""
    o = targetoptions
    return not (o.get("debug") or o.get("link") or o.get("lto") or o.get("extensions") or
                o.get("shared_memory_carveout") is not None)


def _key(src: str | None, py_func, argtypes: tuple, cc: tuple,
         targetoptions: dict) -> tuple[str, str] | None:
    """(entry file, full key text) of a kernel of module text hash `src` for these argument
    types and compute capability, or None where it is not cached."""
    if src is None or not writable() or not _cacheable(targetoptions):
        return None
    text = "\n".join([toolchain(), f"module {src}", f"kernel {py_func.__qualname__}",
                      f"args {', '.join(str(t) for t in argtypes)}", f"cc {cc!r}",
                      f"options {_options(targetoptions)}"])
    h = hashlib.sha256(text.encode()).hexdigest()[:32]
    return os.path.join(cache_dir(), "gen", "cuda", f"{py_func.__name__}-{h}.nbk"), text


def _lookup(key: tuple[str, str] | None) -> dict | None:
    if key is None:
        return None
    path, text = key
    try:
        with open(path, "rb") as f:
            entry = pickle.load(f)
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - truncated, overwritten, a folder: built again
        damaged(f"{path} cannot be read")
        _remove(path)
        return None
    if not isinstance(entry, dict) or entry.get("key") != text:
        damaged(f"{path} does not hold its key")
        _remove(path)
        return None
    return entry


def _store(key: tuple[str, str] | None, entry_name: str, ptx: list[str],
           cubin: tuple[int, bytes] | None = None) -> None:
    if key is None:
        return
    path, text = key
    folder = os.path.dirname(path)
    if os.path.lexists(folder) and not os.path.isdir(folder):
        damaged(f"{folder} is not a folder")
        _remove(folder)
    write_atomic(path, pickle.dumps({"key": text, "entry": entry_name, "ptx": ptx,
                                     "cubin": cubin}, protocol=4))


def device_cc() -> tuple:
    """The current device's compute capability as numba-cuda's code library keys its PTX and
    cubin (`CUDACodeLibrary._ensure_cc`: with the "a" suffix from sm_90 on)."""
    from numba.cuda.codegen import CUDACodeLibrary
    return CUDACodeLibrary._ensure_cc(None, None)


def _driver_version() -> int:
    from numba.cuda.cudadrv.driver import driver
    return driver.get_version()


def _kernel(entry: dict, argtypes: tuple, cc: tuple, targetoptions: dict, cubin_ok: bool):
    """numba-cuda's `_Kernel` for a cache entry: a code library whose PTX (and cubin) for `cc`
    are already there, so binding it on a device links (or only loads) and never compiles."""
    from numba.cuda import types, typing
    from numba.cuda.codegen import CUDACodeLibrary
    from numba.cuda.dispatcher import _Kernel
    cubin = {cc: entry["cubin"][1]} if cubin_ok and entry["cubin"] else {}
    lib = CUDACodeLibrary._rebuild(
        codegen=None, name=entry["entry"], entry_name=entry["entry"], llvm_strs=[],
        ptx_cache={cc: list(entry["ptx"])}, cubin_cache=cubin, linkerinfo_cache={},
        max_registers=targetoptions.get("max_registers"),
        nvvm_options={"fastmath": targetoptions.get("fastmath", False),
                      "opt": 3 if targetoptions.get("opt", True) else 0},
        needs_cudadevrt=False, nrt=False, use_cooperative=False, lto=False)
    return _Kernel._rebuild(cooperative=False, name=entry["entry"],
                            signature=typing.signature(types.void, *argtypes), codelibrary=lib,
                            debug=False, lineinfo=targetoptions.get("lineinfo", False),
                            call_helper=None, extensions=[])


class DiskCache(_Cache):
    """The cache of one kernel dispatcher on a device: numba-cuda's `compile` asks it before
    compiling (`load_overload`) and hands it what it compiled (`save_overload`)."""

    def __init__(self, disp, src: str | None):
        self._disp = disp
        self.src = src  # the hash of its module's text, read when the module was imported
        self._enabled = True

    @property
    def cache_path(self):
        return os.path.join(cache_dir(), "gen", "cuda")

    def key(self, sig, cc, targetoptions: dict | None = None) -> tuple:
        """(argument types, the entry's (file, key text) or None) of `sig` for capability cc."""
        argtypes, _ = sigutils.normalize_signature(sig)
        return argtypes, _key(self.src, self._disp.py_func, argtypes, cc,
                              self._disp.targetoptions if targetoptions is None else targetoptions)

    def load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        cc = device_cc()
        argtypes, key = self.key(sig, cc)
        entry = _lookup(key)
        if entry is None:
            return None
        try:
            cubin_ok = entry["cubin"] is not None and entry["cubin"][0] == _driver_version()
            kernel = _kernel(entry, argtypes, cc, self._disp.targetoptions, cubin_ok)
        except Exception:  # noqa: BLE001 - numba-cuda internals that moved: compiled as usual
            return None
        STATS.cache_hits_disk += 1
        return kernel

    def save_overload(self, sig, kernel):
        lib = kernel.library
        if not self._enabled or kernel.cooperative or lib._linking_files or \
                getattr(kernel, "launch_config_sensitive", False):
            return
        cc = device_cc()
        argtypes, key = self.key(sig, cc)
        if tuple(kernel.signature.args) != tuple(argtypes):
            return
        cubin = lib._cubin_cache.get(cc)
        try:
            _store(key, kernel.entry_name, lib.get_asm_strs(cc=cc),
                   (_driver_version(), cubin) if cubin else None)
        except OSError as e:  # a full disk, say: the kernel runs, later processes compile it
            warn_once("cuda-cache", f"a CUDA kernel could not be kept on disk ({e})")

    def enable(self):
        self._enabled = True

    def disable(self):
        self._enabled = False

    def flush(self):
        """Forget this kernel's entries (numba-cuda's `recompile`)."""
        folder = self.cache_path
        try:
            names = os.listdir(folder)
        except OSError:
            return
        for n in names:
            if n.startswith(f"{self._disp.py_func.__name__}-") and n.endswith(".nbk"):
                _remove(os.path.join(folder, n))


def jit(fn):
    """`cuda.jit` of a generated kernel, with this disk cache (the `_jit` of device modules)."""
    from numba import cuda
    disp = cuda.jit(fn)
    disp._cache = DiskCache(disp, _source_hash(fn))
    return disp


_ENTRY = re.compile(r"^\.(?:visible|weak)\s+\.entry\s+(\S+?)\s*\(", re.M)


def ptx(disp, argtypes: tuple, cc: tuple) -> str:
    """The PTX of kernel dispatcher `disp` (made by `jit`) for `argtypes` and compute
    capability `cc`, compiled without a GPU (NVVM only): from the disk cache when an earlier
    process stored it, else compiled and stored, under the key a device launch of that
    capability uses."""
    from numba import cuda
    argtypes, key = disp._cache.key(argtypes, cc)
    o = disp.targetoptions
    entry = _lookup(key)
    if entry is not None:
        STATS.cache_hits_disk += 1
        return "\n".join(entry["ptx"])
    text, _ = cuda.compile_ptx(disp.py_func, argtypes, debug=o.get("debug"),
                               lineinfo=o.get("lineinfo", False), fastmath=o.get("fastmath", False),
                               opt=o.get("opt"), cc=cc)
    STATS.kernels_compiled += 1
    _store(key, _ENTRY.search(text).group(1), [text])
    return text
