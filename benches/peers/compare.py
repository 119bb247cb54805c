"""Times unmix against scikit-learn and scipy on the same data, in the same run.

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install -r harness/reference/requirements.txt
    /tmp/refvenv/bin/python benches/peers/compare.py

Writes the data to target/peer-data/, times the peers with timeit (median of several runs), runs the
criterion bench `peers` on the same files, and prints both and their ratio. Everything runs on one
thread except the `threads2` row, where both sides get two (scikit-learn through its BLAS, limited
with threadpoolctl).
"""

import json
import os
import pathlib
import subprocess
import timeit

import numpy as np
from threadpoolctl import threadpool_limits
from scipy.optimize import linear_sum_assignment
from sklearn.decomposition import FastICA
from sklearn.metrics import roc_auc_score

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "target" / "peer-data"


def median(fn, repeat):
    """Median of `repeat` single runs: criterion reports medians for unmix, so compare like with like."""
    times = sorted(timeit.repeat(fn, repeat=repeat, number=1))
    return times[len(times) // 2]


def main():
    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 1_000_000)
    s = rng.standard_normal(1_000_000) + 0.3 * y
    np.save(DATA / "auroc_scores.npy", s)
    np.save(DATA / "auroc_labels.npy", y.astype(np.int64))
    cost = rng.uniform(0, 1, (256, 256))
    np.save(DATA / "lsa_cost.npy", cost)
    src = np.c_[rng.laplace(size=(100_000, 4)), rng.uniform(-1, 1, (100_000, 4))]
    x = src @ rng.standard_normal((8, 8)).T
    w_init = rng.standard_normal((8, 8))
    np.save(DATA / "ica_x.npy", x)
    np.save(DATA / "ica_w_init.npy", w_init)

    def ica(threads):
        with threadpool_limits(limits=threads):
            return median(lambda: FastICA(8, whiten_solver="eigh", w_init=w_init).fit(x), 9)

    with threadpool_limits(limits=1):
        auroc_t = median(lambda: roc_auc_score(y, s), 9)
        lsa_t = median(lambda: linear_sum_assignment(cost), 51)
    ica1, ica2 = ica(1), ica(2)
    peers = {
        "auroc_1e6": ("sklearn roc_auc_score", auroc_t),
        "assignment_256": ("scipy linear_sum_assignment", lsa_t),
        "fastica/fit_n1e5_d8": ("sklearn FastICA(whiten_solver='eigh')", ica1),
        "fastica/cli_fit_n1e5_d8_threads1": ("sklearn FastICA, 1 thread", ica1),
        "fastica/cli_fit_n1e5_d8_threads2": ("sklearn FastICA, 2 threads", ica2),
    }
    env = dict(os.environ, UNMIX_BENCH_DATA=str(DATA))
    subprocess.run(["cargo", "bench", "-p", "unmix-benches", "--bench", "peers", "--",
                    "--warm-up-time", "1", "--measurement-time", "3"], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    print(f"{'kernel':34} {'unmix':>10} {'peer':>10}  ratio  peer")
    for name, (peer, t_peer) in peers.items():
        est = json.loads((ROOT / "target" / "criterion" / name / "new" / "estimates.json").read_text())
        t_ours = est["median"]["point_estimate"] / 1e9
        print(f"{name:34} {t_ours * 1e3:8.2f}ms {t_peer * 1e3:8.2f}ms {t_peer / t_ours:5.1f}x  {peer}")


if __name__ == "__main__":
    main()
