"""tracer.numpy.random against NumPy: seeded scripts draw NumPy's exact numbers in program order
(legacy functions on NumPy's own global stream, RandomState, Generator), as lazy arrays, with
lazy parameters, shuffles and out= written back through views, and NumPy's errors."""
from __future__ import annotations

import pickle
import re
import warnings

import numpy as np
import pytest

import tracer
import tracer.numpy as tnp

A = np.array


@pytest.fixture(autouse=True)
def no_fallbacks():
    """Everything here is tracer's implementation: nothing may warn or count as a fallback."""
    before = tracer.stats().fallbacks
    with warnings.catch_warnings():
        warnings.simplefilter("error", tracer.TracerFallbackWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # random_integers, in both
        yield
    assert tracer.stats().fallbacks == before


def lazy(x):
    """NumPy arrays in an argument list become lazy arrays (computed ones, not just leaves)."""
    if isinstance(x, np.ndarray):
        return tnp.asarray(x) + np.zeros((), x.dtype)
    if isinstance(x, (tuple, list)):
        return type(x)(lazy(i) for i in x)
    if isinstance(x, dict):
        return {k: lazy(v) for k, v in x.items()}
    return x


def same(got, want):
    if isinstance(want, np.ndarray):
        assert isinstance(got, tracer.ndarray), type(got)
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_array_equal(np.asarray(got), want)
    else:  # Python and NumPy scalars, bytes: the same type as NumPy's
        assert type(got) is type(want), (type(got), type(want))
        assert got == want


# (name, args, kwargs) with NumPy arguments; tracer gets lazy copies of the arrays among them
LEGACY = [
    ("rand", (), {}), ("rand", (2, 3), {}), ("randn", (), {}), ("randn", (3,), {}),
    ("random", (), {}), ("random", ((2, 2),), {}), ("random_sample", (3,), {}),
    ("ranf", (3,), {}), ("sample", (), {}), ("tomaxint", (3,), {}),
    ("randint", (5,), {}), ("randint", (-3, 5, 4), {}), ("randint", (5,), {"dtype": np.int32}),
    ("randint", (A([3, 10]),), {"size": (3, 2), "dtype": np.uint8}),
    ("random_integers", (1, 6, 3), {}),
    ("normal", (), {}), ("normal", (A([0., 10.]), A([1., 2.])), {}),
    ("uniform", (-1, 1, (2, 2)), {}), ("standard_normal", (3,), {}),
    ("exponential", (2.0, 3), {}), ("standard_exponential", (3,), {}), ("poisson", (3.0, 4), {}),
    ("binomial", (10, 0.3, 4), {}), ("beta", (2, 3, 3), {}), ("gamma", (2, 1, 3), {}),
    ("standard_gamma", (A([0.5, 2.0]),), {}), ("chisquare", (3, 3), {}),
    ("lognormal", (0, 1, 3), {}), ("laplace", (0, 1, 3), {}), ("logistic", (0, 1, 3), {}),
    ("geometric", (0.3, 3), {}), ("gumbel", (0, 1, 3), {}), ("weibull", (2, 3), {}),
    ("pareto", (2, 3), {}), ("power", (2, 3), {}), ("rayleigh", (1, 3), {}),
    ("triangular", (0, 1, 2, 3), {}), ("vonmises", (0, 1, 3), {}), ("wald", (1, 1, 3), {}),
    ("zipf", (2, 3), {}), ("hypergeometric", (5, 5, 3, 4), {}),
    ("negative_binomial", (3, 0.5, 4), {}), ("noncentral_chisquare", (3, 1, 3), {}),
    ("noncentral_f", (3, 4, 1, 3), {}), ("f", (3, 4, 3), {}), ("standard_t", (3, 3), {}),
    ("standard_cauchy", (3,), {}), ("logseries", (0.5, 3), {}),
    ("multinomial", (10, A([0.2, 0.3, 0.5]), 2), {}),
    ("multivariate_normal", (A([0., 1.]), A([[1., .5], [.5, 2.]]), 2), {}),
    ("dirichlet", (A([1., 2., 3.]), 2), {}),
    ("choice", (5,), {}), ("choice", (5, 3), {}),
    ("choice", (A([1.5, 2.5, 3.5, 4.5]), 2), {"replace": False}),
    ("choice", (4, 3), {"p": A([.1, .2, .3, .4])}), ("choice", (A([1., 2.]),), {}),
    ("permutation", (5,), {}), ("permutation", (A([[1, 2], [3, 4], [5, 6]]),), {}),
    ("bytes", (5,), {}),
]

GENERATOR = [
    ("integers", (5,), {}), ("integers", (0, 10, 3), {}),
    ("integers", (A([3, 10]),), {"size": (2, 2), "dtype": np.int16, "endpoint": True}),
    ("random", (), {}), ("random", (3,), {"dtype": np.float32}),
    ("standard_normal", ((2, 2),), {}), ("standard_normal", (), {"dtype": np.float32}),
    ("normal", (), {}), ("normal", (A([0., 10.]), 2.0), {}),
    ("uniform", (0, A([1., 5.]), (3, 2)), {}),
    ("choice", (5, 3), {}), ("choice", (A([1., 2.]),), {}),
    ("choice", (A([[1, 2], [3, 4], [5, 6]]), 2), {"axis": 0, "replace": False, "shuffle": False}),
    ("choice", (4,), {"size": 3, "p": A([.1, .2, .3, .4])}),
    ("permutation", (5,), {}), ("permutation", (A([[1, 2, 3], [4, 5, 6]]),), {"axis": 1}),
    ("permuted", (A([[1, 2, 3], [4, 5, 6]]),), {"axis": 1}),
    ("exponential", (2.0, 3), {}), ("standard_exponential", (3,), {"method": "inv"}),
    ("standard_gamma", (2.0, 3, np.float32), {}), ("gamma", (2, 1, 3), {}),
    ("beta", (2, 3, 3), {}), ("binomial", (10, A([0.3, 0.7])), {}), ("poisson", (3.0, 4), {}),
    ("chisquare", (3, 3), {}), ("lognormal", (0, 1, 3), {}), ("laplace", (0, 1, 3), {}),
    ("logistic", (0, 1, 3), {}), ("geometric", (0.3, 3), {}), ("gumbel", (0, 1, 3), {}),
    ("weibull", (2, 3), {}), ("pareto", (2, 3), {}), ("power", (2, 3), {}),
    ("rayleigh", (1, 3), {}), ("triangular", (0, 1, 2, 3), {}), ("vonmises", (0, 1, 3), {}),
    ("wald", (1, 1, 3), {}), ("zipf", (2, 3), {}), ("hypergeometric", (5, 5, 3, 4), {}),
    ("negative_binomial", (3, 0.5, 4), {}), ("noncentral_chisquare", (3, 1, 3), {}),
    ("noncentral_f", (3, 4, 1, 3), {}), ("f", (3, 4, 3), {}), ("standard_t", (3, 3), {}),
    ("standard_cauchy", (3,), {}), ("logseries", (0.5, 3), {}),
    ("multinomial", (10, A([[0.2, 0.8], [0.5, 0.5]])), {}),
    ("multivariate_hypergeometric", (A([3, 2, 1]), 3, 2), {}),
    ("multivariate_normal", (A([0., 1.]), A([[1., .5], [.5, 2.]]), 2), {}),
    ("dirichlet", (A([1., 2., 3.]), 2), {}), ("bytes", (5,), {}),
]


def params(table, keep=lambda name: True):
    return [pytest.param(n, a, k, id=f"{n}-{i}") for i, (n, a, k) in enumerate(table) if keep(n)]


def test_tables_cover_every_public_method():
    """Each public method of NumPy's RandomState and Generator is in a table or tested below."""
    below = {"seed", "get_state", "set_state", "shuffle", "spawn", "bit_generator"}
    legacy = {n for n, _, _ in LEGACY} | below
    assert {n for n in dir(np.random.RandomState) if not n.startswith("_")} <= legacy
    assert {n for n in dir(np.random.Generator) if not n.startswith("_")} <= \
        {n for n, _, _ in GENERATOR} | below
    for name in legacy - {"tomaxint", "spawn", "bit_generator"}:  # tracer's, not the fallback
        assert name in vars(tnp.random), name


@pytest.mark.parametrize("name,args,kwargs", params(LEGACY, lambda n: hasattr(np.random, n)))
def test_legacy_functions_share_numpys_global_stream(name, args, kwargs):
    np.random.seed(7)
    want = [getattr(np.random, name)(*args, **kwargs) for _ in range(3)]
    np.random.seed(7)
    got = getattr(tnp.random, name)(*lazy(args), **lazy(kwargs))
    after = getattr(np.random, name)(*args, **kwargs)  # NumPy's own call continues the stream
    again = getattr(tnp.random, name)(*lazy(args), **lazy(kwargs))
    same(got, want[0])
    np.testing.assert_array_equal(after, want[1])
    same(again, want[2])


@pytest.mark.parametrize("name,args,kwargs",
                         params(LEGACY, lambda n: hasattr(np.random.RandomState, n)))
def test_random_state_methods(name, args, kwargs):
    want, r = np.random.RandomState(11), tnp.random.RandomState(11)
    for _ in range(2):
        same(getattr(r, name)(*lazy(args), **lazy(kwargs)), getattr(want, name)(*args, **kwargs))


@pytest.mark.parametrize("name,args,kwargs", params(GENERATOR))
def test_generator_methods(name, args, kwargs):
    want, g = np.random.default_rng(11), tnp.random.default_rng(11)
    for _ in range(2):
        same(getattr(g, name)(*lazy(args), **lazy(kwargs)), getattr(want, name)(*args, **kwargs))


def test_stream_in_program_order_with_lazy_arithmetic():
    np.random.seed(3)
    x = np.random.rand(5)
    y = x * 2
    z = np.random.randn(3)
    w = y[:3] + z
    v = np.random.randint(0, 10, 4)
    tnp.random.seed(3)
    tx = tnp.random.rand(5)
    ty = tx * 2
    tz = tnp.random.randn(3)
    tw = ty[:3] + tz
    float(tw.sum())  # an evaluation between draws draws nothing
    tv = tnp.random.randint(0, 10, 4)
    for got, want in [(tx, x), (ty, y), (tz, z), (tw, w), (tv, v)]:
        same(got, want)


def test_lazy_parameters_are_evaluated_first():
    loc = tnp.arange(3.0) * 10
    p = tnp.asarray([1.0, 2.0, 1.0]) / 4
    np.random.seed(1)
    want = [np.random.normal(np.arange(3.0) * 10, 2.0), np.random.choice(3, 4, p=[.25, .5, .25]),
            np.random.choice(np.arange(3.0) * 10, 2)]
    tnp.random.seed(1)
    got = [tnp.random.normal(loc=loc, scale=tnp.asarray(2.0)), tnp.random.choice(3, 4, p=p),
           tnp.random.choice(a=loc, size=2)]
    for g, w in zip(got, want):
        same(g, w)


def test_state_functions():
    tnp.random.seed(tnp.asarray([1, 2, 3]))
    state = tnp.random.get_state()
    np.random.seed([1, 2, 3])
    want = np.random.get_state()
    assert state[0] == want[0] and type(state[1]) is np.ndarray  # NumPy's own state
    np.testing.assert_array_equal(state[1], want[1])
    first = tnp.random.rand(2)
    np.random.set_state(want)  # NumPy's set_state takes tracer's state, and back
    same(first, np.random.rand(2))
    tnp.random.set_state(state)
    same(tnp.random.rand(2), np.asarray(first))
    assert tnp.random.get_state(legacy=False)["state"]["pos"] == np.random.get_state()[2]
    assert tnp.random.get_bit_generator() is np.random.get_bit_generator()


@pytest.mark.parametrize("bits", ["PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"])
def test_generator_on_each_bit_generator(bits):
    assert getattr(tnp.random, bits) is getattr(np.random, bits)
    g = tnp.random.Generator(getattr(tnp.random, bits)(5))
    same(g.random(3), np.random.Generator(getattr(np.random, bits)(5)).random(3))
    assert str(g) == f"Generator({bits})" and repr(g).startswith(f"Generator({bits}) at 0x")


def test_generator_objects():
    g = tnp.random.default_rng(4)
    assert tnp.random.default_rng(g) is g
    assert type(g.bit_generator) is np.random.PCG64
    seeded = tnp.random.default_rng(tnp.random.SeedSequence(4))
    same(seeded.random(), np.random.default_rng(4).random())
    kids, want = g.spawn(2), np.random.default_rng(4).spawn(2)
    assert all(type(k) is tnp.random.Generator for k in kids)
    for k, w in zip(kids, want):
        same(k.random(2), w.random(2))
    host = np.random.default_rng(9)  # wrapped, not copied: one stream
    shared = tnp.random.default_rng(host)
    seq = [shared.random(), host.random(), shared.random()]
    want = np.random.default_rng(9).random(3)
    assert seq == list(want)
    r = tnp.random.RandomState(tnp.random.MT19937(2))
    same(r.rand(2), np.random.RandomState(np.random.MT19937(2)).rand(2))
    r2 = pickle.loads(pickle.dumps(r))  # the copy continues the same stream
    assert type(r2) is tnp.random.RandomState
    same(r2.rand(2), np.asarray(r.rand(2)))
    g2 = pickle.loads(pickle.dumps(g))
    same(g2.integers(9, size=3), np.asarray(g.integers(9, size=3)))


def _shufflers(mod):
    return {
        "global": lambda x: mod.random.shuffle(x),
        "RandomState": lambda x: mod.random.RandomState(5).shuffle(x),
        "keyword": lambda x: mod.random.RandomState(5).shuffle(x=x),
        "Generator": lambda x: mod.random.default_rng(5).shuffle(x),
        "Generator-axis": lambda x: mod.random.default_rng(5).shuffle(x, axis=x.ndim - 1),
        "permuted-out": lambda x: mod.random.default_rng(5).permuted(x, axis=0, out=x),
    }


VIEWS = {"whole": lambda b: b, "row": lambda b: b[1], "column": lambda b: b[:, 1],
         "transposed": lambda b: b.T, "strided": lambda b: b[::2]}


@pytest.mark.parametrize("how", list(_shufflers(np)))
@pytest.mark.parametrize("view", list(VIEWS))
def test_shuffle_writes_through_views(how, view):
    out = {}
    for mod in (np, tnp):
        mod.random.seed(2)
        base = mod.arange(12).reshape(4, 3) * 3
        x = VIEWS[view](base)
        _shufflers(mod)[how](x)
        out[mod] = (base, x, mod.random.rand())  # the global stream went on as NumPy's
    for got, want in zip(out[tnp], out[np]):
        same(got, want)


def test_shuffle_host_arrays_and_errors():
    a, b = np.arange(6), np.arange(6)
    np.random.seed(0)
    np.random.shuffle(a)
    tnp.random.seed(0)
    tnp.random.shuffle(b)  # a NumPy array is shuffled in place, as NumPy does
    np.testing.assert_array_equal(a, b)
    lst, want = list(range(6)), [tnp.asarray(i) for i in range(6)]  # lazy items move as objects
    np.random.seed(0)
    np.random.shuffle(lst)
    first = np.random.rand()
    tnp.random.seed(0)
    tnp.random.shuffle(want)
    assert lst == [int(i) for i in want]
    with pytest.raises(ValueError, match="^array is read-only$"):
        tnp.random.shuffle(tnp.broadcast_to(tnp.arange(3), (2, 3)))
    with pytest.raises(TypeError, match="^len\\(\\) of unsized object$"):
        tnp.random.shuffle(tnp.asarray(5))
    assert tnp.random.rand() == first  # the failures drew nothing


@pytest.mark.parametrize("name,args", [("random", ()), ("standard_normal", ()),
                                       ("standard_exponential", ()), ("standard_gamma", (2.0,))])
def test_generator_out(name, args):
    want_base = np.zeros((2, 3))
    want = getattr(np.random.default_rng(6), name)(*args, out=want_base[1])
    base = tnp.zeros((2, 3))
    row = base[1]
    got = getattr(tnp.random.default_rng(6), name)(*args, out=row)
    assert got is row
    same(base, want_base)
    same(got, want)
    whole = tnp.zeros(3)
    g = tnp.random.default_rng(6)
    if name == "random":  # out= passed by position
        assert g.random(None, np.float64, whole) is whole
    else:
        getattr(g, name)(*args, None, np.float64, out=whole)
    same(whole, want_base[1])
    host = np.zeros(3)
    assert getattr(tnp.random.default_rng(6), name)(*args, out=host) is host
    np.testing.assert_array_equal(host, want_base[1])


def test_permuted_out():
    x = np.arange(12.).reshape(3, 4)
    want = np.zeros((2, 3, 4))
    np.random.default_rng(1).permuted(x, axis=1, out=want[1])
    base = tnp.zeros((2, 3, 4))
    row = base[1]
    assert tnp.random.default_rng(1).permuted(tnp.arange(12.).reshape(3, 4), axis=1, out=row) is row
    same(base, want)
    col = np.zeros((3, 2))  # a non-contiguous out= is fine for permuted
    np.random.default_rng(1).permuted(np.arange(3.), out=col[:, 1])
    tcol = tnp.zeros((3, 2))
    tnp.random.default_rng(1).permuted(tnp.arange(3.), out=tcol[:, 1])
    same(tcol, col)
    host = np.zeros(3)  # a NumPy out= is filled and returned, as NumPy does
    assert tnp.random.default_rng(1).permuted(tnp.arange(3.), out=host) is host
    np.testing.assert_array_equal(host, col[:, 1])


def _seeded(where, mod):
    if where == "global":
        mod.random.seed(0)
        return mod.random
    if where == "RandomState":
        return mod.random.RandomState(0)
    return mod.random.default_rng(0)


ERRORS = [
    ("global", "normal", (0, -1), {}), ("global", "normal", (0, A([1., -1.])), {}),
    ("global", "randint", (5, 2), {}), ("global", "choice", (5, 6), {"replace": False}),
    ("global", "choice", (3,), {"p": A([.5, .6, .1])}), ("global", "uniform", (0, 1, -1), {}),
    ("global", "multinomial", (5, A([[.5, .5]])), {}), ("RandomState", "rand", (-1,), {}),
    ("RandomState", "beta", (A([-1.]), 1), {}), ("Generator", "integers", (5, 2), {}),
    ("Generator", "normal", (0, A([1., -1.])), {}), ("Generator", "choice", (A([]), 1), {}),
    ("Generator", "permuted", (A(5),), {"axis": 1}),
    # out= arrays are made by each module: tracer's are lazy, laid out as NumPy's
    ("Generator", "random", (), {"out": lambda m: m.zeros((3, 2))[:, 0]}),  # not contiguous
    ("Generator", "random", (), {"out": lambda m: m.broadcast_to(m.zeros(1), (3,))}),
    ("Generator", "random", (3,), {"out": lambda m: m.zeros(3, np.float32)}),
    ("Generator", "standard_normal", (4,), {"out": lambda m: m.zeros(3)}),
]


@pytest.mark.parametrize("where,name,args,kwargs",
                         [pytest.param(*e, id=f"{e[0]}-{e[1]}-{i}") for i, e in enumerate(ERRORS)])
def test_numpys_errors(where, name, args, kwargs):
    want = _seeded(where, np)
    with pytest.raises(Exception) as expected:
        getattr(want, name)(*args, **{k: v(np) if callable(v) else v for k, v in kwargs.items()})
    after = want.random()
    got = _seeded(where, tnp)
    kwargs = {k: v(tnp) if callable(v) else lazy(v) for k, v in kwargs.items()}
    with pytest.raises(type(expected.value), match=f"^{re.escape(str(expected.value))}$"):
        getattr(got, name)(*lazy(args), **kwargs)
    assert got.random() == after  # the error drew as many numbers as NumPy's


def test_module_docstring_says_why():
    doc = tnp.random.__doc__
    assert "host" in doc and "call time" in doc and "program order" in doc
    assert tnp.random.normal.__doc__ == np.random.normal.__doc__
    assert tnp.random.Generator.integers.__doc__ == np.random.Generator.integers.__doc__
