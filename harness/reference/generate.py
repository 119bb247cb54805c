"""Generate the reference fixtures the Rust cross-checks compare against.

Run from the repository root:

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install -r harness/reference/requirements.txt
    /tmp/refvenv/bin/python harness/reference/generate.py

Writes harness/reference/fixtures/*.npy, harness/reference/fixtures/manifest.json and the bundled
digits data in harness/data/. Every array is produced by numpy / scipy / scikit-learn at the
versions pinned in requirements.txt; nothing here is computed by unmix.
"""

import json
import pathlib
import warnings

import numpy as np
import scipy
import sklearn
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA, FastICA
from sklearn.exceptions import ConvergenceWarning

ROOT = pathlib.Path(__file__).resolve().parent
OUT = ROOT / "fixtures"
DATA = ROOT.parent / "data"
manifest = {
    "versions": {"numpy": np.__version__, "scipy": scipy.__version__, "scikit-learn": sklearn.__version__},
    "eigh": [],
    "covariance": [],
    "pca": [],
    "fastica_whitening": [],
    "fastica": [],
    "auroc": [],
    "assignment": [],
    "mcc": [],
    "amari": [],
    "hoyer": [],
    "concentration": [],
    "alignment": [],
    "infomec": [],
}


def save(name, arr):
    np.save(OUT / f"{name}.npy", np.ascontiguousarray(arr))
    return f"{name}.npy"


def eigh_case(name, a, note):
    values, vectors = np.linalg.eigh(a)
    order = np.argsort(values)[::-1]  # descending, as unmix returns them
    manifest["eigh"].append({
        "name": name,
        "note": note,
        "matrix": save(f"eigh_{name}_matrix", a),
        "values": save(f"eigh_{name}_values", values[order]),
        "vectors": save(f"eigh_{name}_vectors", vectors[:, order].T),  # rows = eigenvectors
        "value_tol_rel_to_norm": 1e-10,
        "vector_tol": 1e-8,
    })


def random_orthogonal(rng, d):
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20260101)

    # ---- symmetric eigenproblems -------------------------------------------------------------
    for d in (2, 3, 8, 64, 256):
        x = rng.standard_normal((2 * d + 5, d)) @ rng.standard_normal((d, d))
        eigh_case(f"spd{d}", x.T @ x / x.shape[0], "random SPD (a Gram matrix)")
    q = random_orthogonal(rng, 8)
    eigh_case("repeated8", (q * np.array([5, 5, 5, 2, 2, 1, 1, 0.5])) @ q.T,
              "repeated eigenvalues 5 (x3), 2 (x2), 1 (x2)")
    q = random_orthogonal(rng, 64)
    vals = np.repeat([9.0, 4.0, 1.0, 0.25], 16)
    eigh_case("repeated64", (q * vals) @ q.T, "four eigenvalues, each repeated 16 times")
    x = rng.standard_normal((8, 5))
    eigh_case("rank5of8", x @ x.T, "rank 5: three eigenvalues are zero up to rounding")
    q = random_orthogonal(rng, 8)
    eigh_case("tiny8", (q * np.array([1, 0.5, 0.1, 1e-3, 1e-6, 1e-9, 1e-12, 1e-14])) @ q.T,
              "eigenvalues spanning 14 decades")
    eigh_case("indefinite3", np.array([[1.0, 2.0, 3.0], [2.0, -4.0, 5.0], [3.0, 5.0, 0.5]]),
              "symmetric, indefinite")
    eigh_case("diagonal4", np.diag([3.0, 1.0, 4.0, 1.5]), "already diagonal")

    # ---- covariance --------------------------------------------------------------------------
    x = 1e4 + rng.standard_normal((500, 5)) @ rng.standard_normal((5, 5))
    manifest["covariance"].append({
        "name": "offset5",
        "data": save("cov_offset5_data", x),
        "mean": save("cov_offset5_mean", x.mean(axis=0)),
        "cov_ddof0": save("cov_offset5_ddof0", np.cov(x, rowvar=False, ddof=0)),
        "cov_ddof1": save("cov_offset5_ddof1", np.cov(x, rowvar=False, ddof=1)),
        "tol_rel": 1e-12,
    })

    # ---- digits: the real data set scikit-learn bundles -----------------------------------------
    digits = load_digits()
    np.save(DATA / "digits_x.npy", digits.data.astype(np.uint8))  # values are 0..16
    np.save(DATA / "digits_y.npy", digits.target.astype(np.int64))
    nonconst = digits.data[:, digits.data.std(axis=0) > 0]

    # ---- PCA(whiten=True): ddof 1 --------------------------------------------------------------
    synth = rng.laplace(size=(1000, 10)) @ rng.standard_normal((10, 10)) + rng.uniform(-5, 5, 10)
    for name, data, k, src in (("synth10", synth, 4, None), ("digits", digits.data, 20, "digits")):
        pca = PCA(n_components=k, whiten=True, svd_solver="full").fit(data)
        manifest["pca"].append({
            "name": name,
            "data": src or save(f"pca_{name}_data", data),
            "n_components": k,
            "mean": save(f"pca_{name}_mean", pca.mean_),
            "components": save(f"pca_{name}_components", pca.components_),
            "explained_variance": save(f"pca_{name}_explained_variance", pca.explained_variance_),
            "transformed": save(f"pca_{name}_transformed", pca.transform(data)),
            "tol": 1e-8,
        })

    # ---- FastICA(whiten_solver="eigh") whitening: ddof 0, first-entry sign --------------------
    cases = (("synth10", synth, 10), ("synth10_k6", synth, 6), ("digits_nonconst", nonconst, 30))
    for name, data, k in cases:
        ica = FastICA(n_components=k, whiten="unit-variance", whiten_solver="eigh",
                      w_init=np.eye(k), max_iter=1, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ica.fit(data)
        entry = {
            "name": name,
            "n_components": k,
            "mean": save(f"icaw_{name}_mean", ica.mean_),
            # scikit-learn stores K without the sqrt(N) it applies before the solver.
            "whitening_times_sqrt_n": save(f"icaw_{name}_whitening", ica.whitening_ * np.sqrt(data.shape[0])),
            "tol": 1e-8,
        }
        entry["data"] = "digits_nonconst" if name.startswith("digits") else f"pca_synth10_data.npy"
        manifest["fastica_whitening"].append(entry)

    fastica_fixtures(rng, digits.data[:, digits.data.std(axis=0) > 0])
    metric_fixtures(np.random.default_rng(20260202))
    concentration_fixtures()
    identifiability_fixtures(np.random.default_rng(20260303))

    with open(OUT / "manifest.json", "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def center_and_norm(x):
    """scikit-learn's test helper: each column zero-mean, unit std (ddof 0)."""
    x = x - x.mean(axis=0)
    return x / x.std(axis=0)


def fastica_case(name, x, k, w_init, note, algorithms=("parallel", "deflation"),
                 funs=("logcosh", "exp", "cube"), whitens=("unit-variance", "arbitrary-variance", False),
                 dtypes=("float64",), max_iter=200, tol=1e-4, alpha=None):
    """Fits scikit-learn's FastICA(whiten_solver="eigh") for every combination and records it."""
    data_files = {}
    for dtype in dtypes:
        xd = x.astype(dtype)
        data_files[dtype] = save(f"ica_{name}_x_{dtype}", xd)
    # whiten=False expects white data: scikit-learn's own test whitens with PCA(whiten=True) first.
    white = PCA(n_components=k, whiten=True).fit_transform(x)
    for dtype in dtypes:
        data_files["white_" + dtype] = save(f"ica_{name}_white_{dtype}", white.astype(dtype))
    w_file = save(f"ica_{name}_w_init", w_init)
    for algorithm in algorithms:
        for fun in funs:
            for whiten in whitens:
                for dtype in dtypes:
                    xin = (white if whiten is False else x).astype(dtype)
                    fun_args = {"alpha": alpha} if alpha is not None else None
                    ica = FastICA(n_components=k if whiten is not False else None, algorithm=algorithm,
                                  fun=fun, fun_args=fun_args, whiten=whiten, whiten_solver="eigh",
                                  w_init=w_init, max_iter=max_iter, tol=tol)
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        sources = ica.fit_transform(xin)
                    not_converged = any(issubclass(c.category, ConvergenceWarning) for c in caught)
                    tag = f"{name}_{algorithm}_{fun}_{whiten or 'none'}_{dtype}"
                    manifest["fastica"].append({
                        "name": tag,
                        "note": note,
                        "data": data_files[("white_" if whiten is False else "") + dtype],
                        "dtype": dtype,
                        "n_components": int(ica.components_.shape[0]),
                        "algorithm": algorithm,
                        "fun": fun,
                        "alpha": alpha if alpha is not None else 1.0,
                        "whiten": whiten or "false",
                        "max_iter": max_iter,
                        "tol": tol,
                        "w_init": w_file,
                        "n_iter": int(ica.n_iter_),
                        # Only the parallel solver warns; deflation never does.
                        "convergence_warning": bool(not_converged),
                        "sources": save(f"ica_{tag}_sources", sources.astype(np.float64)),
                        "components": save(f"ica_{tag}_components", ica.components_.astype(np.float64)),
                        "mixing": save(f"ica_{tag}_mixing", ica.mixing_.astype(np.float64)),
                        "rtol": 1e-6 if dtype == "float64" else 1e-3,
                    })


def fastica_fixtures(rng, digits_nonconst):
    n = 1000
    # scikit-learn's test_fastica_simple problem: square wave and Cauchy, rotation phi = 0.6.
    t = np.linspace(0, 100, n)
    s1 = (2 * np.sin(t) > 0) - 1.0
    s2 = rng.standard_t(1, size=n)
    s = center_and_norm(np.c_[s1, s2])
    phi = 0.6
    mixing = np.array([[np.cos(phi), np.sin(phi)], [np.sin(phi), -np.cos(phi)]])
    x = s @ mixing.T
    w2 = rng.standard_normal((2, 2))
    fastica_case("square_cauchy", x, 2, w2, "scikit-learn's simple problem: square wave + Cauchy",
                 dtypes=("float64", "float32"))
    noisy = center_and_norm(x + 0.1 * rng.standard_normal(x.shape))
    fastica_case("square_cauchy_noisy", noisy, 2, w2, "the same with 0.1 Gaussian noise",
                 whitens=("unit-variance",))
    # Laplace and uniform sources, random mixing.
    s = np.c_[rng.laplace(size=(2000, 2)), rng.uniform(-1, 1, size=(2000, 2))]
    x = s @ rng.standard_normal((4, 4)).T + rng.uniform(-3, 3, 4)
    fastica_case("laplace_uniform", x, 4, rng.standard_normal((4, 4)), "2 Laplace + 2 uniform sources",
                 funs=("logcosh", "exp", "cube"), whitens=("unit-variance", "arbitrary-variance"),
                 dtypes=("float64", "float32"))
    fastica_case("laplace_uniform_alpha", x, 4, rng.standard_normal((4, 4)), "logcosh with alpha = 1.5",
                 funs=("logcosh",), whitens=("unit-variance",), alpha=1.5)
    # test_non_square_fastica: two sources in six features, k = 2.
    t = np.linspace(0, 100, n)
    s = center_and_norm(np.c_[np.sin(t), np.ceil(np.sin(np.pi * t))])
    x = s @ rng.standard_normal((6, 2)).T
    fastica_case("non_square", x, 2, rng.standard_normal((2, 2)), "2 sources in 6 features, k = 2",
                 funs=("logcosh",), whitens=("unit-variance", "arbitrary-variance"))
    # The cocktail party of scikit-learn's example: sine, square, sawtooth.
    from scipy import signal
    t = np.linspace(0, 8, 2000)
    s = np.c_[np.sin(2 * t), np.sign(np.sin(3 * t)), signal.sawtooth(2 * np.pi * t)]
    s += 0.2 * rng.standard_normal(s.shape)
    s /= s.std(axis=0)
    x = s @ np.array([[1, 1, 1], [0.5, 2, 1.0], [1.5, 1.0, 2.0]]).T
    fastica_case("cocktail", x, 3, rng.standard_normal((3, 3)), "sine, square and sawtooth",
                 funs=("logcosh", "cube"), whitens=("unit-variance",), dtypes=("float64", "float32"))
    # Real data: the digits' non-constant pixels, 10 components.
    fastica_case("digits", digits_nonconst, 10, rng.standard_normal((10, 10)), "digits, 10 components",
                 funs=("logcosh",), whitens=("unit-variance",))
    # Gaussian sources: no direction is special, so the iteration runs to max_iter.
    x = rng.standard_normal((1000, 3)) @ rng.standard_normal((3, 3)).T
    fastica_case("gaussian", x, 3, rng.standard_normal((3, 3)), "Gaussian sources, runs to max_iter",
                 funs=("logcosh",), whitens=("unit-variance",), max_iter=8, tol=1e-12)
    # D = 256 (issue 7): 32 Laplace sources in 256 features plus a little Gaussian noise, k = 32.
    # Its own generator, so that the cases above and below keep their data. With 3000 rows every
    # combination converges in 10 to 15 iterations (at k = 256 on noise directions, or with few
    # rows, scikit-learn itself does not); the files stay near 12 MB.
    r256 = np.random.default_rng(256)
    n256, d256, k256 = 3000, 256, 32
    s = r256.laplace(size=(n256, k256))
    x = (s @ r256.standard_normal((d256, k256)).T + 0.1 * r256.standard_normal((n256, d256))
         + r256.uniform(-3, 3, d256))
    fastica_case("laplace_d256", x, k256, r256.standard_normal((k256, k256)),
                 "32 Laplace sources in 256 noisy features, k = 32", whitens=("unit-variance",))


def metric_fixtures(rng):
    from scipy.optimize import linear_sum_assignment
    from scipy.stats import spearmanr
    from sklearn.metrics import roc_auc_score

    # ---- AUROC: scikit-learn's roc_auc_score --------------------------------------------------
    def auroc_case(name, y, s, w=None):
        # Labels as int8; scores as float32 when that is exact (the million-sample case).
        exact32 = np.array_equal(s.astype(np.float32).astype(np.float64), s)
        entry = {"name": name, "labels": save(f"auroc_{name}_labels", y.astype(np.int8)),
                 "scores": save(f"auroc_{name}_scores", s.astype(np.float32) if exact32 and s.size > 10**5 else s)}
        entry["auroc"] = float(roc_auc_score(y, s, sample_weight=w))
        if w is not None:
            entry["weights"] = save(f"auroc_{name}_weights", w)
        manifest["auroc"].append(entry)
    auroc_case("golden_ties", np.array([0, 1, 0, 1, 1, 0]), np.array([0.5, 0.5, 0.2, 0.9, 0.5, 0.5]))
    auroc_case("golden_weighted", np.array([0, 1, 0, 1, 1, 0]), np.array([0.5, 0.5, 0.2, 0.9, 0.5, 0.5]),
               np.array([1, 2, 1, 1, 3, 0.5]))
    y = rng.integers(0, 2, 5000)
    auroc_case("heavy_ties", y, np.round(rng.standard_normal(5000) + 0.3 * y, 1))
    auroc_case("weighted_ties", y, np.round(rng.standard_normal(5000) + 0.3 * y, 1), rng.uniform(0, 3, 5000))
    auroc_case("zero_weights", y, rng.standard_normal(5000) + 0.5 * y, rng.integers(0, 3, 5000).astype(float))
    y = rng.integers(0, 2, 1_000_000)
    auroc_case("million", y, (rng.standard_normal(1_000_000) + 0.2 * y).astype(np.float32).astype(np.float64))

    # ---- linear_sum_assignment: scipy ------------------------------------------------------------
    def lsa_case(name, cost, maximize=False):
        entry = {"name": name, "cost": save(f"lsa_{name}", cost), "maximize": maximize}
        try:
            r, c = linear_sum_assignment(cost, maximize=maximize)
            entry.update(rows=r.tolist(), cols=c.tolist(), total=float(cost[r, c].sum()))
        except ValueError as e:
            entry["error"] = str(e)
        manifest["assignment"].append(entry)
    lsa_case("golden3", np.array([[4.0, 1, 3], [2, 0, 5], [3, 2, 2]]))
    lsa_case("wide3x4", np.array([[1.0, 2, 3, 4], [2, 4, 6, 8], [3, 6, 9, 12]]))
    lsa_case("tall4x3", np.array([[1.0, 2, 3, 4], [2, 4, 6, 8], [3, 6, 9, 12]]).T.copy())
    lsa_case("ones", np.ones((3, 3)))
    lsa_case("random64", rng.standard_normal((64, 64)))
    lsa_case("random64_max", rng.standard_normal((64, 64)), maximize=True)
    lsa_case("random256", rng.uniform(0, 1, (256, 256)))
    lsa_case("rect40x90", rng.integers(0, 5, (40, 90)).astype(float))
    lsa_case("rect90x40_max", rng.integers(0, 5, (90, 40)).astype(float), maximize=True)
    lsa_case("ties", rng.integers(0, 3, (30, 30)).astype(float))
    lsa_case("forbidden", np.array([[np.inf, 1.0], [1.0, np.inf]]))
    lsa_case("infeasible", np.array([[np.inf, np.inf], [1.0, 1.0]]))
    lsa_case("nan", np.array([[1.0, np.nan], [1.0, 1.0]]))
    lsa_case("neg_inf", np.array([[1.0, -np.inf], [1.0, 1.0]]))
    lsa_case("pos_inf_max", np.array([[1.0, np.inf], [1.0, 1.0]]), maximize=True)

    # ---- MCC as the identifiability papers compute it ---------------------------------------------
    def mcc_reference(x, y, method):
        d = x.shape[1]
        if method == "pearson":
            cc = np.corrcoef(x, y, rowvar=False)[:d, d:]
        else:
            cc = spearmanr(x, y)[0][:d, d:]
        cc = np.abs(cc)
        r, c = linear_sum_assignment(-cc)
        return float(cc[r, c].mean()), c.tolist()
    def mcc_case(name, x, y):
        entry = {"name": name, "true": save(f"mcc_{name}_true", x), "estimated": save(f"mcc_{name}_est", y)}
        for method in ("pearson", "spearman"):
            entry[method], entry[method + "_pairs"] = mcc_reference(x, y, method)
        manifest["mcc"].append(entry)
    z = np.random.default_rng(0).standard_normal((500, 3))
    zhat = z[:, [2, 0, 1]] * np.array([2.0, -3.0, 0.5]) + 0.01 * np.random.default_rng(1).standard_normal((500, 3))
    mcc_case("anchor_golden", z, zhat)
    s = rng.laplace(size=(2000, 5))
    mcc_case("noisy_monotone", s, np.tanh(s[:, [4, 3, 2, 1, 0]]) + 0.3 * rng.standard_normal((2000, 5)))
    mcc_case("ties", np.round(rng.standard_normal((300, 4)), 0), np.round(rng.standard_normal((300, 4)), 0))

    # ---- Amari index (classic, normalised by 2k(k-1)) ------------------------------------------
    def amari_reference(p):
        p = np.abs(p)
        k = p.shape[0]
        rows = (p.sum(axis=1) / p.max(axis=1) - 1).sum()
        cols = (p.sum(axis=0) / p.max(axis=0) - 1).sum()
        return float((rows + cols) / (2 * k * (k - 1)))
    def amari_case(name, w, a):
        manifest["amari"].append({"name": name, "unmixing": save(f"amari_{name}_w", w),
                                  "mixing": save(f"amari_{name}_a", a), "amari": amari_reference(w @ a)})
    a = np.array([[1.0, 2], [3, 4]])
    amari_case("identity", np.eye(2), a)
    amari_case("inverse", np.linalg.inv(a), a)
    amari_case("scaled_permutation", np.array([[0.0, 2], [-1, 0]]) @ np.linalg.inv(a), a)
    amari_case("random5", rng.standard_normal((5, 5)), rng.standard_normal((5, 5)))
    amari_case("rect", rng.standard_normal((3, 7)), rng.standard_normal((7, 3)))

    # ---- Hoyer sparsity ------------------------------------------------------------------------
    def hoyer(c):
        c = np.abs(np.asarray(c, dtype=float))
        d = c.size
        return float((np.sqrt(d) - c.sum() / np.sqrt((c ** 2).sum())) / (np.sqrt(d) - 1))
    for name, c in (("one_hot", [1, 0, 0, 0]), ("uniform", [1, 1, 1, 1]), ("pair", [1, -1, 0, 0]),
                    ("golden", [3, 1, 0, 0]), ("fractions", rng.dirichlet(np.ones(64) * 0.3))):
        c = np.asarray(c, dtype=float)
        manifest["hoyer"].append({"name": name, "vector": save(f"hoyer_{name}", c), "sparsity": hoyer(c)})


def sklearn_concentration(x, y, seed, top=0.25, test_fraction=0.25):
    """The paper's concentration with scikit-learn's GradientBoostingClassifier() defaults: a
    stratified split, split counts from every tree, the top ceil(top * D) features (ties broken
    by a seeded permutation) and the rest each scored by held-out AUROC."""
    import math
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=test_fraction, stratify=y, random_state=seed)
    counts = np.zeros(x.shape[1])
    for tree in GradientBoostingClassifier(random_state=seed).fit(xtr, ytr).estimators_[:, 0]:
        used = tree.tree_.feature[tree.tree_.feature >= 0]
        np.add.at(counts, used, 1)
    fractions = counts / counts.sum()
    d = x.shape[1]
    perm = np.random.default_rng(seed).permutation(d)
    order = perm[np.argsort(-fractions[perm], kind="stable")]
    k = math.ceil(top * d)
    def auroc(cols):
        model = GradientBoostingClassifier(random_state=seed).fit(xtr[:, cols], ytr)
        return float(roc_auc_score(yte, model.predict_proba(xte[:, cols])[:, 1]))
    auroc_top, auroc_rest = auroc(np.sort(order[:k])), auroc(np.sort(order[k:]))
    return {"seed": seed, "split_fractions": fractions.tolist(), "top_features": np.sort(order[:k]).tolist(),
            "auroc_top": auroc_top, "auroc_rest": auroc_rest, "concentration": auroc_top / auroc_rest - 1}


def concentration_fixtures():
    """Cases where the tree settings decide the answer, scored by scikit-learn over five seeds."""
    def case(name, x, y, note, tolerance):
        runs = [sklearn_concentration(x, y, seed) for seed in range(5)]
        manifest["concentration"].append({
            "name": name, "features": save(f"concentration_{name}_x", x), "labels": save(f"concentration_{name}_y", y),
            "runs": runs, "mean_concentration": float(np.mean([r["concentration"] for r in runs])),
            "tolerance_mean_concentration": tolerance, "note": note})
    # 777 rows, 7 % positives, a binary feature equal to the label and one Gaussian noise feature:
    # forust's defaults (min leaf hessian 1, L2 1, 256 bins) put the noise feature on top here.
    rng = np.random.default_rng(777)
    n = 777
    y = np.zeros(n, dtype=np.int64)
    y[rng.choice(n, round(0.07 * n), replace=False)] = 1
    x = np.column_stack([y.astype(float), rng.standard_normal(n)])
    case("binary_and_noise_777", x, y,
         "the label feature must rank first; means over seeds 0..4 of different splits (ours and scikit-learn's) agree within the tolerance", 0.15)
    # Two informative features of eight, the label a noisy logistic function of them.
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1200, 8))
    y = (x[:, 2] + 0.8 * x[:, 5] + 0.5 * rng.standard_normal(1200) > 0).astype(np.int64)
    case("two_of_eight", x, y, "features 2 and 5 carry the label; means over seeds 0..4 agree within the tolerance", 0.1)


def identifiability_fixtures(rng):
    """Alignment maps (scipy's orthogonal_procrustes, numpy's lstsq) and InfoMEC (Hsu et al.'s
    formulas over scikit-learn's mutual_info_classif, mutual_info_score, LogisticRegression)."""
    from scipy.linalg import orthogonal_procrustes
    from scipy.optimize import linear_sum_assignment
    from sklearn.feature_selection import mutual_info_classif
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss, mutual_info_score
    from sklearn.preprocessing import StandardScaler

    # ---- alignment: B -> A by signed permutation, orthogonal Procrustes and least squares --------
    def mean_dist(a, b_hat):
        return float(np.linalg.norm(a - b_hat, axis=1).mean())

    def alignment_case(name, a, b, note):
        ac, bc = a - a.mean(axis=0), b - b.mean(axis=0)
        if a.shape == b.shape:
            r, _ = orthogonal_procrustes(bc, ac)  # argmin |bc R - ac|, R is db x da
        else:
            u, _, vt = np.linalg.svd(bc.T @ ac, full_matrices=False)
            r = u @ vt  # the same formula for a semi-orthogonal R
        design = np.c_[b, np.ones(len(b))]
        coef = np.linalg.lstsq(design, a, rcond=None)[0]  # (db + 1) x da
        da = a.shape[1]
        cc = np.abs(np.corrcoef(a, b, rowvar=False)[:da, da:])
        rows, cols = linear_sum_assignment(-cc)
        perm = np.zeros((da, b.shape[1]))
        signed = np.corrcoef(a, b, rowvar=False)[:da, da:]
        perm[rows, cols] = np.where(signed[rows, cols] < 0, -1.0, 1.0)
        manifest["alignment"].append({
            "name": name,
            "note": note,
            "a": save(f"align_{name}_a", a),
            "b": save(f"align_{name}_b", b),
            "rigid_map": save(f"align_{name}_rigid_map", r.T),  # da x db: b_hat = mean_a + M (b - mean_b)
            "linear_map": save(f"align_{name}_linear_map", coef[:-1].T),
            "permutation_map": save(f"align_{name}_permutation_map", perm),
            "diameter": float(2 * np.linalg.norm(ac, axis=1).max()),
            "raw": {
                "rigid": mean_dist(ac, bc @ r),
                "linear": mean_dist(a, design @ coef),
                "permutation": mean_dist(ac, bc @ perm.T),
            },
            "rtol": 1e-8,
        })

    n = 600
    s = np.c_[rng.laplace(size=(n, 2)), rng.uniform(-2, 2, size=(n, 2))]
    a = s @ rng.standard_normal((4, 4)) + rng.uniform(-3, 3, 4)
    q = random_orthogonal(rng, 4)
    alignment_case("near_rigid", a, a @ q * 1.3 + 2.0 + 0.3 * rng.standard_normal((n, 4)),
                   "B = 1.3 A Q + 2 + noise")
    alignment_case("general", a, np.tanh(a @ rng.standard_normal((4, 4))) + 0.1 * rng.standard_normal((n, 4)),
                   "B = tanh(A M) + noise: no map is exact")
    alignment_case("wide", a[:, :3], a @ rng.standard_normal((4, 5)) + 0.2 * rng.standard_normal((n, 5)),
                   "da = 3 < db = 5")
    alignment_case("tall", a, a[:, :2] @ rng.standard_normal((2, 2)) + 0.2 * rng.standard_normal((n, 2)),
                   "da = 4 > db = 2")

    # ---- InfoMEC: Hsu et al.'s definitions over scikit-learn's estimators ----------------------
    def infomec_reference(factors, latents):
        z = StandardScaler().fit_transform(latents)
        f, l = factors.shape[1], latents.shape[1]
        nmi = np.empty((f, l))
        for i in range(f):
            for j in range(l):
                nmi[i, j] = mutual_info_classif(z[:, [j]], factors[:, i], n_neighbors=10, random_state=0)[0]
            nmi[i] /= mutual_info_score(factors[:, i], factors[:, i])
        ranges = latents.max(axis=0) - latents.min(axis=0)
        active = ranges > ranges.max() / 20
        pruned = nmi[:, active]
        la = active.sum()

        def share(m, axis, count):
            # Where every NMI is 0 the share is undefined (NaN in Hsu et al.'s code); unmix counts it
            # as 1/count, i.e. no preference. No case below has such a row or column.
            total = m.sum(axis=axis)
            return np.where(total > 0, m.max(axis=axis) / np.where(total > 0, total, 1), 1 / count)
        infom = (np.mean(share(pruned, 0, f)) - 1 / f) / (1 - 1 / f)
        infoc = (np.mean(share(pruned, 1, la)) - 1 / la) / (1 - 1 / la)

        def loss(x, y):
            # penalty=None, deprecated in scikit-learn 1.8 in favour of C=inf (the same model).
            model = LogisticRegression(C=np.inf, class_weight="balanced", max_iter=10000)
            model.fit(x, y)
            return log_loss(y, model.predict_proba(x))
        infoe = np.mean([(loss(np.zeros_like(z), factors[:, i]) - loss(z, factors[:, i]))
                         / loss(np.zeros_like(z), factors[:, i]) for i in range(f)])
        return nmi, active, float(infom), float(infoc), float(infoe)

    def infomec_case(name, factors, latents, note):
        nmi, active, infom, infoc, infoe = infomec_reference(factors, latents)
        manifest["infomec"].append({
            "name": name,
            "note": note,
            "factors": save(f"infomec_{name}_factors", factors.astype(np.int64)),
            "latents": save(f"infomec_{name}_latents", latents),
            "nmi": save(f"infomec_{name}_nmi", nmi),
            "active": active.tolist(),
            "infom": infom,
            "infoc": infoc,
            "infoe": infoe,
            "tol": 1e-3,
            "infoe_tol": 2e-2,
        })

    n = 2000
    factors = np.c_[rng.integers(0, 3, n), rng.integers(0, 4, n), rng.integers(0, 5, n)]
    noise = rng.standard_normal((n, 5))
    latents = np.c_[factors[:, 0] + 0.3 * noise[:, 0],
                    factors[:, 1] + 0.5 * factors[:, 0] + 0.4 * noise[:, 1],
                    factors[:, 2] + 1.5 * noise[:, 2],
                    0.5 * factors[:, 1] - factors[:, 2] + noise[:, 3],
                    0.01 * noise[:, 4]]
    infomec_case("modular", factors, latents,
                 "latent 0 reads factor 0, 1 factors 1 and 0, 2 factor 2 noisily, 3 factors 1 and 2, 4 inactive")
    rot = random_orthogonal(rng, 3)
    infomec_case("entangled", factors, (factors - factors.mean(axis=0)) @ rot + 0.3 * rng.standard_normal((n, 3)),
                 "the factors rotated, plus noise")
    rare = factors[:, :2].copy()
    rare[0, 1] = 9  # a label seen once: left out of I, counted in H
    infomec_case("rare_label", rare, latents[:, :4] + 0.05 * rng.standard_normal((n, 4)),
                 "a factor with a label seen once")


if __name__ == "__main__":
    main()
