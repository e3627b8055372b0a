"""The op registry, every op registered: the machinery (`opdef.py`: what an op entry is,
registration, lookups by property) and the catalogue modules that register the entries
(`catalogue.py`, `elementwise_ops.py`, `library_ops.py`), imported here. Code outside the
catalogue imports the registry's names from this module, so any code that can look an op up
sees every op registered.
"""
from __future__ import annotations

from .opdef import (ACC_ARG, ACC_DTYPE, ACC_LOGICAL, ACC_SELECT, ACC_WIDE, CHEAP_OPS,  # noqa: F401
                    LIBRARY_OPS, OPS, TUPLE_DTYPE, VIEW_OPS, Kind, OpDef, OpNames, Props,
                    consts_only, float_sum, fusion_outputs, get, is_inline_reduce, is_kernel_reduce, is_kind,
                    is_leaf, keeps_values, leaf_const,
                    names, reduce_identity, register)
from . import catalogue, elementwise_ops, library_ops  # noqa: F401  (registers every op)
