"""Bad input raises ValueError / TypeError with a clear message; nothing crashes."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import unmix
from unmix import _unmix
from conftest import mixed

X = mixed(n=500, k=3, seed=0)[1]


@pytest.mark.parametrize("cls", [unmix.FastICA, unmix.Whitener])
def test_wrong_dtype_or_shape(cls):
    with pytest.raises(ValueError):
        cls().fit(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match="[Cc]omplex"):
        cls().fit(X.astype(np.complex128))
    with pytest.raises(ValueError, match="2D"):
        cls().fit(X[:, 0])
    with pytest.raises(ValueError):
        cls().fit(X[None])
    with pytest.raises(ValueError, match="sample"):
        cls().fit(X[:1])
    est = cls().fit(X)
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :2])
    with pytest.raises(ValueError):
        est.inverse_transform(np.ones((3, 7)))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("cls", [unmix.FastICA, unmix.Whitener])
def test_non_finite_values(cls, bad):
    x = X.copy()
    x[17, 2] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        cls().fit(x)
    est = cls().fit(X)
    with pytest.raises(ValueError, match="NaN|infinity"):
        est.transform(x)


@pytest.mark.parametrize("cls", [unmix.FastICA, unmix.Whitener])
def test_calls_before_fit(cls):
    for method in ("transform", "inverse_transform"):
        with pytest.raises(NotFittedError):
            getattr(cls(), method)(X)
    assert issubclass(NotFittedError, ValueError)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(algorithm="both"), "algorithm"),
        (dict(whiten=True), "whiten"),
        (dict(fun="tanh"), "fun"),
        (dict(fun=np.tanh), "callable"),
        (dict(fun_args={"alpha": 3}), "alpha"),
        (dict(max_iter=0), "max_iter"),
        (dict(tol=-1), "tol"),
        (dict(n_components=0), "n_components"),
        (dict(w_init=np.eye(2)), "w_init"),
        (dict(whiten_solver="qr"), "whiten_solver"),
        (dict(n_threads=-1), "n_threads"),
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        unmix.FastICA(**params).fit(X)


def test_whitener_bad_parameters():
    with pytest.raises(ValueError, match="method"):
        unmix.Whitener(method="pcb").fit(X)
    with pytest.raises(ValueError, match="ZCA"):
        unmix.Whitener(method="zca", n_components=2).fit(X)
    with pytest.raises(ValueError, match="features"):
        unmix.Whitener(n_components=4).fit(X)
    with pytest.raises(ValueError, match="ddof"):
        unmix.Whitener(ddof=2).fit(X)


def test_the_extension_checks_its_own_arguments():
    """The Rust functions refuse what the Python layer would have caught."""
    w = np.eye(3)
    args = ("parallel", "unit-variance", "logcosh", 1.0, 200, 1e-4, w, False, 1)
    with pytest.raises(TypeError, match="float32 or float64"):
        _unmix.fastica_fit(X.astype(np.int64), 3, *args)
    with pytest.raises(ValueError, match="contiguous"):
        _unmix.fastica_fit(np.asfortranarray(X), 3, *args)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="row 3, column 1"):
        _unmix.fastica_fit(bad, 3, *args)
    with pytest.raises(ValueError, match="algorithm"):
        _unmix.fastica_fit(X, 3, "both", *args[1:])
    with pytest.raises(ValueError):
        _unmix.fastica_fit(X, 4, *args)
