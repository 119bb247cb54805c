"""scikit-learn's FastICA over the unmix core."""

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _unmix
from ._validation import FLOATS, as_rows, check_threads

_ALGORITHMS = ("parallel", "deflation")
_WHITEN = ("unit-variance", "arbitrary-variance")
_FUNS = ("logcosh", "exp", "cube")


def _options(est):
    """Checks the parameters like scikit-learn does; returns the core's names and alpha."""
    if est.algorithm not in _ALGORITHMS:
        raise ValueError(f"algorithm must be one of {_ALGORITHMS}, got {est.algorithm!r}")
    if est.whiten is False:
        whiten = "false"
    elif isinstance(est.whiten, str) and est.whiten in _WHITEN:
        whiten = est.whiten
    else:
        raise ValueError(f"whiten must be 'unit-variance', 'arbitrary-variance' or False, got {est.whiten!r}")
    if callable(est.fun):
        raise ValueError(
            "fun: a Python callable is not supported (the contrast runs inside the Rust core, "
            "and on Dask workers); use 'logcosh', 'exp' or 'cube'"
        )
    if est.fun not in _FUNS:
        raise ValueError(f"fun must be one of {_FUNS}, got {est.fun!r}")
    fun_args = {} if est.fun_args is None else est.fun_args
    if not isinstance(fun_args, dict):
        raise TypeError(f"fun_args must be a dict or None, got {type(fun_args).__name__}")
    alpha = float(fun_args.get("alpha", 1.0))
    if not 1 <= alpha <= 2:
        raise ValueError("alpha must be in [1,2]")
    if isinstance(est.max_iter, bool) or not isinstance(est.max_iter, numbers.Integral) or est.max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {est.max_iter!r}")
    if isinstance(est.tol, bool) or not isinstance(est.tol, numbers.Real) or not est.tol >= 0:
        raise ValueError(f"tol must be a number >= 0, got {est.tol!r}")
    if est.whiten_solver not in ("eigh", "svd"):
        raise ValueError(f"whiten_solver must be 'eigh' or 'svd', got {est.whiten_solver!r}")
    if est.n_components is not None and (
        isinstance(est.n_components, bool)
        or not isinstance(est.n_components, numbers.Integral)
        or est.n_components < 1
    ):
        raise ValueError(f"n_components must be None or an integer >= 1, got {est.n_components!r}")
    return whiten, alpha


def _n_components(est, n_samples, n_features):
    """scikit-learn's rule: ignored without whitening, else at most min(n_samples, n_features)."""
    k = est.n_components
    if not est.whiten and k is not None:
        k = None
        warnings.warn("Ignoring n_components with whiten=False.")
    if k is None:
        k = min(n_samples, n_features)
    if k > min(n_samples, n_features):
        k = min(n_samples, n_features)
        warnings.warn("n_components is too large: it will be set to %s" % k)
    if not est.whiten:
        k = n_features
    return k


def _w_init(est, k, dtype):
    """The start as scikit-learn draws it (same random_state: same start), as float64."""
    if est.w_init is None:
        w = np.asarray(check_random_state(est.random_state).normal(size=(k, k)), dtype=dtype)
    else:
        w = np.asarray(est.w_init)
        if w.shape != (k, k):
            raise ValueError("w_init has invalid shape -- should be %(shape)s" % {"shape": (k, k)})
        if not np.all(np.isfinite(w)):
            raise ValueError("w_init contains non-finite values")
    return np.ascontiguousarray(w, dtype=np.float64)


def _set_model(est, result, d, k, dtype):
    """Splits the core's model (mean | whitening | unwhitening | explained variance | unmixing |
    components | mixing) into scikit-learn's attributes."""
    m = result["model"]
    est._model = m
    est._d, est._k = d, k
    parts, at = {}, 0
    for name, shape in (
        ("mean", (d,)),
        ("whitening", (k, d)),
        ("unwhitening", (d, k)),
        ("explained_variance", (k,)),
        ("unmixing", (k, k)),
        ("components", (k, d)),
        ("mixing", (d, k)),
    ):
        size = int(np.prod(shape))
        parts[name] = m[at : at + size].reshape(shape)
        at += size
    est.components_ = parts["components"]
    est.mixing_ = parts["mixing"]
    n = result["n_samples"]
    if est.whiten:
        est.mean_ = parts["mean"]
        # scikit-learn's whitening_ is the whitening of sqrt(n)-scaled data: ours / sqrt(n).
        est.whitening_ = (parts["whitening"] / np.sqrt(n)).astype(dtype, copy=False)
    est.n_iter_ = int(result["n_iter"])
    est.converged_ = bool(result["converged"])
    est.effective_rank_ = int(result["effective_rank"])
    est._n_features_out = k
    if not est.converged_:
        warnings.warn(
            "FastICA did not converge. Consider increasing tolerance or the maximum number of iterations.",
            ConvergenceWarning,
        )


class FastICA(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """FastICA, as :class:`sklearn.decomposition.FastICA`, on the unmix core.

    Same parameters, defaults, attributes and results (sources, ``components_``, ``mixing_``
    to 1e-6 relative in float64 with the same ``w_init`` or ``random_state``, the same
    ``n_iter_``). Whitening is always computed from the covariance's eigendecomposition (the
    ``"eigh"`` solver); ``whiten_solver="svd"`` is accepted and gives the same whitening up to
    rounding. ``fun`` must be one of the built-in contrasts (no Python callables).

    Extra parameters: ``canonical`` (order components by |excess kurtosis|, sign them to positive
    skewness) and ``n_threads`` (threads of the fit and transforms; None or 0: all cores). The
    result does not depend on ``n_threads``. Extra attributes: ``converged_``,
    ``effective_rank_``. The GIL is released while the core runs.
    """

    def __init__(
        self,
        n_components=None,
        *,
        algorithm="parallel",
        whiten="unit-variance",
        fun="logcosh",
        fun_args=None,
        max_iter=200,
        tol=1e-4,
        w_init=None,
        whiten_solver="svd",
        random_state=None,
        canonical=False,
        n_threads=None,
    ):
        self.n_components = n_components
        self.algorithm = algorithm
        self.whiten = whiten
        self.fun = fun
        self.fun_args = fun_args
        self.max_iter = max_iter
        self.tol = tol
        self.w_init = w_init
        self.whiten_solver = whiten_solver
        self.random_state = random_state
        self.canonical = canonical
        self.n_threads = n_threads

    def fit(self, X, y=None):
        """Fits the model to X (n_samples, n_features), float32 or float64."""
        whiten, alpha = _options(self)
        threads = check_threads(self.n_threads)
        X = validate_data(self, X, dtype=FLOATS, order="C", ensure_min_samples=2, reset=True)
        X = np.require(X, requirements=["C", "A"])
        n, d = X.shape
        k = _n_components(self, n, d)
        w = _w_init(self, k, X.dtype)
        result = _unmix.fastica_fit(
            X, k, self.algorithm, whiten, self.fun, alpha, int(self.max_iter), float(self.tol), w,
            bool(self.canonical), threads,
        )
        _set_model(self, result, d, k, X.dtype)
        return self

    def fit_transform(self, X, y=None):
        """Fits, then returns the sources of X (n_samples, n_components)."""
        return self.fit(X).transform(X)

    def transform(self, X, copy=True):
        """Sources of X: ``(X - mean_) @ components_.T`` (no centring when whiten=False)."""
        check_is_fitted(self, "_model")
        X = validate_data(self, X, dtype=FLOATS, order="C", reset=False)
        X = np.require(X, dtype=self._model.dtype, requirements=["C", "A"])
        return _unmix.fastica_transform(self._model, self._d, self._k, X, check_threads(self.n_threads))

    def inverse_transform(self, X, copy=True):
        """Data from sources: ``X @ mixing_.T + mean_``."""
        check_is_fitted(self, "_model")
        X = as_rows(X, estimator=self)
        if X.shape[1] != self._k:
            raise ValueError(f"X has {X.shape[1]} columns, but the model has {self._k} components")
        X = np.ascontiguousarray(X, dtype=self._model.dtype)
        return _unmix.fastica_inverse(self._model, self._d, self._k, X, check_threads(self.n_threads))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
