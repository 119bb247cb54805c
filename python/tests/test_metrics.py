"""unmix.metrics against scikit-learn and scipy computed in the same run."""

import numpy as np
import pytest
from scipy.linalg import orthogonal_procrustes
from scipy.optimize import linear_sum_assignment
from scipy.stats import spearmanr
from sklearn.feature_selection import mutual_info_classif
from sklearn.metrics import mutual_info_score, roc_auc_score
from sklearn.preprocessing import StandardScaler

import unmix
from unmix import metrics


def test_auroc_matches_roc_auc_score_with_ties_and_weights():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 2, 5000)
    s = np.round(y + rng.standard_normal(5000), 1)  # many ties
    w = rng.uniform(0, 2, 5000)
    w[:10] = 0
    assert abs(metrics.auroc(y, s) - roc_auc_score(y, s)) < 1e-12
    assert abs(metrics.auroc(y, s, w) - roc_auc_score(y, s, sample_weight=w)) < 1e-12
    labels = np.where(y == 1, "b", "a")  # the greater label is positive, as scikit-learn
    assert abs(metrics.auroc(labels, s) - roc_auc_score(labels, s)) < 1e-12


def hoyer(c):
    c = np.abs(np.asarray(c, float))
    d = c.size
    return (np.sqrt(d) - c.sum() / np.sqrt((c**2).sum())) / (np.sqrt(d) - 1)


def test_sparsity_is_hoyers():
    c = np.array([10.0, 3, 0, 1, 7])
    assert abs(metrics.sparsity(c) - hoyer(c / c.sum())) < 1e-12
    assert metrics.sparsity([0, 0, 5.0]) == pytest.approx(1.0)
    assert metrics.sparsity([2, 2, 2.0]) == pytest.approx(0.0, abs=1e-12)


def mcc_reference(a, b, method):
    d = a.shape[1]
    if method == "pearson":
        c = np.corrcoef(a, b, rowvar=False)[:d, d:]
    else:
        c = spearmanr(a, b).statistic[:d, d:]
    r, col = linear_sum_assignment(-np.abs(c))
    return np.abs(c[r, col]).mean()


@pytest.mark.parametrize("method", ["pearson", "spearman"])
def test_mcc_matches_scipy(method):
    rng = np.random.RandomState(1)
    a = rng.standard_normal((800, 4))
    b = a[:, [2, 0, 3]] * [1, -2, 3] + 0.7 * rng.standard_normal((800, 3))
    b = np.c_[b, rng.standard_normal(800)]
    score, pairs = metrics.mcc(a, b, method, return_pairs=True)
    assert abs(score - mcc_reference(a, b, method)) < 1e-10
    assert (0, 1) in pairs and (2, 0) in pairs and (3, 2) in pairs


def test_amari_index():
    rng = np.random.RandomState(2)
    a = rng.standard_normal((4, 4))
    w = np.linalg.inv(a)[[1, 0, 3, 2]] * [[2], [-1], [3], [0.5]]
    assert metrics.amari(w, a) < 1e-12
    w2 = w + 0.1 * rng.standard_normal((4, 4))
    p = np.abs(w2 @ a)
    k = 4
    ref = ((p.sum(1) / p.max(1) - 1).sum() + (p.sum(0) / p.max(0) - 1).sum()) / (2 * k * (k - 1))
    assert abs(metrics.amari(w2, a) - ref) < 1e-12


def test_alignment_matches_scipy_procrustes_and_numpy_lstsq():
    rng = np.random.RandomState(3)
    n = 600
    s = np.c_[rng.laplace(size=(n, 2)), rng.uniform(-2, 2, size=(n, 2))]
    a = s @ rng.standard_normal((4, 4)) + rng.uniform(-3, 3, 4)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    b = a @ q * 1.3 + 2.0 + 0.3 * rng.standard_normal((n, 4))
    r = metrics.alignment(a, b)
    ac, bc = a - a.mean(0), b - b.mean(0)
    rot, _ = orthogonal_procrustes(bc, ac)
    design = np.c_[b, np.ones(n)]
    coef = np.linalg.lstsq(design, a, rcond=None)[0]
    raw_rigid = np.linalg.norm(ac - bc @ rot, axis=1).mean()
    raw_linear = np.linalg.norm(a - design @ coef, axis=1).mean()
    diameter = 2 * np.linalg.norm(ac, axis=1).max()
    assert abs(r["raw"]["rigid"] - raw_rigid) < 1e-8 * raw_rigid
    assert abs(r["raw"]["linear"] - raw_linear) < 1e-8 * raw_linear
    assert abs(r["diameter"] - diameter) < 1e-10 * diameter
    assert abs(r["rigid"] - raw_rigid / diameter) < 1e-8
    assert r["linear"] <= r["rigid"] + 1e-12


def test_infomec_nmi_matches_scikit_learns_mutual_information():
    rng = np.random.RandomState(4)
    n = 2000
    f = np.c_[rng.randint(0, 3, n), rng.randint(0, 4, n)]
    noise = rng.standard_normal((n, 3))
    z = np.c_[f[:, 0] + 0.3 * noise[:, 0], f[:, 1] + 0.5 * f[:, 0] + 0.4 * noise[:, 1], noise[:, 2]]
    r = metrics.infomec(f, z)
    zs = StandardScaler().fit_transform(z)
    nmi = np.array([[mutual_info_classif(zs[:, [j]], f[:, i], n_neighbors=10, random_state=0)[0]
                     / mutual_info_score(f[:, i], f[:, i]) for j in range(3)] for i in range(2)])
    # Kraskov's estimator; scikit-learn adds a tiny jitter, hence 1e-3 (the CLI's fixture tolerance).
    assert np.abs(r["nmi"] - nmi).max() < 1e-3
    assert r["n_active"] == 3
    assert 0 < r["infom"] <= 1 and 0 < r["infoc"] <= 1 and 0 < r["infoe"] <= 1


def test_concentration_runs_the_tree_pipeline_and_is_reproducible():
    rng = np.random.RandomState(5)
    n = 600
    y = rng.randint(0, 2, n)
    x = rng.standard_normal((n, 8))
    x[:, 0] += 2.5 * y  # one informative feature
    r = metrics.concentration(x, y, n_seeds=2, random_state=1)
    assert r["n_top"] == 2 and r["n_features"] == 8
    assert r["concentration"]["mean"] > 0.2
    assert r["auroc_all"]["mean"] > 0.85
    assert r == metrics.concentration(x, y, n_seeds=2, random_state=1)


def test_metric_bad_input_raises():
    with pytest.raises(ValueError, match="two classes"):
        metrics.auroc([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="non-finite"):
        metrics.auroc([0, 1, 1], [0.1, np.nan, 0.3])
    with pytest.raises(ValueError, match="samples"):
        metrics.auroc([0, 1, 1], [0.1, 0.3])
    with pytest.raises(ValueError, match="constant"):
        metrics.mcc(np.ones((10, 2)), np.random.rand(10, 2))
    with pytest.raises(ValueError, match="compose"):
        metrics.amari(np.eye(3), np.eye(2))
    with pytest.raises(TypeError):
        metrics.sparsity(["a", "b"])
    with pytest.raises(ValueError, match="integer"):
        metrics.infomec(np.random.rand(50, 2), np.random.rand(50, 2))
