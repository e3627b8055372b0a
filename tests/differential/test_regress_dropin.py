"""Issue 17, items 1, 19a, 20, 21: array construction and data tracer does not compute behave as
NumPy's (copy= semantics, the ndarray constructor, ndarray subclasses, strings, objects,
Decimal, structured and record arrays)."""
from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy
import pytest

import tracer
import tracer.numpy as np
from tracer.ir.config import context
from regress import modes, quiet  # noqa: F401  (quiet: an autouse fixture)



def outcome(fn, m):
    """fn(m)'s value as a NumPy array or its exception (type and message)."""
    try:
        r = fn(m)
    except Exception as e:  # noqa: BLE001  (the exception is the result compared)
        return type(e), str(e)
    if isinstance(r, tracer.ndarray):
        r = numpy.asarray(r)
    return (type(r).__name__, r.dtype, r.shape, repr(r)) if isinstance(r, numpy.ndarray) else r


def same(fn):
    want, got = outcome(fn, numpy), outcome(fn, np)
    assert got == want


# ------------------------------------------------------------------ item 1: copy=

@modes()
@pytest.mark.parametrize("make", ["array", "asarray", "asanyarray"])
def test_copy_true_never_aliases_the_input(mode, make):
    with context(**mode):
        x = np.arange(3.0)
        c = getattr(np, make)(x, copy=True)
        c += 1
        assert numpy.asarray(x).tolist() == [0.0, 1.0, 2.0]
        assert numpy.asarray(c).tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("make", ["array", "asarray", "asanyarray"])
@pytest.mark.parametrize("copy", [True, False, None])
def test_copy_false_and_none_alias_a_lazy_input_like_numpy(make, copy):
    for m in (numpy, np):
        x = m.arange(3.0)
        c = getattr(m, make)(x, copy=copy)
        c[0] = 7
        aliased = numpy.asarray(x)[0] == 7
        if m is numpy:
            want = aliased
        else:
            assert aliased == want and (c is x) == want


@pytest.mark.parametrize("make", ["array", "asarray", "asanyarray"])
@pytest.mark.parametrize("copy", [True, False, None])
@pytest.mark.parametrize("src", ["lazy", "numpy", "list", "strings"])
@pytest.mark.parametrize("dtype", [None, "float32", "float64"])
def test_copy_paths_give_numpys_values_and_errors(make, copy, src, dtype):
    def fn(m):
        data = {"lazy": lambda: m.arange(3.0), "numpy": lambda: numpy.arange(3.0),
                "list": lambda: [0.0, 1.0, 2.0], "strings": lambda: numpy.array(["a", "b"])}[src]
        if src == "strings" and dtype is not None:
            return None
        return getattr(m, make)(data(), dtype=dtype, copy=copy)
    same(fn)


def test_copy_false_needing_a_copy_raises_numpys_valueerror():
    x = np.arange(6.0).reshape(2, 3)
    for fn in (lambda m, x: m.asarray(x, dtype=m.int64, copy=False),
               lambda m, x: m.array(x.T, order="C", copy=False),
               lambda m, x: m.asarray(x[:, ::2], order="F", copy=False),
               lambda m, x: m.asarray([1, 2], copy=False)):
        with pytest.raises(ValueError) as want:
            fn(numpy, numpy.arange(6.0).reshape(2, 3))
        with pytest.raises(ValueError) as got:
            fn(np, x)
        assert str(got.value) == str(want.value)


def test_copy_false_of_a_numpy_array_shares_its_memory():
    h = numpy.arange(3.0)
    c = np.asarray(h, copy=False)
    c[0] = 5
    assert h[0] == 5


def test_copy_none_converts_only_when_needed():
    x = np.arange(6.0).reshape(2, 3)
    assert np.asarray(x) is x and np.asarray(x, dtype=float) is x
    assert np.ascontiguousarray(x) is x
    t = np.ascontiguousarray(x.T)
    assert t.flags.c_contiguous and numpy.array_equal(t, numpy.arange(6.0).reshape(2, 3).T)
    y = np.asarray(x, dtype=np.float32)
    y += 1
    assert numpy.asarray(x)[0, 0] == 0 and y.dtype == numpy.float32


def test_asarray_of_a_reduction_result_is_a_0d_array():
    same(lambda m: repr(m.asarray(m.arange(3.0).sum())))
    same(lambda m: repr(m.array(m.arange(3.0).sum(), copy=False)))


def test_ascontiguousarray_makes_at_least_1d():
    same(lambda m: m.ascontiguousarray(5.0))
    same(lambda m: m.ascontiguousarray([1, 2], dtype=m.float32))


# ------------------------------------------------------------------ item 19a: the constructor

def test_ndarray_constructor_takes_numpys_arguments():
    a = np.ndarray((2, 3), dtype=np.float32)
    assert isinstance(a, tracer.ndarray) and a.shape == (2, 3) and a.dtype == numpy.float32
    assert np.ndarray(4).dtype == numpy.float64
    buf = bytearray(b"\x01\x02\x03")
    same(lambda m: m.ndarray((2,), dtype=m.int8, buffer=buf, offset=1))
    same(lambda m: m.ndarray((2,), dtype="U3").shape)
    same(lambda m: m.ndarray((-1,)))


def test_ndarray_constructor_over_a_buffer_shares_its_memory():
    h = numpy.zeros(3)
    a = np.ndarray((3,), dtype=float, buffer=h)
    a[1] = 4
    assert h[1] == 4


def test_isinstance_ndarray_holds_for_lazy_and_numpy_arrays():
    lazy, strings = np.arange(3), np.array(["a", "b"])
    assert isinstance(lazy, np.ndarray) and isinstance(strings, np.ndarray)
    assert isinstance(numpy.zeros(2), np.ndarray) and not isinstance(3.0, np.ndarray)
    assert issubclass(tracer.ndarray, np.ndarray) and issubclass(numpy.ndarray, np.ndarray)
    assert np.ndarray.sum(lazy) == 3 and np.ndarray.tolist(lazy) == [0, 1, 2]
    assert np.ndarray[int, numpy.dtype[numpy.float64]].__args__ == (int,
                                                                    numpy.dtype[numpy.float64])


# ------------------------------------------------------------------ item 20: subclasses

def _info_array(m):
    """NumPy's subclassing docs: the simple InfoArray and the one built by ndarray.__new__."""
    class InfoArray(m.ndarray):
        def __new__(cls, input_array, info=None):
            obj = m.asarray(input_array).view(cls)
            obj.info = info
            return obj

        def __array_finalize__(self, obj):
            if obj is None:
                return
            self.info = getattr(obj, "info", None)

    class RealisticInfoArray(m.ndarray):
        def __new__(subtype, shape, dtype=float, buffer=None, offset=0, strides=None,
                    order=None, info=None):
            obj = super().__new__(subtype, shape, dtype, buffer, offset, strides, order)
            obj.info = info
            return obj

        def __array_finalize__(self, obj):
            if obj is None:
                return
            self.info = getattr(obj, "info", None)
    return InfoArray, RealisticInfoArray


@pytest.mark.parametrize("which", [0, 1])
def test_ndarray_subclass_keeps_its_type_and_attribute_as_in_numpy(which):
    def fn(m):
        cls = _info_array(m)[which]
        a = cls([1.0, 2.0, 3.0], info="x") if which == 0 else cls((3,), info="x")
        a[:] = [1.0, 2.0, 3.0]
        results = [a, a[1:], m.add(a, 1), a * 2, m.sqrt(a), m.sum(a), m.asanyarray(a),
                   m.arange(3.0) + a, a - m.arange(3.0), m.multiply(m.arange(3.0), a)]
        return [(type(r).__name__, getattr(r, "info", None), numpy.asarray(r).tolist(),
                 isinstance(r, m.ndarray)) for r in results]
    same(fn)


def test_asarray_of_a_subclass_is_a_plain_array():
    same(lambda m: type(m.asarray(_info_array(m)[0]([1, 2], info="x"))).__name__ == "InfoArray")
    same(lambda m: m.asarray(numpy.ma.masked_array([1, 2], mask=[0, 1])))
    same(lambda m: type(m.asanyarray(numpy.ma.masked_array([1, 2]))).__name__)
    same(lambda m: type(m.array(numpy.ma.masked_array([1, 2], mask=[0, 1]), subok=True)).__name__)


def _ufunc_array(m):
    """NumPy's subclassing docs: __array_ufunc__ runs NumPy on plain views of its inputs."""
    class A(m.ndarray):
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            args = [i.view(m.ndarray) if isinstance(i, A) else i for i in inputs]
            results = super().__array_ufunc__(ufunc, method, *args, **kwargs)
            if results is NotImplemented:
                return NotImplemented
            out = m.asarray(results).view(A)
            out.info = ufunc.__name__
            return out
    return A


def test_subclass_array_ufunc_takes_plain_views_as_in_numpy():
    def fn(m):
        a = m.arange(3.0).view(_ufunc_array(m))
        return [(type(r).__name__, r.info, numpy.asarray(r).tolist())
                for r in (m.add(a, 1), a * 2, m.sqrt(a))]
    same(fn)
    same(lambda m: repr(numpy.arange(3).view(_ufunc_array(m)).view(m.ndarray)))


def test_view_as_ndarray_of_a_lazy_array_is_a_view():
    x = np.arange(3.0)
    v = x.view(np.ndarray)
    v[0] = 9
    assert isinstance(v, tracer.ndarray) and numpy.asarray(x).tolist() == [9.0, 1.0, 2.0]


def test_view_of_a_lazy_array_as_a_subclass():
    same(lambda m: type(m.arange(3).view(_info_array(m)[0])).__name__)
    same(lambda m: type(m.arange(3).view(numpy.recarray)).__name__)


# ------------------------------------------------------------------ item 21: foreign data

PEOPLE = {"names": ("name", "age"), "formats": ("U10", "i4")}


def test_structured_arrays_run_as_numpy():
    def fn(m):
        data = m.zeros(4, dtype=PEOPLE)
        data["age"] = [10, 20, 30, 40]
        data[1] = ("bob", 25)
        return [str(data), repr(data["age"]), repr(data[data["age"] > 20]),
                repr(m.ones_like(data)), repr(m.empty(2, [("a", "i4"), ("b", "f8")])["b"])]
    same(fn)


def test_record_arrays_run_as_numpy():
    same(lambda m: repr(m.zeros(2, dtype=[("a", "i4"), ("b", "f8")]).view(m.recarray).b))
    same(lambda m: repr(m.rec.fromarrays([m.array([1, 2]), m.array([3.0, 4.0])], names="a,b")))


def test_decimal_and_fraction_make_object_arrays():
    same(lambda m: Decimal("1.5") * m.array([1, 2]))
    same(lambda m: m.array([1, 2]) * Decimal("1.5"))
    same(lambda m: m.multiply(Decimal("1.5"), m.array([1, 2])))
    same(lambda m: Fraction(1, 2) + m.array([1, 2]))
    same(lambda m: m.array([Decimal(1)]))
    same(lambda m: m.mean(m.array([Decimal(1), Decimal(2)])))
    same(lambda m: m.sum([Decimal(1), Decimal(2)]))
    same(lambda m: m.full(2, Decimal(1)))


def test_in_place_operator_with_an_object_operand():
    def iadd(m, dtype):
        a = m.array([1, 2], dtype=dtype)
        a += Decimal(1)
        return a
    same(lambda m: iadd(m, float))
    same(lambda m: iadd(m, object))


def test_object_arrays_run_as_numpy():
    same(lambda m: m.array([1, "a"], dtype=object))
    same(lambda m: m.array([1, "a"], dtype=object) * 2)
    same(lambda m: m.array([1, 2]) * numpy.array([Decimal(1), 2], dtype=object))
    same(lambda m: numpy.array([Decimal(1), 2], dtype=object) * m.array([1, 2]))
    same(lambda m: m.full(2, None))
    same(lambda m: m.ones(2, dtype=object))
    same(lambda m: m.arange(3, dtype=object))


def test_string_arrays_compute_print_and_index_as_numpy():
    s = ["b", "a", "c"]
    same(lambda m: m.array(s) + m.array(["x", "y", "z"]))
    same(lambda m: m.add(m.array(s), "x"))
    same(lambda m: str(m.array(s)))
    same(lambda m: m.array(s)[1:])
    same(lambda m: m.sort(m.array(s)))
    same(lambda m: m.unique(s))
    same(lambda m: m.full(2, "ab"))
    same(lambda m: m.zeros(2, "U3"))
    same(lambda m: m.where(m.array([True, False]), "a", "b"))
    same(lambda m: m.array([1.0, 2.0]) + "a")


def test_comparison_with_none_or_a_string_is_elementwise():
    same(lambda m: m.array([1, 2]) == None)  # noqa: E711
    same(lambda m: m.array([1, 2]) != None)  # noqa: E711
    same(lambda m: m.array([1.0, 2.0]) == "a")


def test_dates_run_as_numpy():
    same(lambda m: m.array(["2020-01-01"], dtype="datetime64[D]") + 1)
    same(lambda m: m.arange("2020-01", "2020-03", dtype="datetime64[M]"))
    same(lambda m: m.asarray([1, 2], dtype="m8[s]"))


def test_foreign_data_is_a_counted_fallback_and_numbers_stay_lazy():
    tracer.reset_stats()
    assert isinstance(np.zeros(3) + np.float32(1) + [1, 2, 3], tracer.ndarray)
    assert tracer.stats().fallbacks == 0
    Decimal("1.5") * np.array([1, 2])
    assert tracer.stats().fallbacks == 1


def test_a_reduction_result_meets_objects_as_numpys_scalar_does():
    same(lambda m: Decimal(1) + m.array([1, 2, 3]).sum())
    same(lambda m: m.array([1, 2, 3]).sum() * "ab")
    same(lambda m: m.array([1, 2, 3]).sum() == None)  # noqa: E711
    for m in (numpy, np):
        with pytest.raises(TypeError, match="can only concatenate str"):
            "total: " + m.array([1, 2, 3]).sum()


def test_casting_a_lazy_array_to_strings_or_objects_gives_numpys_array():
    same(lambda m: ", ".join(m.arange(3).astype(str)))
    same(lambda m: m.arange(3.0).astype("U5"))
    same(lambda m: m.arange(3).astype("datetime64[s]"))
    same(lambda m: m.array(m.arange(2), dtype=object))
    same(lambda m: m.asarray(m.arange(2), dtype="U3"))
    same(lambda m: m.asarray(m.arange(2), dtype=object, copy=False))
    assert type(np.arange(3).astype(object)) is numpy.ndarray


def test_writing_objects_that_numpy_converts_into_a_lazy_array():
    def put(m, v):
        x = m.zeros(3)
        x[0] = v
        return x
    for v in (Decimal(1), "5", Fraction(1, 2)):
        same(lambda m: put(m, v))


def test_ufunc_and_function_with_an_object_dtype_run_as_numpy():
    same(lambda m: m.add(m.arange(2), 1, dtype=object))
    same(lambda m: m.true_divide(m.arange(1, 3), 2, dtype=object))
    same(lambda m: m.sum(m.arange(3), dtype=object))
    same(lambda m: m.cumsum(m.arange(3), dtype=object))
    same(lambda m: m.eye(2, dtype=object))
