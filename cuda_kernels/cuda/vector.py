"""Vector loads and stores for flat loop kernels (issue 21 item 5).

numba-cuda gives LLVM no alignment for array data and has no vector load of array elements,
so a flat kernel reads one element per thread per iteration. A flat loop kernel (every param
and output the output's shape, one 1-D index) also gets a vector variant (`name + VEC`, in both
index variants) in which each thread moves `lanes` consecutive elements of every array with
one `ld.global.v{2,4}` / `st.global.v{2,4}` each (16 bytes for the widest dtype), then the
last `size % lanes` elements go one a thread. The launch takes it only where every array is
1-D contiguous and its data is aligned to its vector's bytes (`vector_ok`); an offset view,
say, keeps the scalar kernel.
"""
from __future__ import annotations

import numpy as np

from tracer.ir.node import toposort
from tracer.ir.registry import Kind, fusion_outputs, is_kind
from .memory import interface
from .sim import sim_vector

VEC = "_v"
MAX_LANES = 4  # a body is written out once per lane: more would bloat the kernel
# bool is stored as a byte; complex and float16 have no device kernel
VEC_DTYPES = {np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                    "uint32", "uint64", "float32", "float64")}


def lanes(dtypes) -> int:
    """Elements a thread moves at once: 16 bytes of the widest dtype, at most MAX_LANES;
    1 (no vector variant) where a dtype has no vector form."""
    dts = [np.dtype(d) for d in dtypes]
    if not dts or any(d not in VEC_DTYPES for d in dts):
        return 1
    return min(MAX_LANES, 16 // max(d.itemsize for d in dts))


def vector_body(body) -> bool:
    """Whether a 1-D loop body reads every param at the output's index only: elementwise ops
    over params and outputs of one shape, constants broadcast (planning.is_flat, which also
    refuses the constants)."""
    shape = fusion_outputs(body)[0].shape
    for n in toposort([body]):
        if n.op == "broadcast_to":
            if n.inputs[0].op != "const":
                return False
        elif n.op in ("param", "tuple"):
            if n.op == "param" and n.shape != shape:
                return False
        elif n.op != "const" and not is_kind(n, Kind.ELEMENTWISE):
            return False
    return all(o.shape == shape for o in fusion_outputs(body))


def vector_ok(arrays, w: int) -> bool:
    """Whether a vector launch may read and write these (1-D) device arrays: contiguous, data
    aligned to w elements' bytes (the vector's own alignment, `align` in the loads)."""
    for a in arrays:
        if a.ndim != 1 or (a.size > 1 and a.strides[0] != a.dtype.itemsize):
            return False
        if interface(a, None)["data"][0] % (w * a.dtype.itemsize):
            return False
    return True


def gen_vector(em, name: str, args: list[str], index_types, w: int) -> str:
    """The vector variant of a flat loop kernel (see the module doc), one function per index
    type (suffix, U): its body is the scalar one's, emitted once per lane with the params read
    from the vector loads (each lane's loads pre-set in the emitter's memo)."""
    outs = em.out_names
    memo: dict = {}
    lines: list[str] = []
    for p in em.params:
        lines.append(f"{', '.join(f'{em.pname(p)}_{k}' for k in range(w))} = "
                     f"_vld{w}({em.pname(p)}, b)")
        for k in range(w):
            memo[(id(p), (f"lane{k}",))] = f"{em.pname(p)}_{k}"
    vals = [[em.emit(o, (f"lane{k}",), lines, memo) for k in range(w)] for o in em.outputs]
    lines += [f"_vst{w}({out}, b, ({', '.join(v)}))" for out, v in zip(outs, vals)]
    tail: list[str] = []
    tail_memo: dict = {}
    tail_vals = [em.emit(o, ("i0",), tail, tail_memo) for o in em.outputs]
    tail += [f"{em.sub(out, ('i0',))} = {v}" for out, v in zip(outs, tail_vals)]

    def make(U: str) -> list[str]:
        L = [f"    nv = {U}({U}(n0) // {w})", f"    q = {U}(cuda.grid(1))",
             f"    step = {U}(cuda.gridsize(1))", "    while q < nv:",
             f"        b = {U}(q * {w})"]
        L += ["        " + s for s in lines]
        L += [f"        q = {U}(q + step)",
              # the last n0 % w elements: one each for the grid's first threads
              f"    i0 = {U}(nv * {w} + {U}(cuda.grid(1)))", f"    if i0 < {U}(n0):"]
        L += ["        " + s for s in tail]
        return L
    return "\n\n\n".join("\n".join(["@_jit", f"def {name}{VEC}{suffix}({', '.join(args)}):"] +
                                    make(U)) for suffix, U in index_types)


# ---------------------------------------------------------------------------- intrinsics

def _vector_intrinsics(w: int):
    """(_vld, _vst) for w lanes: a[b:b + w] as one `load <w x T>, align w * sizeof(T)` from
    the global address space (ld.global.v{w}), and its store; b is an element index (no
    wrap-around, no bounds check: the kernel keeps b + w <= size)."""
    from llvmlite import ir
    from numba import types
    from numba.cuda import cgutils
    from numba.cuda.extending import intrinsic

    def vec_ptr(context, builder, aryty, ary, idx, idxty):
        arr = context.make_array(aryty)(context, builder, value=ary)
        i = context.cast(builder, idx, idxty, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, arr, [i], wraparound=False)
        elem = context.get_data_type(aryty.dtype)
        g = builder.addrspacecast(ptr, elem.as_pointer(1))  # global memory: ld.global
        vp = builder.bitcast(g, ir.VectorType(elem, w).as_pointer(1))
        return vp, context.get_abi_sizeof(elem)

    @intrinsic
    def vld(typingctx, a, b):
        if not isinstance(a, types.Array) or a.ndim != 1 or not isinstance(b, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            vp, size = vec_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            v = builder.load(vp, align=w * size)
            model = context.data_model_manager[a.dtype]
            elems = [model.from_data(builder, builder.extract_element(v, ir.Constant(
                ir.IntType(32), k))) for k in range(w)]
            return context.make_tuple(builder, sig.return_type, elems)
        return types.UniTuple(a.dtype, w)(a, b), codegen

    @intrinsic
    def vst(typingctx, a, b, vals):
        if not isinstance(a, types.Array) or a.ndim != 1 or \
                not isinstance(vals, types.BaseTuple) or len(vals) != w:
            return None

        def codegen(context, builder, sig, args):
            vp, size = vec_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1])
            model = context.data_model_manager[a.dtype]
            elem = context.get_data_type(a.dtype)
            v = ir.Constant(ir.VectorType(elem, w), None)
            for k, t in enumerate(sig.args[2]):
                x = builder.extract_value(args[2], k)
                x = model.as_data(builder, context.cast(builder, x, t, a.dtype))
                v = builder.insert_element(v, x, ir.Constant(ir.IntType(32), k))
            builder.store(v, vp, align=w * size)
            return context.get_dummy_value()
        return types.none(a, b, vals), codegen
    return vld, vst


def vector_globals(sim: bool) -> dict:
    """The names generated modules call for vector loads and stores (`_vld2`, `_vst4`, ...):
    the intrinsics, or the simulator's stand-ins (cuda/sim.py)."""
    out = {}
    for w in (2, 4):
        if sim:
            out[f"_vld{w}"], out[f"_vst{w}"] = sim_vector(w)
        else:
            if w not in _INTRINSICS:
                _INTRINSICS[w] = _vector_intrinsics(w)
            out[f"_vld{w}"], out[f"_vst{w}"] = _INTRINSICS[w]
    return out


_INTRINSICS: dict[int, tuple] = {}  # (made once: numba types an intrinsic per object)
