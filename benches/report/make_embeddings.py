"""Synthetic "embeddings" at scale for `unmix report` (issue 10: up to 1e6 x 1024 float32).

Independent non-Gaussian factors (Laplace), of which the first two shift with a binary label and
the next two with one of `--groups` batch ids; a random dense map to D features with a mild
tanh distortion and small Gaussian noise. Written block by block, so that generating 4 GB needs
little memory. Usage:

    python benches/report/make_embeddings.py --rows 1000000 --dim 1024 --out /tmp/scale
    # -> /tmp/scale/x.npy (float32), y.npy (int64), g.npy (int64)
"""

import argparse
import os

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--factors", type=int, default=16)
    p.add_argument("--groups", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    mixing = rng.normal(size=(a.factors, a.dim)) / np.sqrt(a.factors)
    n, block = a.rows, 65536
    x = np.lib.format.open_memmap(
        os.path.join(a.out, "x.npy"), mode="w+", dtype=np.float32, shape=(n, a.dim)
    )
    y = np.empty(n, dtype=np.int64)
    g = np.empty(n, dtype=np.int64)
    for start in range(0, n, block):
        m = min(block, n - start)
        s = rng.laplace(size=(m, a.factors)) / np.sqrt(2.0)
        label = (rng.random(m) < 0.3).astype(np.int64)
        group = rng.integers(0, a.groups, size=m)
        s[:, :2] += 1.5 * label[:, None]
        s[:, 2:4] += 0.5 * (group[:, None] - a.groups / 2) / a.groups
        e = s @ mixing
        e = np.tanh(0.3 * e) / 0.3 + 0.05 * rng.normal(size=e.shape)
        x[start : start + m] = e.astype(np.float32)
        y[start : start + m] = label
        g[start : start + m] = group
    x.flush()
    np.save(os.path.join(a.out, "y.npy"), y)
    np.save(os.path.join(a.out, "g.npy"), g)


if __name__ == "__main__":
    main()
