"""Benchmarks of the Python package, every side in the same run.

1. The in-memory fit: unmix.FastICA against scikit-learn's FastICA (whiten_solver="eigh", the
   same w_init, so the same iterations), and against the extension's own fit function called
   directly (the Python layer's overhead: validation, the start, the attributes). With --cli,
   also the `unmix fit` command on the same data (its wall time includes reading the .npy and
   writing the model and sources).
2. Dask: unmix.dask.FastICA on a LocalCluster of 1 and then 2 worker processes (one thread
   each), the data generated on the workers block by block.

    python python/bench/bench.py [--cli target/release/unmix] [--rows 100000] [--dim 8]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np


def median_time(f, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def data(n, d, seed=0):
    rng = np.random.RandomState(seed)
    s = np.c_[rng.laplace(size=(n, (d + 1) // 2)), rng.uniform(-1.7, 1.7, size=(n, d // 2))]
    return np.ascontiguousarray(s @ rng.standard_normal((d, d)) + 1.0)


def in_memory(args):
    from sklearn.decomposition import FastICA as SkFastICA
    from threadpoolctl import threadpool_limits

    import unmix
    from unmix import _unmix

    n, d = args.rows, args.dim
    x = data(n, d)
    w = np.random.RandomState(1).standard_normal((d, d))
    print(f"## in memory: N = {n}, D = {d}, float64, whiten_solver='eigh', same w_init; median of {args.repeat}")
    ref = SkFastICA(whiten_solver="eigh", w_init=w).fit(x)
    ours = unmix.FastICA(whiten_solver="eigh", w_init=w).fit(x)
    assert ours.n_iter_ == ref.n_iter_, (ours.n_iter_, ref.n_iter_)
    print(f"iterations: {ours.n_iter_} (both)")
    rows = []
    for threads in (1, 2):
        # Interleaved, so that a busy machine slows every side alike.
        t_sk, t_py, t_rs = [], [], []
        for _ in range(args.repeat):
            with threadpool_limits(threads):
                t_sk.append(median_time(lambda: SkFastICA(whiten_solver="eigh", w_init=w).fit(x), 1))
            t_py.append(median_time(
                lambda: unmix.FastICA(whiten_solver="eigh", w_init=w, n_threads=threads).fit(x), 1))
            t_rs.append(median_time(lambda: _unmix.fastica_fit(
                x, d, "parallel", "unit-variance", "logcosh", 1.0, 200, 1e-4, w, False, threads), 1))
        rows.append((threads, np.median(t_sk), np.median(t_py), np.median(t_rs)))
    print("| threads | scikit-learn | unmix.FastICA.fit | extension call alone | Python overhead | vs scikit-learn |")
    print("|---:|---:|---:|---:|---:|---:|")
    for threads, t_sk, t_py, t_rs in rows:
        print(f"| {threads} | {t_sk * 1e3:.1f} ms | {t_py * 1e3:.1f} ms | {t_rs * 1e3:.1f} ms | "
              f"{(t_py - t_rs) * 1e3:+.2f} ms | {t_sk / t_py:.2f}x faster |")
    if args.cli:
        with tempfile.TemporaryDirectory() as tmp:
            np.save(os.path.join(tmp, "x.npy"), x)
            np.save(os.path.join(tmp, "w.npy"), w)
            for threads in (1, 2):
                cmd = [args.cli, "fit", "--input", f"{tmp}/x.npy", "--model", f"{tmp}/m.json",
                       "--w-init", f"{tmp}/w.npy", "--threads", str(threads)]
                t = median_time(lambda: subprocess.run(cmd, check=True, capture_output=True), args.repeat)
                t_py = [r for r in rows if r[0] == threads][0][2]
                print(f"`unmix fit` (CLI, {threads} thread(s), incl. process start and file I/O): {t * 1e3:.1f} ms;"
                      f" unmix.FastICA.fit: {t_py * 1e3:.1f} ms")


def _block(rows, d, seed, block_id=None):
    rng = np.random.default_rng([seed, block_id[0]])
    s = rng.laplace(size=(rows, d))
    mix = np.random.default_rng(seed).standard_normal((d, d))
    return s @ mix


def dask_scaling(args):
    import dask.array as da
    import distributed

    import unmix.dask

    rows, d, blocks = args.dask_block_rows, args.dask_dim, args.dask_blocks
    x = da.map_blocks(_block, rows, d, 3, chunks=((rows,) * blocks, (d,)), dtype=np.float64,
                      meta=np.empty((0, d)))
    print(f"\n## Dask: N = {rows * blocks}, D = {d}, float64, {blocks} blocks of {rows} rows generated on the "
          f"workers; median of {args.repeat}")
    w = np.random.RandomState(1).standard_normal((d, d))
    results = {}
    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      dashboard_address=":0") as cluster, distributed.Client(cluster) as c:
            est = unmix.dask.FastICA(w_init=w).fit(x)  # warm the workers
            t_gen = median_time(lambda: unmix.dask.FastICA(w_init=w).fit(x), args.repeat)
            xp = x.persist()
            distributed.wait(xp)
            t_mem = median_time(lambda: unmix.dask.FastICA(w_init=w).fit(xp), args.repeat)
            del xp
            results[workers] = (t_gen, t_mem, est)
            print(f"{workers} worker(s): {t_gen:.2f} s with the blocks generated in every pass, "
                  f"{t_mem:.2f} s with the blocks persisted in the workers' memory "
                  f"({est.n_passes_} passes, {est.n_iter_} iterations)")
    assert np.array_equal(results[1][2].components_, results[2][2].components_)
    print(f"speed-up 1 -> 2 workers: {results[1][0] / results[2][0]:.2f}x generated, "
          f"{results[1][1] / results[2][1]:.2f}x persisted (the same model bits)")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--dim", type=int, default=8)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--cli", help="path of the `unmix` command to time as well")
    p.add_argument("--dask-dim", type=int, default=16)
    p.add_argument("--dask-blocks", type=int, default=8)
    p.add_argument("--dask-block-rows", type=int, default=64 * 4096)
    p.add_argument("--skip-dask", action="store_true")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    in_memory(args)
    if not args.skip_dask:
        dask_scaling(args)


if __name__ == "__main__":
    main()
