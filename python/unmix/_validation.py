"""Shared argument checks: clear ValueError / TypeError messages before any Rust code runs."""

import numbers

import numpy as np
from sklearn.utils.validation import check_array

FLOATS = (np.float64, np.float32)


def as_rows(X, *, name="X", estimator=None, min_samples=1):
    """A C-ordered float32/float64 2-D array (copied only if its layout or dtype needs it).

    Integers and other numbers become float64; non-numeric data, complex values, non-finite
    values, sparse matrices and arrays that are not 2-D are refused with scikit-learn's messages.
    """
    if hasattr(X, "dtype") and np.iscomplexobj(X):
        raise ValueError(f"{name}: complex data are not supported")
    X = check_array(
        X,
        accept_sparse=False,
        dtype=FLOATS,
        order="C",
        ensure_all_finite=True,
        ensure_2d=True,
        ensure_min_samples=min_samples,
        estimator=estimator,
        input_name=name,
    )
    return np.require(X, requirements=["C", "A"])


def check_threads(n_threads):
    if n_threads is None:
        return 0
    if isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral) or n_threads < 0:
        raise ValueError(f"n_threads must be None or an integer >= 0 (0: all cores), got {n_threads!r}")
    return int(n_threads)
