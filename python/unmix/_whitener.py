"""PCA / ZCA whitening with an optional Haar-random rotation, over the unmix core."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _unmix
from ._validation import FLOATS, as_rows, check_threads


def _whiten_options(est):
    if est.method not in ("pca", "zca"):
        raise ValueError(f"method must be 'pca' or 'zca', got {est.method!r}")
    if est.rotation not in ("none", "random"):
        raise ValueError(f"rotation must be 'none' or 'random', got {est.rotation!r}")
    if est.ddof not in (0, 1) or isinstance(est.ddof, bool):
        raise ValueError(f"ddof must be 0 or 1, got {est.ddof!r}")
    if not isinstance(est.rank_rtol, numbers.Real) or not 0 <= est.rank_rtol < 1:
        raise ValueError(f"rank_rtol must be in [0, 1), got {est.rank_rtol!r}")
    seed = est.random_state
    if seed is None:
        seed = 0
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"random_state must be None or an integer >= 0 (the rotation's seed), got {seed!r}")
    if est.n_components is not None and (
        isinstance(est.n_components, bool)
        or not isinstance(est.n_components, numbers.Integral)
        or est.n_components < 1
    ):
        raise ValueError(f"n_components must be None or an integer >= 1, got {est.n_components!r}")
    return int(seed)


def _components(est, d):
    k = d if est.n_components is None else int(est.n_components)
    if k > d:
        raise ValueError(f"n_components={k} is more than the {d} features")
    if est.method == "zca" and k != d:
        raise ValueError(f"ZCA keeps every feature: n_components must be {d} (or None), got {k}")
    return k


def _set_whitener(est, result, d, k):
    s = result["storage"]
    est._storage, est._d, est._k = s, d, k
    est.mean_ = s[:d]
    est.whitening_ = s[d : d + k * d].reshape(k, d)
    est.unwhitening_ = s[d + k * d : d + 2 * k * d].reshape(d, k)
    est.explained_variance_ = s[d + 2 * k * d :]
    est.n_samples_ = int(result["n_samples"])
    est.effective_rank_ = int(result["effective_rank"])
    est._n_features_out = k


class Whitener(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Whitening: ``z = whitening_ @ (x - mean_)`` has identity covariance (with ``ddof``).

    ``method="pca"`` projects on the ``n_components`` leading principal axes (eigenvalues
    descending, each eigenvector's first nonzero entry positive) scaled to unit variance;
    ``"zca"`` is the symmetric inverse square root of the covariance (all features).
    ``rotation="random"`` follows with a Haar-random orthogonal matrix drawn from
    ``random_state`` (an integer seed of the core's generator, 0 if None). Asking for more
    components than the effective rank (eigenvalues above ``rank_rtol`` times the largest) is
    a ValueError that names the rank. Attributes: ``mean_``, ``whitening_`` (k x d),
    ``unwhitening_`` (d x k), ``explained_variance_``, ``n_samples_``, ``effective_rank_``.
    """

    def __init__(self, n_components=None, *, method="pca", rotation="none", random_state=None,
                 ddof=0, rank_rtol=1e-10, n_threads=None):
        self.n_components = n_components
        self.method = method
        self.rotation = rotation
        self.random_state = random_state
        self.ddof = ddof
        self.rank_rtol = rank_rtol
        self.n_threads = n_threads

    def fit(self, X, y=None):
        seed = _whiten_options(self)
        threads = check_threads(self.n_threads)
        X = validate_data(self, X, dtype=FLOATS, order="C", ensure_min_samples=2, reset=True)
        X = np.require(X, requirements=["C", "A"])
        d = X.shape[1]
        k = _components(self, d)
        r = _unmix.whitener_fit(X, k, self.method, self.rotation, seed, int(self.ddof),
                                float(self.rank_rtol), threads)
        _set_whitener(self, r, d, k)
        return self

    def transform(self, X):
        check_is_fitted(self, "_storage")
        X = validate_data(self, X, dtype=FLOATS, order="C", reset=False)
        X = np.require(X, dtype=self._storage.dtype, requirements=["C", "A"])
        return _unmix.whitener_transform(self._storage, self._d, self._k, X, False,
                                         check_threads(self.n_threads))

    def inverse_transform(self, X):
        check_is_fitted(self, "_storage")
        X = as_rows(X, estimator=self)
        if X.shape[1] != self._k:
            raise ValueError(f"X has {X.shape[1]} columns, but the whitener has {self._k} components")
        X = np.ascontiguousarray(X, dtype=self._storage.dtype)
        return _unmix.whitener_transform(self._storage, self._d, self._k, X, True,
                                         check_threads(self.n_threads))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
