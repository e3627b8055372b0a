"""Buffer assignment, the last pass: marks each slice write and scatter that can update its
operand's buffer in place (`inplace` attribute; the rules are ir/liveness.py's). Reshapes and
other views already alias their input. A backend that cannot update in place ignores the mark
and copies, and the executor counts those bytes (`explain(...).bytes_copied`)."""
from __future__ import annotations

from ir import Node, make, toposort
from ir.liveness import Storage


def buffer_assignment(roots: list[Node]) -> list[Node]:
    order = toposort(roots)
    inplace, _ = Storage(order, roots).walk_updates(lambda n, can: True)
    new: dict[int, Node] = {}
    for n in order:
        ins = tuple(new[id(i)] for i in n.inputs)
        mark = id(n) in inplace and not n.attr("inplace")
        if mark or any(a is not b for a, b in zip(ins, n.inputs)):
            attrs = n.attrs + (("inplace", True),) if mark else n.attrs
            new[id(n)] = make(n.op, ins, n.shape, n.dtype, attrs)
        else:
            new[id(n)] = n
    return [new[id(r)] for r in roots]
