"""The catalogue of core ops: leaves and params, reductions, movement, contraction, updates,
gather/scatter, fusions and their tuples. Each is one `register` call of the machinery in
`opdef.py`; elementwise ops (ufuncs, cast, where) are in `elementwise_ops.py`, library ops
(sort, cumsum, ...) in `library_ops.py`.

Shape helpers the ops' rules use (`py_slice`, `unit_reshape`, `matrix_shape`, `scatter_key`) live
here with them.
"""
from __future__ import annotations

import math

import numpy as np

from .elementwise_ops import T, typed
from .opdef import (ACC_ARG, ACC_DTYPE, ACC_LOGICAL, ACC_SELECT, ACC_WIDE, TUPLE_DTYPE, Kind,
                    OpDef, Props, register)


# ---------------------------------------------------------------- leaves

def _no_rule(shapes, attrs):
    raise AssertionError("leaf shapes come from their construction")


register(OpDef("input", Kind.LEAF, 0, _no_rule, _no_rule, ref=lambda buf: buf.value))
register(OpDef("const", Kind.LEAF, 0, _no_rule, _no_rule, props=Props(cheap=True),
               ref=lambda value, dtype, neg=False, bits=None:
               np.asarray(-0.0 if neg else value, dtype=dtype),
               template=T("{0}")))
def _param_ref(*_, **__):
    raise AssertionError("param outside a fusion body")


# param: a fusion body's leaf, the fusion's input `index` (the interpreter binds it)
register(OpDef("param", Kind.PARAM, 0, _no_rule, _no_rule, ref=_param_ref,
               props=Props(cheap=True)))


# ---------------------------------------------------------------- reductions

def _same_dtype(dts, attrs):
    return dts[0]


def reduce_shape(shapes, attrs):
    axes = attrs["axes"]
    return tuple(s for i, s in enumerate(shapes[0]) if i not in axes)


def _reduce_ref(ufunc, x, axes):
    # an array even when 0-d: NumPy's scalar result would make a bool view's byte 5 into 1
    return np.squeeze(ufunc.reduce(x, axis=axes, keepdims=True), axis=axes)


def _reduce(name, ufunc, identity, combine, accumulate, better=None,
            props=Props(commutative=True, associative=True)):
    """A reduction: `ufunc.reduce`, starting from `identity`, one step `combine` of (acc, v),
    accumulated by rule `accumulate` (opdef.ACC_*)."""
    register(OpDef(name, Kind.REDUCE, 1, reduce_shape, _same_dtype,
                   ref=lambda x, axes: _reduce_ref(ufunc, x, axes), identity=identity,
                   combine=combine, props=props, ufunc=ufunc, accumulate=accumulate,
                   better=better))


_reduce("reduce_sum", np.add, 0, "({0} + {1})", ACC_WIDE)
_reduce("reduce_prod", np.multiply, 1, "({0} * {1})", ACC_DTYPE)
_reduce("reduce_max", np.maximum, "-inf", "_maximum({0}, {1})", ACC_SELECT, ">")
_reduce("reduce_min", np.minimum, "+inf", "_minimum({0}, {1})", ACC_SELECT, "<")
_reduce("reduce_any", np.logical_or, False, "({0} or {1})", ACC_LOGICAL)
_reduce("reduce_all", np.logical_and, True, "({0} and {1})", ACC_LOGICAL)
_reduce("reduce_logaddexp", np.logaddexp, "-inf", T(typed("_logaddexp", 2)), ACC_DTYPE)


def _argreduce(name, fn, better):
    register(OpDef(name, Kind.REDUCE, 1,
                   lambda s, a: tuple(d for i, d in enumerate(s[0]) if i != a["axes"][0]),
                   lambda d, a: np.dtype(np.intp),
                   ref=lambda x, axes: fn(x, axis=axes[0]), accumulate=ACC_ARG, better=better))


_argreduce("argmax", np.argmax, ">")
_argreduce("argmin", np.argmin, "<")


# ---------------------------------------------------------------- movement (index remaps)

def _bcast_shape(shapes, attrs):
    src, dst = shapes[0], attrs["shape"]
    if len(src) > len(dst) or any(s not in (1, d) for s, d in zip(src[::-1], dst[::-1])):
        raise ValueError(f"cannot broadcast {src} to {dst}")
    return tuple(dst)


def _reshape_shape(shapes, attrs):
    if math.prod(shapes[0]) != math.prod(attrs["shape"]):
        raise ValueError(f"cannot reshape {shapes[0]} to {attrs['shape']}")
    return tuple(attrs["shape"])


def unit_reshape(src: tuple, dst: tuple) -> bool:
    """A reshape that only inserts or drops length-1 axes: an index remap, no data movement."""
    return [d for d in src if d != 1] == [d for d in dst if d != 1]


def slice_len(start: int, stop: int, step: int) -> int:
    return len(range(start, stop, step))


def _slice_shape(shapes, attrs):
    return tuple(slice_len(*s) for s in attrs["slices"])


def py_slice(start: int, stop: int, step: int) -> slice:
    """The Python slice for a `slice.indices` triple. Its stop -1 with a negative step means
    "past element 0", not the last element; an empty triple may even start at -1."""
    if slice_len(start, stop, step) == 0:
        return slice(0, 0, 1)
    return slice(start, stop if stop >= 0 else None, step)


def _slice_ref(x, slices):
    return x[tuple(py_slice(*s) for s in slices)]


register(OpDef("broadcast_to", Kind.MOVEMENT, 1, _bcast_shape, _same_dtype,
               ref=lambda x, shape: np.broadcast_to(x, shape), props=Props(cheap=True, view=True)))
register(OpDef("transpose", Kind.MOVEMENT, 1,
               lambda s, a: tuple(s[0][p] for p in a["perm"]), _same_dtype,
               ref=lambda x, perm: np.transpose(x, perm), props=Props(cheap=True, view=True)))
register(OpDef("reshape", Kind.MOVEMENT, 1, _reshape_shape, _same_dtype,
               ref=lambda x, shape: np.reshape(x, shape), props=Props(cheap=True, view=True)))
register(OpDef("slice", Kind.MOVEMENT, 1, _slice_shape, _same_dtype, ref=_slice_ref,
               props=Props(view=True)))


def _dynamic_slice_ref(x, starts, lengths, steps):
    return x[tuple(py_slice(s, s + n * st, st)
                   for s, n, st in zip(map(int, starts), lengths, steps))]


# dynamic_slice(x, starts): a slice whose starts are a runtime int64[ndim] input, of the given
# lengths and steps. The plan cache lifts the starts of a slice that changes between
# evaluations of one graph into it (tracer/plans.py), so one plan serves every start.
register(OpDef("dynamic_slice", Kind.MOVEMENT, 2, lambda s, a: tuple(a["lengths"]),
               _same_dtype, ref=_dynamic_slice_ref, props=Props(view=True)))


def _bitcast_shape(shapes, attrs):
    """ndarray.view(dtype) of a C-contiguous value: the last axis holds the same bytes."""
    (shape,), dt = shapes, np.dtype(attrs["dtype"])
    src = np.dtype(attrs["src"]).itemsize
    if src == dt.itemsize:
        return tuple(shape)
    return tuple(shape[:-1]) + (shape[-1] * src // dt.itemsize,)


def _bitcast_ref(x, dtype, src):
    # a copy: the executor gives this op's result a buffer of its own
    return np.array(x, order="C").view(np.dtype(dtype))


# attrs: dtype (the new one) and src (the input's, for the shape rule); a library-free
# NumPy call, so it runs in the interpreter between kernels
register(OpDef("bitcast", Kind.OTHER, 1, _bitcast_shape, lambda d, a: np.dtype(a["dtype"]),
               ref=_bitcast_ref))


def _chunk_shape(shapes, attrs):
    ax, (q, m) = attrs["axis"], attrs["split"]
    if q * m < shapes[0][ax]:
        raise ValueError(f"chunk {q}x{m} cannot hold axis {ax} of {shapes[0]}")
    return shapes[0][:ax] + (q, m) + shapes[0][ax + 1:]


def _chunk_ref(x, n, m, axis, split, fill):
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, split[0] * split[1] - x.shape[axis])
    return np.pad(x, pad, constant_values=fill).reshape(
        x.shape[:axis] + tuple(split) + x.shape[axis + 1:])


# chunk(x, n, m): axis `axis` (length n) padded with `fill` to q*m and split into (q, m). The
# lengths n and m are also 0-d int64 inputs, so kernels read them as arguments (sizes are never
# constants in kernel source); the tree-reduction rewriter makes these.
register(OpDef("chunk", Kind.MOVEMENT, 3, _chunk_shape, _same_dtype, ref=_chunk_ref,
               props=Props(cheap=True)))


# ---------------------------------------------------------------- contraction, update, other

# matmul: [.., m, k] @ [.., k, n] with broadcast batch dims. The attributes `ta`/`tb` (present
# only when true) say an operand is stored transposed in its last two axes ([.., k, m] for `ta`):
# the dot decomposer folds transposes into them, and BLAS and the cuda kernel read the operand
# transposed, so no copy is made.

def matrix_shape(shape: tuple, transposed: bool) -> tuple:
    """The [.., rows, cols] an operand stands for (its last two axes swapped when transposed)."""
    return tuple(shape[:-2]) + (shape[-1], shape[-2]) if transposed else tuple(shape)


def _matmul_shape(shapes, attrs):
    a, b = shapes
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"matmul wants [..,m,k] @ [..,k,n], got {a} and {b}")
    a, b = matrix_shape(a, attrs.get("ta", False)), matrix_shape(b, attrs.get("tb", False))
    if a[-1] != b[-2]:
        raise ValueError(f"matmul wants [..,m,k] @ [..,k,n], got {a} and {b}")
    return tuple(np.broadcast_shapes(a[:-2], b[:-2])) + (a[-2], b[-1])


def _matmul_dtype(dts, attrs):
    return np.matmul.resolve_dtypes(tuple(dts) + (None,))[2]


def _matmul_ref(a, b, ta=False, tb=False):
    # swapaxes is a view: np.matmul hands BLAS the transposed layout, no copy
    return np.matmul(np.swapaxes(a, -1, -2) if ta else a, np.swapaxes(b, -1, -2) if tb else b)


register(OpDef("matmul", Kind.CONTRACTION, 2, _matmul_shape, _matmul_dtype, ref=_matmul_ref,
               props=Props(library=True)))


def set_slice(out, value, slices):
    """The slice write into array `out` (the interpreter's update in place)."""
    out[tuple(py_slice(*s) for s in slices)] = value
    return out


def _setslice_ref(base, value, slices, inplace=False, into=False):  # buffer assignment's marks
    return set_slice(np.array(base, copy=True), value, slices)


def _setslice_shape(shapes, attrs):
    want = _slice_shape(shapes[:1], attrs)
    if shapes[1] != want:
        raise ValueError(f"setslice value shape {shapes[1]} != slice shape {want}")
    return shapes[0]


register(OpDef("setslice", Kind.UPDATE, 2, _setslice_shape, _same_dtype, ref=_setslice_ref,
               props=Props(library=True)))


def _concat_shape(shapes, attrs):
    ax = attrs["axis"]
    out = list(shapes[0])
    out[ax] = sum(s[ax] for s in shapes)
    return tuple(out)


register(OpDef("concatenate", Kind.OTHER, -1, _concat_shape, _same_dtype,
               ref=lambda *xs, axis: np.concatenate(xs, axis=axis), props=Props(library=True)))


# gather(x, i0, .., ik-1): NumPy's integer-array indexing of axes `axes` of x by index arrays
# of one (broadcast) shape B; every other axis of x is taken whole (basic indices are views
# applied before). The B axes replace the indexed ones where those are adjacent in the user's
# key, else (`front`) they come first, as NumPy places them. Negative indices count from the
# end; an index out of bounds raises NumPy's IndexError.

def _gather_shape(shapes, attrs):
    x, idx = shapes[0], shapes[1:]
    axes, front = attrs["axes"], attrs["front"]
    b = tuple(np.broadcast_shapes(*idx)) if idx else ()
    if any(i != b for i in idx) or len(idx) != len(axes) or not axes:
        raise ValueError(f"gather wants index arrays of one shape for axes {axes}, got {idx}")
    if not front and list(axes) != list(range(axes[0], axes[0] + len(axes))):
        raise ValueError(f"gather: axes {axes} are not adjacent")
    rest = tuple(d for k, d in enumerate(x) if k not in axes)
    if front:
        return b + rest
    return x[:axes[0]] + b + x[axes[-1] + 1:]


def _gather_ref(x, *idx, axes, front):
    key = [slice(None)] * x.ndim
    for d, i in zip(axes, idx):
        key[d] = i
    out = x[tuple(key)]
    nb = idx[0].ndim
    if front and axes[0] > 0 and list(axes) == list(range(axes[0], axes[0] + len(axes))):
        out = np.moveaxis(out, list(range(axes[0], axes[0] + nb)), list(range(nb)))
    return out


register(OpDef("gather", Kind.GATHER, -1, _gather_shape, _same_dtype, ref=_gather_ref,
               props=Props(library=True)))


# scatter(x, i0, .., ik-1, v): x with the elements that gather(x, i0, ..) reads replaced by v
# (mode "set": NumPy's `x[key] = v`, the last of duplicate indices wins), or combined with them
# by a ufunc (mode "add", "multiply", ...: NumPy's `ufunc.at`, duplicates accumulate). v has the
# gather's shape and keeps its own dtype: NumPy casts it as it does for these calls.

def _scatter_shape(shapes, attrs):
    if _gather_shape(shapes[:-1], attrs) != tuple(shapes[-1]):
        raise ValueError(f"scatter value shape {shapes[-1]} differs from the indexed shape")
    return shapes[0]


def scatter_key(ndim: int, idx, v, axes, front):
    """(NumPy key, value laid out for it) of a scatter: NumPy itself puts B first only for
    non-adjacent axes, so a `front` scatter of adjacent axes moves v's B axes in place."""
    key = [slice(None)] * ndim
    for d, i in zip(axes, idx):
        key[d] = i
    nb = idx[0].ndim
    if front and axes[0] > 0 and list(axes) == list(range(axes[0], axes[0] + len(axes))):
        v = np.moveaxis(v, list(range(nb)), list(range(axes[0], axes[0] + nb)))
    return tuple(key), v


def scatter_into(out, args, axes, front, mode):
    """The scatter written into array `out` (the interpreter's update in place)."""
    *idx, v = args
    key, v = scatter_key(out.ndim, idx, v, axes, front)
    if mode == "set":
        out[key] = v
    else:
        getattr(np, mode).at(out, key, v)
    return out


def _scatter_ref(x, *args, axes, front, mode, inplace=False):
    return scatter_into(np.array(x, copy=True), args, axes, front, mode)


register(OpDef("scatter", Kind.SCATTER, -1, _scatter_shape, _same_dtype, ref=_scatter_ref,
               props=Props(library=True)))


# Multi-output fusions: a fusion whose body is a `tuple` of output values has the tuple type
# (opdef.TUPLE_DTYPE: no shape, zero bytes); each result is read through an `output` node
# (attr `index`).

def _output_rule(*_):
    raise AssertionError("an output's type is its fusion body's tuple element (see ir.verify)")


register(OpDef("tuple", Kind.OTHER, -1, lambda s, a: (), lambda d, a: TUPLE_DTYPE,
               ref=lambda *xs: tuple(xs)))
register(OpDef("output", Kind.OTHER, 1, _output_rule, _output_rule,
               ref=lambda t, index: t[index]))


def _fusion_rule(*_):
    raise AssertionError("a fusion's type is its body's (see ir.verify)")


def _fusion_ref(*_, **__):
    raise AssertionError("the interpreter runs a fusion's body (ir.interp)")


# fusion(inputs...): one kernel; attrs `body` (its graph over `param` nodes, a `tuple` for
# several outputs) and `kind` (loop, reduce, row, horizontal). The optimizer makes these.
register(OpDef("fusion", Kind.FUSION, -1, _fusion_rule, _fusion_rule, ref=_fusion_ref))
