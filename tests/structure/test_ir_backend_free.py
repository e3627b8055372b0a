"""`tracer.ir` knows no backend: kernel templates and reduction combines take the loop's dtypes
only, and no module under ir/ holds helper source (functions as text): templates name helpers,
and the backends' helper tables (cuda_kernels/helpers.py, cpu/helpers.py, cuda/codegen.py)
supply them."""
from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from tracer.ir.registry import OPS

IR = Path(__file__).resolve().parents[2] / "ir"


def test_templates_take_dtypes_only():
    for name, d in OPS.items():
        for f in (d.template, d.combine):
            if callable(f):
                assert len(inspect.signature(f).parameters) == 2, name  # (in_dtypes, out_dtype)


def test_no_helper_source_in_ir():
    for path in sorted(IR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not re.search(r"(^|\n)\s*def \w+\(", node.value), path.name
