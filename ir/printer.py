"""One line per node: `%7:f32[128,64] = add %3, %5`. Used by repr, dumps and golden tests."""
from __future__ import annotations

from .node import Node, short_type, toposort


def _fmt_attr(k: str, v) -> str:
    if isinstance(v, Node):
        return f"{k}=<body %{v.uid}>"
    return f"{k}={v}"


def format_graph(roots: list[Node] | tuple[Node, ...], indent: str = "") -> str:
    lines = []
    for n in toposort(list(roots)):
        args = ", ".join(f"%{i.uid}" for i in n.inputs)
        attrs = [_fmt_attr(k, v) for k, v in n.attrs if k not in ("body", "buf")]
        if n.op == "input":
            attrs.append("buf")
        tail = (" " if args else "") + args + ("" if not attrs else "  {" + ", ".join(attrs) + "}")
        lines.append(f"{indent}%{n.uid}:{short_type(n)} = {n.op}{tail}")
        body = n.attr("body")
        if isinstance(body, Node):
            lines.append(format_graph([body], indent + "    "))
    out = "\n".join(lines)
    if not indent and roots:
        out += "\n" + indent + "return " + ", ".join(f"%{r.uid}" for r in roots)
    return out
