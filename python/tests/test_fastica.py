"""unmix.FastICA against scikit-learn's FastICA computed in the same run."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import FastICA as SkFastICA
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import unmix
from conftest import mixed


def rel(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


def sign_aligned(a, b):
    """b's columns (sources) signed like a's: FastICA's sign is arbitrary, but with the same
    start both libraries pick the same one; this only guards exact-zero correlations."""
    s = np.sign(np.sum(a * b, axis=0))
    s[s == 0] = 1
    return b * s


@pytest.mark.parametrize("algorithm", ["parallel", "deflation"])
@pytest.mark.parametrize("fun", ["logcosh", "exp", "cube"])
@pytest.mark.parametrize("whiten", ["unit-variance", "arbitrary-variance", False])
def test_matches_scikit_learn_with_the_same_w_init(algorithm, fun, whiten):
    _, x = mixed(n=2000, k=4, seed=1)
    k = 4
    w_init = np.random.RandomState(7).standard_normal((k, k))
    if whiten is False:
        # Data already white, as scikit-learn expects with whiten=False.
        x = unmix.Whitener().fit_transform(x)
    params = dict(algorithm=algorithm, fun=fun, whiten=whiten, w_init=w_init, tol=1e-8, max_iter=500)
    ours = unmix.FastICA(whiten_solver="eigh", **params)
    ref = SkFastICA(whiten_solver="eigh", **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s_ours = ours.fit_transform(x)
        s_ref = ref.fit_transform(x)
    assert ours.n_iter_ == ref.n_iter_
    assert rel(s_ours, s_ref) < 1e-6
    assert rel(ours.components_, ref.components_) < 1e-6
    assert rel(ours.mixing_, ref.mixing_) < 1e-6
    if whiten:
        assert rel(ours.mean_, ref.mean_) < 1e-12
        assert rel(ours.whitening_, ref.whitening_) < 1e-8
        assert not hasattr(ref, "whitening_") or ours.whitening_.shape == ref.whitening_.shape
    else:
        assert not hasattr(ours, "mean_") and not hasattr(ref, "mean_")
    assert rel(ours.inverse_transform(s_ours), ref.inverse_transform(s_ref)) < 1e-6


def test_default_random_state_draws_scikit_learns_start():
    _, x = mixed(n=2000, k=3, seed=2)
    ours = unmix.FastICA(random_state=3, whiten_solver="eigh").fit(x)
    ref = SkFastICA(random_state=3, whiten_solver="eigh").fit(x)
    assert ours.n_iter_ == ref.n_iter_
    assert rel(ours.components_, ref.components_) < 1e-6


def test_svd_solver_gives_the_same_model_as_scikit_learns_svd_solver():
    _, x = mixed(n=2000, k=3, seed=4)
    ours = unmix.FastICA(random_state=0).fit(x)  # whiten_solver="svd", the default
    ref = SkFastICA(random_state=0).fit(x)
    assert ours.n_iter_ == ref.n_iter_
    assert rel(ours.components_, ref.components_) < 1e-6


def test_fewer_components_and_float32():
    _, x = mixed(n=3000, k=3, d=6, seed=5)
    w = np.random.RandomState(1).standard_normal((2, 2))
    ours = unmix.FastICA(n_components=2, w_init=w, whiten_solver="eigh").fit(x)
    ref = SkFastICA(n_components=2, w_init=w, whiten_solver="eigh").fit(x)
    assert ours.components_.shape == (2, 6)
    assert rel(ours.components_, ref.components_) < 1e-6
    x32 = x.astype(np.float32)
    o32 = unmix.FastICA(n_components=2, w_init=w, whiten_solver="eigh").fit(x32)
    assert o32.components_.dtype == np.float32
    assert o32.transform(x32).dtype == np.float32
    # f32 data, f64 sums: within 1e-3 of the f64 fit (the core's f32 contract).
    assert rel(o32.components_.astype(np.float64), ours.components_) < 1e-3


def test_same_bits_for_any_thread_count_and_run():
    _, x = mixed(n=20000, k=4, seed=6)  # 5 chunks of the core
    fits = [unmix.FastICA(random_state=0, n_threads=t).fit(x) for t in (1, 2, 3, 2)]
    for f in fits[1:]:
        assert np.array_equal(f.components_, fits[0].components_)
        assert np.array_equal(f.mixing_, fits[0].mixing_)
    assert np.array_equal(fits[0].transform(x), fits[1].transform(x))


def test_canonical_orders_by_kurtosis_and_signs_by_skewness():
    s, x = mixed(n=5000, k=4, seed=8)
    y = unmix.FastICA(random_state=0, canonical=True).fit_transform(x)
    from scipy.stats import kurtosis, skew

    k = np.abs(kurtosis(y, axis=0))
    assert np.all(np.diff(k) <= 1e-12)
    assert np.all(skew(y, axis=0) >= 0)


def test_pipeline_and_clone():
    _, x = mixed(n=2000, k=3, seed=9)
    est = unmix.FastICA(n_components=3, random_state=0, n_threads=1)
    c = clone(est)
    assert c.get_params() == est.get_params() and c is not est
    pipe = make_pipeline(StandardScaler(), est).fit(x)
    ref = make_pipeline(StandardScaler(), SkFastICA(n_components=3, random_state=0)).fit(x)
    assert rel(pipe.transform(x), ref.transform(x)) < 1e-6
    assert list(pipe.get_feature_names_out()) == ["fastica0", "fastica1", "fastica2"]


def test_inputs_are_not_copied_or_modified():
    _, x = mixed(n=1000, k=3, seed=10)
    before = x.copy()
    unmix.FastICA(random_state=0).fit(x).transform(x)
    assert np.array_equal(x, before)


def test_the_gil_is_released_during_a_fit():
    """Another Python thread runs while a fit is in Rust: were the GIL held, the main thread's
    sleep could only end once the fit had returned."""
    import threading
    import time

    _, x = mixed(n=400_000, k=16, seed=11)
    est = unmix.FastICA(w_init=np.eye(16), n_threads=1, max_iter=30, tol=0.0)
    started, times = threading.Event(), {}

    def fit():
        started.set()
        times["start"] = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(x)
        times["end"] = time.perf_counter()

    th = threading.Thread(target=fit)
    th.start()
    started.wait()
    time.sleep(0.05)
    woke = time.perf_counter()
    th.join()
    assert times["end"] - times["start"] > 0.3, "the fit is too short to tell"
    assert woke < times["end"] - 0.1
