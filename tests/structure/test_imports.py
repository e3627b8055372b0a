"""The import contract, read from the source with `ast` (nothing is imported):

- the floors stack: `tracer.ir` imports none of the others; `tracer.opt` and
  `tracer.cuda_kernels` import `tracer.ir` only (not each other); the frontend `tracer` sits
  above them all;
- no import circle inside a floor (module-level and function-level imports both count; an
  import under `if TYPE_CHECKING:` does not);
- a function-level import of a project module carries a comment on its line saying why.

Folders map to packages as setup.cfg installs them: `ir/` -> tracer.ir, `opt/` -> tracer.opt,
`cuda_kernels/` -> tracer.cuda_kernels, `tracer/` -> tracer.
"""
from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"ir": "tracer.ir", "opt": "tracer.opt", "cuda_kernels": "tracer.cuda_kernels",
           "tracer": "tracer"}
# a floor may import the floors below it: ir < opt, cuda_kernels < tracer
RANK = {"tracer.ir": 0, "tracer.opt": 1, "tracer.cuda_kernels": 1, "tracer": 2}


@dataclass
class Edge:
    source: str
    target: str
    line: int
    in_function: bool
    has_reason: bool


@dataclass
class Graph:
    modules: dict[str, Path] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)


def module_names() -> dict[str, Path]:
    mods = {}
    for folder, package in FOLDERS.items():
        for p in sorted((ROOT / folder).rglob("*.py")):
            if "__pycache__" in p.parts:
                continue
            parts = [x for x in p.relative_to(ROOT / folder).with_suffix("").parts
                     if x != "__init__"]
            mods[".".join([package, *parts])] = p
    return mods


def floor(module: str) -> str:
    """The package a module belongs to: the longest of FOLDERS' packages that prefixes it."""
    return max((f for f in RANK if module == f or module.startswith(f + ".")), key=len)


def comments(source: str) -> dict[int, str]:
    """Line number -> the text of the comment on that line."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string.lstrip("#").strip()
    return out


def is_reason(text: str) -> bool:
    """A comment that says something: not empty, not a linter directive alone."""
    words = text.split()
    return bool(words) and not words[0].startswith(("noqa", "type:", "pragma:"))


def targets(mods, module: str, is_package: bool, node) -> list[str]:
    """The project modules an import statement loads: a submodule when one is named, else the
    module whose namespace the names come from."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            pkg = module.split(".") if is_package else module.split(".")[:-1]
            pkg = pkg[:len(pkg) - (node.level - 1)]
            base = ".".join(pkg + ([node.module] if node.module else []))
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    out = []
    for name in names:
        while name and name not in mods:  # `import tracer.ir.graph.Node`-style: its module
            name = name.rpartition(".")[0]
        if name and name != module:
            out.append(name)
    return list(dict.fromkeys(out))


@cache  # parsed once per run, at the first test, not at collection
def build() -> Graph:
    g = Graph(module_names())
    for module, path in g.modules.items():
        source = path.read_text()
        notes = comments(source)

        def walk(node, in_function: bool):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    for sub in child.orelse:  # only the `if` branch is for type checkers
                        walk(sub, in_function)
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    lines = range(child.lineno, (child.end_lineno or child.lineno) + 1)
                    reason = any(is_reason(notes.get(n, "")) for n in lines)
                    for t in targets(g.modules, module, path.name == "__init__.py", child):
                        g.edges.append(Edge(module, t, child.lineno, in_function, reason))
                walk(child, in_function or isinstance(child, (ast.FunctionDef,
                                                              ast.AsyncFunctionDef, ast.Lambda)))

        walk(ast.parse(source, str(path)), False)
    return g


def circles(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in nodes:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _where(e: Edge) -> str:
    path = build().modules[e.source].relative_to(ROOT)
    return f"{path}:{e.line}: {e.source} -> {e.target}" + (" (in a function)" if e.in_function
                                                           else "")


def test_the_source_is_found():
    assert {floor(m) for m in build().modules} == set(RANK)
    assert any(e.target.startswith("tracer.ir") for e in build().edges)


def test_floors_import_only_the_floors_below():
    bad = [e for e in build().edges
           if floor(e.source) != floor(e.target) and RANK[floor(e.target)] >= RANK[floor(e.source)]]
    assert not bad, "imports that go up or sideways:\n" + "\n".join(map(_where, bad))


@pytest.mark.parametrize("package", sorted(RANK))
def test_no_import_circle_inside_a_package(package):
    # a package's __init__ is a node too: a module that takes a name the __init__ defines or
    # re-exports closes a circle with it. Importing a submodule (`from . import backends`) is
    # an edge to that submodule only: Python runs the parent's __init__ first whatever it holds.
    nodes = {m for m in build().modules if floor(m) == package}
    edges: dict[str, set[str]] = {}
    for e in build().edges:
        if e.source in nodes and e.target in nodes:
            edges.setdefault(e.source, set()).add(e.target)
    found = circles(nodes, edges)
    detail = []
    for comp in found:
        inside = [e for e in build().edges if e.source in comp and e.target in comp]
        detail.append(f"{len(comp)} modules: {', '.join(comp)}\n  " +
                      "\n  ".join(map(_where, inside)))
    assert not found, f"import circles inside {package}:\n" + "\n".join(detail)


def test_function_level_imports_of_project_modules_say_why():
    bad = [e for e in build().edges if e.in_function and not e.has_reason]
    assert not bad, ("function-level imports of project modules without a `# reason` on "
                     "their line:\n" + "\n".join(map(_where, bad)))


def test_a_name_from_the_packages_init_is_an_edge_to_the_init():
    """What makes an __init__ part of a circle: `from . import backends` loads that submodule;
    `from . import default_backend` takes a name the __init__ defines."""
    mods = build().modules
    sub, name = (ast.parse(f"from . import {x}").body[0] for x in ("backends", "default_backend"))
    here = "tracer.cuda_kernels.executor"
    assert targets(mods, here, False, sub) == ["tracer.cuda_kernels.backends"]
    assert targets(mods, here, False, name) == ["tracer.cuda_kernels"]
