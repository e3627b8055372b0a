"""Lazy public names for a package `__init__` (PEP 562, as lazy_loader's `attach`): the
`__init__` imports nothing of its package at load time; each public name is imported from the
module that defines it on first use. This module imports no project module, so an `__init__`
may import it at load time without loading anything else."""
from __future__ import annotations

import importlib
from typing import Any, Callable


def attach(namespace: dict[str, Any], exports: dict[str, str],
           first: str = "") -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """(__getattr__, __dir__) for the package whose globals are `namespace`. `exports` maps each
    public name to the module that defines it (absolute, or relative to the package); `first`
    names a module to import before any of them. A name looked up is kept in `namespace`."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if first:
            importlib.import_module(first)
        value = namespace[name] = getattr(importlib.import_module(exports[name], package), name)
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
