"""The import contract, read from the source with `ast` (nothing is imported):

- the floors stack: `tracer.ir` imports none of the others; `tracer.opt` and
  `tracer.cuda_kernels` import `tracer.ir` only (not each other); the frontend `tracer` sits
  above them all;
- no import circle inside a floor (module-level, function-level and `if TYPE_CHECKING:`
  imports all count: a circle a type checker must untangle is a circle too);
- the floors' package `__init__`s load none of their modules at load time: they import only
  modules that import no project module themselves (`tracer.ir.exports`);
- a function-level import of a project module carries a comment on its line saying why.

What an import is an edge to. An import in module M whose target is project module T (the
submodule it names, else the module whose namespace the names come from; absolute or
relative, module- or function-level) is an edge M -> T, and also an implicit edge M -> P for
every project package P that strictly contains T, but M itself: Python runs `a/__init__` and
then `a/b/__init__` before the body of `a.b.c`. That holds for M's own packages too: a module
of `a.b` importing its sibling `a.b.c` has an edge to `a.b`, its own package's `__init__`, so a
package whose `__init__` loads a submodule that imports a sibling is a circle. (Python has
already started the importer's own packages when it runs the importer, so such an edge never
runs an `__init__` a second time; it says the importer cannot load without that `__init__`,
and the rule keeps the `__init__`s from loading their own submodules.) The floors check lets
an implicit edge to a package that contains the importer pass (every module of `tracer.ir`
lives in `tracer`, whose `__init__` loads nothing at load time: checked below).

Lazy re-exports. A package `__init__` may bind a module-level `__getattr__` (PEP 562: a `def`,
or `__getattr__, __dir__ = attach(...)` from `tracer.ir.exports`) that imports the module
defining a public name on first use, with `importlib.import_module`, from a module-level table
name -> module (a dict of strings). The table's modules, and any project module named by a
string in the statement that binds `__getattr__`, are lazy edges: they run only after the
package is loaded, so they are not load-time edges and close no circle; the floors check
still applies to them.

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
    implicit: bool = False  # Python runs this package's __init__ on the way to the target
    lazy: bool = False      # a table-driven __getattr__ imports it on first use


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


def parents(mods, module: str, target: str) -> list[str]:
    """The project packages Python runs on the way to `target`, outermost first: every package
    that strictly contains it, but the importer itself."""
    parts = target.split(".")
    outer = (".".join(parts[:i]) for i in range(1, len(parts)))
    return [p for p in outer if p in mods and p != module]


def binds_getattr(node: ast.stmt) -> bool:
    """A module-level `def __getattr__` or an assignment to `__getattr__` (a name in a tuple)."""
    if isinstance(node, ast.FunctionDef):
        return node.name == "__getattr__"
    return isinstance(node, ast.Assign) and any(
        isinstance(n, ast.Name) and n.id == "__getattr__" for t in node.targets for n in ast.walk(t))


def lazy_targets(mods, module: str, tree: ast.Module) -> list[tuple[int, str]]:
    """A package's table-driven `__getattr__` (PEP 562): (line, module) for each project module
    named by a string in the statement that binds it or in a module-level dict of strings that
    the statement reads."""
    places: list[ast.AST] = [n for n in tree.body if binds_getattr(n)]
    read = {n.id for place in places for n in ast.walk(place) if isinstance(n, ast.Name)}
    for n in tree.body:
        if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Dict):
            names = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(isinstance(t, ast.Name) and t.id in read for t in names):
                places.append(n.value)
    out = []
    for place in places:
        for c in ast.walk(place):
            if isinstance(c, ast.Constant) and isinstance(c.value, str):
                name = c.value
                if name.startswith("."):  # relative to the package, as import_module(x, pkg)
                    dots = len(name) - len(name.lstrip("."))
                    base = module.split(".")[:len(module.split(".")) - (dots - 1)]
                    name = ".".join(base + [name.lstrip(".")])
                if name in mods and name != module:
                    out.append((c.lineno, name))
    return list(dict.fromkeys(out))


def module_edges(mods, module: str, source: str, is_package: bool) -> list[Edge]:
    """The edges of one module's source: its imports' targets, the packages Python runs on the
    way to each (implicit), and a package's lazy re-exports."""
    notes = comments(source)
    out: list[Edge] = []

    def add(target: str, line: int, in_function: bool, reason: bool, lazy: bool = False):
        out.append(Edge(module, target, line, in_function, reason, lazy=lazy))
        out.extend(Edge(module, p, line, in_function, reason, implicit=True, lazy=lazy)
                   for p in parents(mods, module, target))

    def walk(node, in_function: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                lines = range(child.lineno, (child.end_lineno or child.lineno) + 1)
                reason = any(is_reason(notes.get(n, "")) for n in lines)
                for t in targets(mods, module, is_package, child):
                    add(t, child.lineno, in_function, reason)
            walk(child, in_function or isinstance(child, (ast.FunctionDef,
                                                          ast.AsyncFunctionDef, ast.Lambda)))

    tree = ast.parse(source)
    walk(tree, False)
    if is_package:
        for line, t in lazy_targets(mods, module, tree):
            add(t, line, True, True, lazy=True)
    return out


@cache  # parsed once per run, at the first test, not at collection
def build() -> Graph:
    g = Graph(module_names())
    for module, path in g.modules.items():
        g.edges += module_edges(g.modules, module, path.read_text(), path.name == "__init__.py")
    return g


def load_time(edges: list[Edge], nodes: set[str]) -> dict[str, set[str]]:
    """source -> targets among `nodes`, leaving out the lazy edges."""
    out: dict[str, set[str]] = {}
    for e in edges:
        if not e.lazy and e.source in nodes and e.target in nodes:
            out.setdefault(e.source, set()).add(e.target)
    return out


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
    how = ("implicit" if e.implicit else "", "lazy" if e.lazy else "",
           "in a function" if e.in_function and not e.lazy else "")
    how = ", ".join(h for h in how if h)
    return f"{path}:{e.line}: {e.source} -> {e.target}" + (f" ({how})" if how else "")


def test_the_source_is_found():
    assert {floor(m) for m in build().modules} == set(RANK)
    assert any(e.target.startswith("tracer.ir") for e in build().edges)


def test_floors_import_only_the_floors_below():
    bad = [e for e in build().edges
           if floor(e.source) != floor(e.target) and RANK[floor(e.target)] >= RANK[floor(e.source)]
           and not (e.implicit and e.source.startswith(e.target + "."))]  # its own namespace
    assert not bad, "imports that go up or sideways:\n" + "\n".join(map(_where, bad))


@pytest.mark.parametrize("package", sorted(RANK))
def test_no_import_circle_inside_a_package(package):
    # a package's __init__ is a node too: a module that takes a name the __init__ defines or
    # re-exports, or that imports any module inside that package (Python runs the __init__
    # first), closes a circle with an __init__ that loads it. Lazy re-exports do not count.
    nodes = {m for m in build().modules if floor(m) == package}
    found = circles(nodes, load_time(build().edges, nodes))
    detail = []
    for comp in found:
        inside = [e for e in build().edges
                  if e.source in comp and e.target in comp and not e.lazy]
        detail.append(f"{len(comp)} modules: {', '.join(comp)}\n  " +
                      "\n  ".join(map(_where, inside)))
    assert not found, f"import circles inside {package}:\n" + "\n".join(detail)


def test_the_floors_package_inits_load_none_of_their_modules_at_load_time():
    # `import tracer.ir` runs tracer/__init__ first: the floors stay apart and imports cheap
    # only while these import their public names lazily (a table-driven __getattr__) and load
    # at load time only packages' __init__s and modules that import no project module
    g = build()
    out = load_time(g.edges, set(g.modules))
    importers = {e.source for e in g.edges if not e.lazy and not e.implicit}
    seen, todo = set(RANK), list(RANK)
    while todo:
        for t in out.get(todo.pop(), ()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    bad = sorted(m for m in seen if m in importers and g.modules[m].name != "__init__.py")
    assert not bad, "modules the floors' __init__s load at load time that import others:\n" + (
        "\n".join(_where(e) for e in g.edges if e.target in bad and e.source in seen))


def test_no_lazy_name_is_also_a_submodule_name():
    # importing a submodule sets the package's attribute of that name to the module, which
    # would then hide a lazily exported function of the same name (tracer.jit, ir.verify)
    for folder, package in FOLDERS.items():
        init = ROOT / folder / "__init__.py"
        tree = ast.parse(init.read_text())
        names = {k.value for node in ast.walk(tree) if isinstance(node, ast.Dict)
                 for k in node.keys if isinstance(k, ast.Constant)}
        subs = {p.stem for p in (ROOT / folder).glob("*.py")} | \
            {p.name for p in (ROOT / folder).iterdir() if (p / "__init__.py").exists()}
        clash = sorted(names & subs - {"numpy"})  # tracer.numpy is exported as the module
        assert not clash, f"{package}: exported names that are submodules too: {clash}"


def test_function_level_imports_of_project_modules_say_why():
    bad = [e for e in build().edges if e.in_function and not e.has_reason and not e.implicit]
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


def test_importing_a_module_is_an_edge_to_each_package_python_runs_on_the_way():
    """Synthetic packages a, a.b: `a/b/__init__` loads `.x`, and `x` imports its sibling `c`,
    so x -> a.b (Python runs a.b's __init__ before c) closes a circle; the same __init__ with a
    table-driven __getattr__ instead has only lazy edges, and no circle."""
    mods = dict.fromkeys(["a", "a.b", "a.b.c", "a.b.x", "a.y"])
    assert parents(mods, "a.y", "a.b.c") == ["a", "a.b"]
    assert parents(mods, "a.b.x", "a.b.c") == ["a", "a.b"]  # its own package's __init__ too
    assert parents(mods, "a.b", "a.b.c") == ["a"]           # not the importer itself
    x = module_edges(mods, "a.b.x", "def f():\n    from . import c  # why\n", False)
    assert [(e.target, e.implicit, e.in_function) for e in x] == [
        ("a.b.c", False, True), ("a", True, True), ("a.b", True, True)]
    eager = module_edges(mods, "a.b", "from .x import f\n", True)
    lazy = module_edges(mods, "a.b", (
        "import importlib\n"
        "_EXPORTS = {'f': 'a.b.x', 'g': '.c'}\n"
        "def __getattr__(name):\n"
        "    return getattr(importlib.import_module(_EXPORTS[name], __name__), name)\n"), True)
    assert {(e.target, e.lazy) for e in lazy} == {
        ("a.b.x", True), ("a.b.c", True), ("a", True)}
    attached = module_edges(mods, "a.b", (
        "from a.y import attach\n"
        "_EXPORTS = {'f': 'a.b.x'}\n"
        "__getattr__, __dir__ = attach(globals(), _EXPORTS, first='a.b.c')\n"), True)
    assert {(e.target, e.lazy) for e in attached} == {
        ("a.y", False), ("a", False), ("a.b.x", True), ("a.b.c", True), ("a", True)}
    nodes = set(mods)
    assert circles(nodes, load_time(eager + x, nodes)) == [["a.b", "a.b.x"]]
    assert circles(nodes, load_time(lazy + x, nodes)) == []
