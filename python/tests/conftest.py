import numpy as np
import pytest


def mixed(n=3000, k=4, d=None, seed=0, dtype=np.float64):
    """k independent non-Gaussian sources (Laplace, uniform, alternating) mixed into d features
    with offsets: FastICA's textbook case."""
    d = k if d is None else d
    rng = np.random.RandomState(seed)
    s = np.empty((n, k))
    s[:, 0::2] = rng.laplace(size=(n, (k + 1) // 2))
    s[:, 1::2] = rng.uniform(-1.7, 1.7, size=(n, k // 2))
    x = s @ rng.standard_normal((k, d)) + rng.uniform(-3, 3, size=d)
    return s, np.ascontiguousarray(x, dtype=dtype)


@pytest.fixture
def data():
    return mixed()
