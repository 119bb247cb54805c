"""unmix.Whitener against numpy / scipy / scikit-learn computed in the same run."""

import numpy as np
import pytest
from scipy.linalg import fractional_matrix_power
from sklearn.decomposition import PCA

import unmix
from conftest import mixed


def test_pca_whitening_matches_scikit_learns_pca_up_to_sign():
    _, x = mixed(n=3000, k=5, seed=1)
    ours = unmix.Whitener(n_components=3, ddof=1).fit(x)
    ref = PCA(n_components=3, whiten=True, svd_solver="full").fit(x)
    z, zr = ours.transform(x), ref.transform(x)
    signs = np.sign(np.sum(z * zr, axis=0))
    assert np.abs(z - zr * signs).max() < 1e-8
    assert np.abs(ours.explained_variance_ - ref.explained_variance_).max() < 1e-10 * ref.explained_variance_[0]
    assert np.abs(ours.mean_ - ref.mean_).max() < 1e-12
    # Our sign rule: each eigenvector's first entry is positive.
    u = ours.whitening_ * np.sqrt(ours.explained_variance_)[:, None]
    assert np.all(u[:, 0] > 0)


def test_zca_is_the_inverse_square_root_of_the_covariance():
    _, x = mixed(n=3000, k=4, seed=2)
    w = unmix.Whitener(method="zca").fit(x)
    ref = np.real(fractional_matrix_power(np.cov(x, rowvar=False, ddof=0), -0.5))
    assert np.abs(w.whitening_ - ref).max() < 1e-8 * np.abs(ref).max()
    z = w.transform(x)
    assert np.abs(np.cov(z, rowvar=False, ddof=0) - np.eye(4)).max() < 1e-10
    assert np.abs(w.inverse_transform(z) - x).max() < 1e-10 * np.abs(x).max()


def test_random_rotation_is_an_orthogonal_map_of_pca_whitening():
    _, x = mixed(n=3000, k=4, seed=3)
    pca = unmix.Whitener().fit(x).transform(x)
    rot = unmix.Whitener(rotation="random", random_state=5).fit(x).transform(x)
    r = np.linalg.lstsq(pca, rot, rcond=None)[0]
    assert np.abs(r.T @ r - np.eye(4)).max() < 1e-10
    assert np.abs(pca @ r - rot).max() < 1e-10
    assert np.abs(r - np.eye(4)).max() > 0.1  # a real rotation
    again = unmix.Whitener(rotation="random", random_state=5).fit(x).transform(x)
    assert np.array_equal(rot, again)
    other = unmix.Whitener(rotation="random", random_state=6).fit(x).transform(x)
    assert not np.allclose(rot, other)


def test_rank_deficiency_is_reported():
    _, x = mixed(n=500, k=2, d=4, seed=4)
    with pytest.raises(ValueError, match="rank"):
        unmix.Whitener(n_components=3).fit(x)
    with pytest.raises(ValueError, match="rank"):
        unmix.FastICA(n_components=3).fit(x)


def test_float32_in_float32_out():
    _, x = mixed(n=2000, k=3, seed=5)
    w = unmix.Whitener().fit(x.astype(np.float32))
    z = w.transform(x.astype(np.float32))
    assert z.dtype == np.float32
    z64 = unmix.Whitener().fit(x).transform(x)
    assert np.abs(z - z64).max() < 1e-3
