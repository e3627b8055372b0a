"""Buffer assignment, the last pass: marks each slice write and scatter that can update its
operand's buffer in place (`inplace` attribute), and each elementwise fusion that can write its
result over a param that dies there (`reuse` = the param's index); the rules are
opt/liveness.py's. Reshapes and other views already alias their input. A backend that cannot
update in place ignores the marks and copies, and the executor counts those bytes
(`explain(...).bytes_copied`)."""
from __future__ import annotations

from tracer.ir import Node, make
from .liveness import Storage
from .rewrite import order_of


def buffer_assignment(roots: list[Node]) -> list[Node]:
    """Buffer assignment. O(n) plus an O(body) walk per fusion (is it elementwise)."""
    order = order_of(roots)
    reuse: dict[int, int] = {}

    def take(n: Node, k: int) -> bool:
        reuse[id(n)] = k
        return True

    inplace, _ = Storage(order, roots).walk_updates(lambda n: True, take)
    new: dict[int, Node] = {}
    for n in order:
        ins = tuple(new[id(i)] for i in n.inputs)
        attrs = n.attrs
        if id(n) in inplace and not n.attr("inplace"):
            attrs += (("inplace", True),)
        if id(n) in reuse and n.attr("reuse") is None:
            attrs += (("reuse", reuse[id(n)]),)
        if attrs is not n.attrs or any(a is not b for a, b in zip(ins, n.inputs)):
            new[id(n)] = make(n.op, ins, n.shape, n.dtype, attrs)
        else:
            new[id(n)] = n
    return [new[id(r)] for r in roots]
