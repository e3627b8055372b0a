"""The libraries tracer arrays are handed to (issue 22 item 3): scikit-learn (with joblib's
process pool), pandas, SciPy and matplotlib take tracer arrays where they take NumPy's, and give
NumPy's answers. The libraries come with the test extra; a missing one skips its tests."""
from __future__ import annotations

import warnings

import numpy
import pytest

import tracer
import tracer.numpy as np

RNG = numpy.random.default_rng(0)
XH = RNG.standard_normal((60, 4))
YH = XH @ [1.0, 2.0, -1.0, 0.5] + RNG.standard_normal(60) * 0.1


def _pair(h):
    """A pending tracer array with h's values, and h."""
    return np.asarray(h) * 1.0, h


@pytest.fixture
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", tracer.TracerFallbackWarning)
        yield


def test_scikit_learn_estimators_fit_tracer_arrays_as_numpy_arrays(no_warnings):
    pytest.importorskip("sklearn")
    from sklearn.cluster import KMeans
    from sklearn.linear_model import Ridge
    from sklearn.preprocessing import StandardScaler
    X, Xh = _pair(XH)
    y, yh = _pair(YH)
    km, km_h = (KMeans(3, n_init=2, random_state=0).fit(a) for a in (X, Xh))
    numpy.testing.assert_array_equal(km.labels_, km_h.labels_)
    numpy.testing.assert_allclose(km.cluster_centers_, km_h.cluster_centers_, rtol=1e-12)
    numpy.testing.assert_allclose(StandardScaler().fit_transform(X),
                                  StandardScaler().fit_transform(Xh), rtol=1e-12)
    numpy.testing.assert_allclose(Ridge().fit(X, y).predict(X), Ridge().fit(Xh, yh).predict(Xh),
                                  rtol=1e-12)
    assert numpy.asarray(X).flags.writeable is False  # sklearn copied before writing


def test_joblib_process_pool_runs_cross_validation_on_tracer_arrays():
    """loky's workers unpickle the arrays in processes that imported only what the pickle
    names (tracer.array): its methods are installed there all the same."""
    pytest.importorskip("sklearn")
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import cross_val_score
    X, Xh = _pair(XH)
    y, yh = _pair(YH)
    got = cross_val_score(Ridge(), X, y, cv=3, n_jobs=2)
    numpy.testing.assert_allclose(got, cross_val_score(Ridge(), Xh, yh, cv=3), rtol=1e-12)


def test_joblib_memory_caches_a_function_of_tracer_arrays(tmp_path):
    joblib = pytest.importorskip("joblib")
    calls = []

    def f(a):
        calls.append(1)
        return a * 2

    g = joblib.Memory(tmp_path, verbose=0).cache(f)
    x = np.arange(5.0) + 1
    first, again = g(x), g(np.arange(5.0) + 1)  # the same values hash the same
    assert len(calls) == 1
    for r in (first, again):
        numpy.testing.assert_array_equal(numpy.asarray(r), (numpy.arange(5.0) + 1) * 2)


def test_pandas_round_trips(no_warnings):
    pd = pytest.importorskip("pandas")
    t, h = _pair(XH[:5, :2])
    for data in (t, h):  # what pandas makes of either
        s = pd.Series(data[:, 0] * 2, copy=True)  # the writable path: NumPy 2's copy=True
        s[0] = 9.0
        df = pd.DataFrame(data + 1, columns=["a", "b"])
        df["a"] = 0.0
        df.iloc[1, 1] = 5.0
        if data is h:
            want_s, want_df = s, df
    pd.testing.assert_series_equal(s, want_s)
    pd.testing.assert_frame_equal(df, want_df)
    # back into tracer: a Series or a frame's values are NumPy arrays tracer snapshots
    series = pd.Series(h[:, 0])
    got = np.asarray(series) * 2 + np.asarray(df.values).sum()
    numpy.testing.assert_array_equal(numpy.asarray(got), h[:, 0] * 2 + want_df.values.sum())
    # a ufunc or an operator with a Series is pandas' own: its result, no warning (counted)
    before = tracer.stats().fallbacks
    pd.testing.assert_series_equal(np.sin(series), numpy.sin(series))
    pd.testing.assert_series_equal(t[:, 1] + series, h[:, 1] + series)
    assert tracer.stats().fallbacks == before + 2
    # without copy=True pandas keeps what numpy.asarray gave: tracer's read-only values
    read_only = pd.Series(t[:, 0] * 1)
    with pytest.raises(ValueError, match="read-only"):
        read_only.iloc[0] = 1.0


def test_scipy_functions_take_tracer_arrays(no_warnings):
    pytest.importorskip("scipy")
    import scipy.linalg
    import scipy.signal
    import scipy.special
    import scipy.stats
    X, Xh = _pair(XH)
    y, yh = _pair(YH)
    A = X[:4] + np.eye(4) * 5
    numpy.testing.assert_allclose(scipy.linalg.solve(A, y[:4]),
                                  scipy.linalg.solve(Xh[:4] + numpy.eye(4) * 5, yh[:4]),
                                  rtol=1e-12)
    numpy.testing.assert_allclose(numpy.asarray(scipy.special.expit(X)),
                                  scipy.special.expit(Xh), rtol=1e-15)
    got, want = scipy.stats.describe(X), scipy.stats.describe(Xh)
    for g, w in zip(got, want):
        numpy.testing.assert_allclose(g, w, rtol=1e-12)
    numpy.testing.assert_allclose(scipy.signal.convolve(y, np.ones(3)),
                                  scipy.signal.convolve(yh, numpy.ones(3)), rtol=1e-12)


def test_matplotlib_agg_draws_tracer_arrays_as_numpy_arrays(tmp_path, no_warnings):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    X, Xh = _pair(XH)
    pngs = []
    for a in (X, Xh):
        fig, ax = plt.subplots(figsize=(2, 2), dpi=40)
        ax.plot(a[:, 0], a[:, 1] * 2)
        ax.hist(a[:, 2], bins=5)
        ax.imshow(a[:10])
        ax.scatter(a[:, 0], a[:, 3])
        pngs.append(tmp_path / f"{len(pngs)}.png")
        fig.savefig(pngs[-1], metadata={"Software": None})
        plt.close(fig)
    assert pngs[0].read_bytes() == pngs[1].read_bytes()
