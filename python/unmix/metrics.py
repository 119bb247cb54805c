"""The paper's metrics on numpy arrays, computed by the unmix core (float64).

Every function checks its input first (shapes, finite values, labels) and raises ValueError or
TypeError with a clear message.
"""

import json
import numbers

import numpy as np

from . import _unmix

__all__ = ["auroc", "sparsity", "concentration", "mcc", "amari", "alignment", "infomec"]


def _matrix(a, name, min_rows=1):
    a = np.asarray(a)
    if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise TypeError(f"{name} must be a numeric array, got dtype {a.dtype}")
    if np.iscomplexobj(a):
        raise TypeError(f"{name}: complex values are not supported")
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D, got shape {a.shape}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows, got {a.shape[0]}")
    bad = np.argwhere(~np.isfinite(a))
    if len(bad):
        r, c = bad[0]
        raise ValueError(f"{name} contains a non-finite value at row {r}, column {c}")
    return a


def _vector(a, name):
    a = np.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    return _matrix(a, name)[:, 0].copy()


def _binary(y, name="y_true"):
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {y.shape}")
    classes = np.unique(y)
    if len(classes) != 2:
        raise ValueError(f"{name} must hold exactly two classes, found {len(classes)}: {classes[:5]}")
    return np.ascontiguousarray(y == classes[1])


def _integers(a, name):
    a = np.asarray(a)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D, got shape {a.shape}")
    if not (np.issubdtype(a.dtype, np.integer) or a.dtype == bool):
        f = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(f)) or not np.all(f == np.round(f)):
            raise ValueError(f"{name} must hold integer labels")
    return np.ascontiguousarray(a, dtype=np.int64)


def auroc(y_true, y_score, sample_weight=None):
    """Area under the ROC curve, as ``sklearn.metrics.roc_auc_score`` (binary): the greater of
    the two labels is positive; ties count half; optional non-negative weights."""
    y = _binary(y_true)
    s = _vector(y_score, "y_score")
    if len(s) != len(y):
        raise ValueError(f"y_true has {len(y)} samples but y_score has {len(s)}")
    w = None
    if sample_weight is not None:
        w = _vector(sample_weight, "sample_weight")
        if len(w) != len(y):
            raise ValueError(f"y_true has {len(y)} samples but sample_weight has {len(w)}")
    return _unmix.auroc(s, y, w)


def sparsity(split_counts):
    """Hoyer sparsity of split counts or fractions (normalised to sum 1 first): 0 when every
    feature is used equally, 1 when one feature takes every split."""
    return _unmix.sparsity(_vector(split_counts, "split_counts"))


def concentration(X, y, groups=None, *, top=0.25, random_state=0, n_seeds=5, test_fraction=0.25):
    """The concentration pipeline of ``unmix metric concentration``: gradient-boosted trees
    (forust) per seed, split fractions, held-out AUROC of the top ``top`` share of features over
    that of the rest, minus 1. Returns the CLI's report as a dict (``concentration``,
    ``sparsity``, ``auroc_all`` ... each with mean, std, per_seed; ``runs``)."""
    X = _matrix(X, "X", min_rows=2)
    y = _integers(y, "y")[:, 0].copy()
    if len(y) != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {len(y)}")
    g = None
    if groups is not None:
        g = _integers(groups, "groups")[:, 0].copy()
        if len(g) != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but groups has {len(g)}")
    if not 0 < top < 1:
        raise ValueError(f"top must be in (0, 1), got {top}")
    if not isinstance(n_seeds, numbers.Integral) or n_seeds < 1:
        raise ValueError(f"n_seeds must be an integer >= 1, got {n_seeds!r}")
    return json.loads(_unmix.concentration(X, y, g, float(top), int(random_state), int(n_seeds),
                                           float(test_fraction)))


def mcc(true, estimated, method="pearson", *, return_pairs=False):
    """Mean correlation coefficient: mean |correlation| (Pearson or Spearman) of each true
    column with its matched estimated column under the optimal one-to-one matching."""
    t = _matrix(true, "true", min_rows=2)
    e = _matrix(estimated, "estimated", min_rows=2)
    if method not in ("pearson", "spearman"):
        raise ValueError(f"method must be 'pearson' or 'spearman', got {method!r}")
    score, pairs = _unmix.mcc(t, e, method)
    return (score, pairs) if return_pairs else score


def amari(unmixing, mixing):
    """Amari index of ``unmixing @ mixing`` (k x d and d x k): 0 for a scaled permutation."""
    return _unmix.amari(_matrix(unmixing, "unmixing"), _matrix(mixing, "mixing"))


def alignment(reference, other, *, random_state=0):
    """Alignment errors of ``other`` mapped into ``reference`` (same rows): permutation, rigid,
    linear and ICA maps, normalised by the reference's diameter; ``efficiency`` =
    (perm - ica) / (perm - rigid) x 100; ``raw`` and ``rms`` errors."""
    a = _matrix(reference, "reference", min_rows=2)
    b = _matrix(other, "other", min_rows=2)
    for m, name in ((a, "reference"), (b, "other")):
        if m.shape[0] <= m.shape[1]:
            raise ValueError(f"{name}: {m.shape[0]} samples for {m.shape[1]} dimensions; the fits need more samples than dimensions")
    return _unmix.alignment(a, b, int(random_state))


def infomec(factors, latents, *, n_neighbors=10):
    """InfoM, InfoE and InfoC (Hsu et al.) of latents against integer factors, with the NMI
    matrix (factors x latents) and the active latents."""
    f = _integers(factors, "factors")
    z = _matrix(latents, "latents", min_rows=2)
    if f.shape[0] != z.shape[0]:
        raise ValueError(f"factors have {f.shape[0]} rows but latents have {z.shape[0]}")
    r = _unmix.infomec(f, z, int(n_neighbors))
    r["nmi"] = np.asarray(r["nmi"]).reshape(f.shape[1], z.shape[1])
    r["active"] = np.asarray(r["active"])
    return r
