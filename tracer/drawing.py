"""Graphviz pictures of a plan: the optimized graph, each fused kernel outlined as a cluster."""
from __future__ import annotations

import os
import shutil
import subprocess
import warnings

from tracer.ir.node import Node, short_type, toposort


def _label(n: Node) -> str:
    if n.op == "const":
        return f"{n.attr('value')!r}\\n{short_type(n)}"
    extra = ""
    for key in ("axes", "perm", "axis", "slices", "shape"):
        if n.attr(key) is not None and n.op != "input":
            extra = f" {key}={n.attr(key)}"
            break
    return f"{n.op}{extra}\\n{short_type(n)}".replace('"', "'")


def to_dot(roots: list[Node], kernel_of: dict | None = None, title: str = "tracer") -> str:
    """DOT text for the graph under `roots`; a fusion node is drawn as a cluster of its body
    (labelled with its kernel's name where `kernel_of` knows it), wired to its operands."""
    kernel_of = kernel_of or {}
    lines = [f'digraph "{title}" {{', "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fillcolor=white, fontname="monospace",'
             ' fontsize=10];']
    name: dict[int, str] = {}
    counter = [0]

    def new(n: Node, indent: str, **style) -> str:
        counter[0] += 1
        nm = f"n{counter[0]}"
        attrs = "".join(f', {k}="{v}"' for k, v in style.items())
        lines.append(f'{indent}{nm} [label="{_label(n)}"{attrs}];')
        return nm

    def edges(n: Node, indent: str, src: dict[int, str]) -> None:
        for i in n.inputs:
            lines.append(f"{indent}{src[id(i)]} -> {name[id(n)]};")

    rootset = {id(r) for r in roots}
    for k, n in enumerate(toposort(roots)):
        if n.op == "fusion":
            body = n.attr("body")
            kern = kernel_of.get(id(n))
            label = f"{kern.name} ({n.attr('kind')})" if kern is not None else \
                f"fusion {k} ({n.attr('kind')})"
            lines.append(f"  subgraph cluster_{k} {{")
            lines.append(f'    label="{label}"; style="rounded,filled"; fillcolor="#eef3fb";'
                         ' color="#3b6fb6"; fontname="monospace"; fontsize=10;')
            inner: dict[int, str] = {}
            for b in toposort([body]):
                if b.op == "param":
                    inner[id(b)] = name[id(n.inputs[b.attr("index")])]
                elif b.op != "tuple":
                    inner[id(b)] = name[id(b)] = new(b, "    ")
                    for i in b.inputs:
                        lines.append(f"    {inner[id(i)]} -> {name[id(b)]};")
            lines.append("  }")
            outs = body.inputs if body.op == "tuple" else (body,)
            name[id(n)] = inner[id(outs[0])]
            name[("out", id(n))] = [inner[id(o)] for o in outs]  # type: ignore[index]
        elif n.op == "output":
            name[id(n)] = name[("out", id(n.inputs[0]))][n.attr("index")]  # type: ignore[index]
        else:
            style = {"fillcolor": "#f3f3f3"} if n.op in ("input", "const") else {}
            name[id(n)] = new(n, "  ", **style)
            edges(n, "  ", name)
        if id(n) in rootset:
            lines.append(f"  {name[id(n)]} [penwidth=2.5];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def save(dot: str, path: str) -> str:
    """Render DOT text to `path` with Graphviz (format from the extension: svg, png, pdf...);
    without Graphviz, or for a .dot path, write the DOT text (next to `path`, as .dot).
    Returns the path written."""
    root, ext = os.path.splitext(path)
    fmt = ext.lstrip(".").lower() or "dot"
    exe = shutil.which("dot")
    if fmt in ("dot", "gv") or exe is None:
        if fmt not in ("dot", "gv"):
            warnings.warn(f"tracer: Graphviz's `dot` is not installed; wrote the DOT text to "
                          f"{root}.dot instead of {path}", UserWarning, stacklevel=3)
            path = root + ".dot"
        with open(path, "w") as f:
            f.write(dot)
        return path
    subprocess.run([exe, f"-T{fmt}", "-o", path], input=dot.encode(), check=True)
    return path
