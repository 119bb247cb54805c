"""Times unmix against scikit-learn and scipy on the same data, in the same run.

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install -r harness/reference/requirements.txt
    /tmp/refvenv/bin/python benches/peers/compare.py
    /tmp/refvenv/bin/python benches/peers/compare.py --embedding   # N x D up to 1e5 x 768 (slow)
    /tmp/refvenv/bin/python benches/peers/compare.py --whiten      # unmix whiten against numpy

Writes the data to target/peer-data/, times the peers with timeit (median of several runs), runs the
criterion bench `peers` on the same files, and prints both and their ratio. Everything runs on one
thread except the `threads2` row, where both sides get two (scikit-learn through its BLAS, limited
with threadpoolctl).
"""

import json
import os
import pathlib
import subprocess
import time
import timeit

import numpy as np
from threadpoolctl import threadpool_limits
from scipy.optimize import linear_sum_assignment
from sklearn.decomposition import FastICA
from sklearn.metrics import roc_auc_score

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "target" / "peer-data"


def middle(times):
    """The median of collected times (the upper middle one of an even count)."""
    return sorted(times)[len(times) // 2]


def median(fn, repeat):
    """Median of `repeat` single runs: criterion reports medians for unmix, so compare like with like."""
    return middle(timeit.repeat(fn, repeat=repeat, number=1))


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


# Embedding scale (issue 7): N x D, components K.
SIZES = [(1_000_000, 8, 8), (100_000, 64, 64), (20_000, 256, 256), (100_000, 768, 64)]


def unmix_process(args, threads, env=None, exe=None):
    """Wall time of one `unmix` process (loading and writing included), in seconds."""
    exe = exe or ROOT / "target" / "release" / "unmix"
    start = time.perf_counter()
    subprocess.run([str(exe), *args, "--threads", str(threads)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def machine_rates(threads, repeat):
    """This machine's rates on `threads` threads, measured by numpy in the same run: the matmul
    rate (GF/s) of a 1024 x 1024 x 1024 product, and the read bandwidth (GB/s) of summing
    256 MB, split among `threads` Python threads (numpy releases the GIL in the sum)."""
    from concurrent.futures import ThreadPoolExecutor

    a = np.random.default_rng(1).standard_normal((1024, 1024))
    with threadpool_limits(limits=threads):
        gemm = median(lambda: a @ a, repeat)
    big = np.ones(32 << 20)
    parts = np.array_split(big, threads)
    with ThreadPoolExecutor(threads) as pool:
        read = median(lambda: list(pool.map(np.sum, parts)), repeat)
    return 2 * 1024**3 / gemm / 1e9, big.nbytes / read / 1e9


def build_harness():
    """The `unmix` binary and `kernel_timings` (for `print_machine_rates`), in one cargo call."""
    subprocess.run(["cargo", "build", "--release", "-p", "harness", "--bins", "--example",
                    "kernel_timings"], cwd=ROOT, check=True)


def print_machine_rates(repeat):
    """`machine_rates` on one and on two threads, printed; keyed by the thread count. Then one
    core's f64 multiply-add ceiling (`kernel_timings peak`), which no product on it can pass.
    The rate each thread count returns is the faster of numpy's and that ceiling times the
    threads: where numpy's BLAS runs narrower vectors than the core has (OpenBLAS 0.3.31 takes
    its Haswell kernels on Zen 5, at half the ceiling), numpy's rate is no bound."""
    rates = {threads: machine_rates(threads, repeat) for threads in (1, 2)}
    for threads, (rate, bandwidth) in rates.items():
        print(f"{threads} thread(s): numpy matmul 1024^3 {rate:.1f} GF/s, read {bandwidth:.1f} GB/s")
    peak = subprocess.run([str(ROOT / "target" / "release" / "examples" / "kernel_timings"), "peak"],
                          capture_output=True, text=True, check=True).stdout
    print(peak, end="")
    ceiling = max(float(line.split()[-2]) for line in peak.splitlines() if line.endswith("GF/s"))
    return {threads: (max(rate, ceiling * threads), bandwidth)
            for threads, (rate, bandwidth) in rates.items()}


def iteration_bound(n, k, rate, bandwidth):
    """Lower bound (s) of one parallel FastICA iteration on N x K white rows (issue 7's cost
    model, `benches/README.md`): the two products (4 K^2 N flops) at `rate` GF/s or the rows
    read once (8 K N bytes) at `bandwidth` GB/s, whichever is longer, plus the update's K^3
    work (about 15 K^3 flops) at `rate`. The contrast is left out: the bound is the machine's,
    not any one `tanh`'s."""
    return max(4 * k * k * n / (rate * 1e9), 8 * k * n / (bandwidth * 1e9)) + 15 * k**3 / (rate * 1e9)


def whitening_bound(n, d, k, rate, bandwidth):
    """Lower bound (s) of centring, covariance, eigen-decomposition and transform of N x D rows
    to K columns, in memory: the moments (D^2 N flops, one triangle), the eigen-decomposition
    (about 9 D^3) and the transform (2 K D N) at `rate` GF/s, or the input read once and the
    output written once (8 (D + K) N bytes) at `bandwidth` GB/s, whichever is longer."""
    flops = d * d * n + 9 * d**3 + 2 * k * d * n
    return max(flops / (rate * 1e9), 8 * (d + k) * n / (bandwidth * 1e9))


def embedding(repeat=int(os.environ.get("UNMIX_EMBED_REPEAT", 3)),
              many=int(os.environ.get("UNMIX_EMBED_ITERATIONS", 11)),
              fit_repeat=int(os.environ.get("UNMIX_FIT_REPEAT", 1))):
    """Per-iteration time, whole fit and whitening at embedding sizes, 1 and 2 threads, with
    numpy's matmul rate on the pass shapes measured in the same run. One iteration is
    (fit with max_iter 11 - fit with max_iter 1) / 10 at tol 0, for both sides, the median of
    `repeat` runs each; the last two columns are unmix's iteration on the same file read as
    f32 (`--dtype f32`) and on an f32 `.npy` file of the same values, against its f64
    iteration. On a noisy machine UNMIX_EMBED_ITERATIONS=31 (max_iter 31, / 30)
    and UNMIX_EMBED_REPEAT=5 steady the differences, at about three times the run time.
    Each thread count first measures the machine's matmul rate and read bandwidth
    (`machine_rates`); the iteration and whitening columns then give each side's time as a
    multiple of the lower bound those rates imply (`iteration_bound`, `whitening_bound`).
    The whole fit (default tol) is one run each side; UNMIX_FIT_REPEAT=5 takes the median of
    five on both, for short fits whose single runs vary with the machine (1e6 x 8)."""
    import warnings
    from sklearn.exceptions import ConvergenceWarning

    warnings.filterwarnings("ignore", category=ConvergenceWarning)  # tol 0 runs to max_iter
    build_harness()
    rng = np.random.default_rng(0)
    rates = print_machine_rates(repeat)
    print(f"{'N x D (K)':>18} thr | iteration sk / unmix (ratio) | iteration bound (sk, unmix x it) "
          f"| fit sk / unmix (ratio) | whiten numpy / unmix (bound; x it) | numpy matmul GF/s "
          f"| unmix f32 iteration (--dtype f32) | unmix f32 iteration (f32 file)")
    sizes = SIZES
    if os.environ.get("UNMIX_EMBED_SIZES"):  # e.g. "100000x64x64,20000x256x256"
        sizes = [tuple(int(v) for v in s.split("x")) for s in os.environ["UNMIX_EMBED_SIZES"].split(",")]
    for n, d, k in sizes:
        x = rng.laplace(size=(n, d)) @ rng.standard_normal((d, d)).T
        w = rng.standard_normal((k, k))
        xp, wp = DATA / f"emb_{n}_{d}.npy", DATA / f"emb_w_{k}.npy"
        xp32 = DATA / f"emb_{n}_{d}_f32.npy"
        np.save(xp, x)
        np.save(xp32, x.astype(np.float32))
        np.save(wp, w)
        model = DATA / "emb_model.json"
        for threads in (1, 2):
            with threadpool_limits(limits=threads):
                def sk(it, tol):
                    return FastICA(k, whiten_solver="eigh", w_init=w, max_iter=it, tol=tol).fit(x)
                t1 = median(lambda: sk(1, 0.0), repeat)
                t11 = median(lambda: sk(many, 0.0), repeat)
                sk_fit = median(lambda: sk(200, 1e-4), fit_repeat)

                def numpy_whiten():
                    xc = x - x.mean(axis=0)
                    vals, vecs = np.linalg.eigh(xc.T @ xc / n)
                    return xc @ (vecs[:, ::-1][:, :k] / np.sqrt(vals[::-1][:k]))
                np_white = median(numpy_whiten, repeat)
                # `g @ z.T` with `g` not `z`, as in scikit-learn's pass (`g(WX) X'`): numpy
                # runs `z @ z.T` as a symmetric rank-k update, half the flops, and its rate
                # then read about 1.8x too high (46.0 against 84.8 GF/s on a Zen 4 host).
                z, g = rng.standard_normal((k, n)), rng.standard_normal((k, n))
                wz = median(lambda: w @ z, repeat)
                gz = median(lambda: g @ z.T, repeat)
                rate = 2 * 2 * k * k * n / (wz + gz) / 1e9
            # OpenBLAS's threads spin for a while after numpy's last product (see `whitening`):
            # the first unmix process waits them out.
            time.sleep(0.2)
            fit = ["fit", "--input", str(xp), "--model", str(model), "--n-components", str(k),
                   "--w-init", str(wp), "--tol", "0"]
            u1 = median(lambda: unmix_process(fit + ["--max-iter", "1"], threads), repeat)
            u11 = median(lambda: unmix_process(fit + ["--max-iter", str(many)], threads), repeat)
            u_fit = median(lambda: unmix_process(
                ["fit", "--input", str(xp), "--model", str(model), "--n-components", str(k),
                 "--w-init", str(wp)], threads), fit_repeat)
            u_white = median(lambda: unmix_process(
                ["whiten", "--input", str(xp), "--n-components", str(k), "--output",
                 str(DATA / "emb_z.npy")], threads), repeat)
            # The same file read as f32 (`--dtype f32`): f32 data's iteration against f64's.
            f32 = fit + ["--dtype", "f32"]
            v1 = median(lambda: unmix_process(f32 + ["--max-iter", "1"], threads), repeat)
            v11 = median(lambda: unmix_process(f32 + ["--max-iter", str(many)], threads), repeat)
            # And an f32 `.npy` file of the same values: mapped and released as it is whitened,
            # every white row stored, where the `--dtype f32` copy counts as the input of the
            # memory bound and may leave chunks to be whitened again in each pass.
            f32_file = [str(xp32) if a == str(xp) else a for a in fit]
            q1 = median(lambda: unmix_process(f32_file + ["--max-iter", "1"], threads), repeat)
            q11 = median(lambda: unmix_process(f32_file + ["--max-iter", str(many)], threads), repeat)
            it_sk, it_u, it_f32, it_f32_file = (
                (t - o) / (many - 1) for t, o in ((t11, t1), (u11, u1), (v11, v1), (q11, q1)))
            # The bound takes the fastest of numpy's rate on these shapes, on 1024^3 and the
            # multiply-add ceiling (`print_machine_rates`).
            peak, bandwidth = max(rates[threads][0], rate), rates[threads][1]
            it_b = iteration_bound(n, k, peak, bandwidth)
            wh_b = whitening_bound(n, d, k, peak, bandwidth)
            print(f"{n:>9} x {d:>3} ({k:>3}) {threads:>3} | {it_sk * 1e3:7.1f} / {it_u * 1e3:7.1f} ms "
                  f"({it_sk / it_u:5.2f}x) | {it_b * 1e3:6.1f} ms ({it_sk / it_b:4.2f}, "
                  f"{it_u / it_b:4.2f}) | {sk_fit:6.2f} / {u_fit:6.2f} s ({sk_fit / u_fit:4.1f}x) "
                  f"| {np_white:5.3f} / {u_white:5.3f} s ({wh_b:5.3f} s; {np_white / wh_b:4.2f}, "
                  f"{u_white / wh_b:4.2f}) | {rate:5.1f} "
                  f"| f32 {it_f32 * 1e3:7.1f} ms ({it_u / it_f32:4.2f}x f64) "
                  f"| f32 file {it_f32_file * 1e3:7.1f} ms ({it_u / it_f32_file:4.2f}x f64)")


def whitening(repeat=5):
    """`unmix whiten` (the whole process: load, moments, eigh, transform, self-check, write)
    against numpy's in-process centre + covariance + eigh + transform, numpy with the same
    load and save as the process, and numpy writing as durably as the process does (a
    temporary file, fsync, rename), at the embedding sizes (K = D), 1 and 2 threads; and the
    process writing a new file (the previous output deleted first, untimed): renaming over an
    existing output frees the old file's blocks inside the process, 8-12 ms for 41 MB on a
    disk mounted with `discard`, which the in-process figure never pays. The median of
    `repeat` runs of each, interleaved, so that a change of load hits both sides. The bound
    column is the lower bound of the whitening in memory at the machine's rates, measured at the
    start (`whitening_bound`, `print_machine_rates`: numpy's, or the multiply-add ceiling where
    that is faster); the process also reads and writes
    its files. With UNMIX_BASE_EXE=path/to/unmix another build (e.g. main's) is timed in the
    same rounds, in a last column."""
    build_harness()
    rng = np.random.default_rng(0)
    sizes = [(20_000, 256), (100_000, 64)]
    if os.environ.get("UNMIX_WHITEN_SIZES"):  # e.g. "20000x256,100000x64"
        sizes = [tuple(int(v) for v in s.split("x")) for s in os.environ["UNMIX_WHITEN_SIZES"].split(",")]
    base = os.environ.get("UNMIX_BASE_EXE")
    rates = print_machine_rates(repeat)
    print(f"{'N x D':>12} thr | numpy in-process | numpy load+save | numpy load+save+fsync "
          f"| unmix process | unmix / numpy in-process | unmix / numpy durable "
          f"| unmix process, new file | new file / numpy in-process "
          f"| in-memory bound (numpy x it, unmix new file x it)"
          + (" | base build process" if base else ""))
    for n, d in sizes:
        x = rng.laplace(size=(n, d)) @ rng.standard_normal((d, d)).T
        xp, zp = DATA / f"white_{n}_{d}.npy", DATA / "white_z.npy"
        np.save(xp, x)

        def numpy_whiten(x):
            xc = x - x.mean(axis=0)
            vals, vecs = np.linalg.eigh(xc.T @ xc / n)
            return xc @ (vecs[:, ::-1] / np.sqrt(vals[::-1]))

        def numpy_durable():
            """What the process does with its output: a temporary file beside the target,
            fsync, rename over the target."""
            z = numpy_whiten(np.load(xp))
            tmp = zp.with_name(".white_z.npy.tmp")
            with open(tmp, "wb") as f:
                np.save(f, z)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, zp)

        for threads in (1, 2):
            t_np, t_io, t_sync, t_u, t_new, t_b = [], [], [], [], [], []
            args = ["whiten", "--input", str(xp), "--output", str(zp)]
            with threadpool_limits(limits=threads):
                for _ in range(repeat):
                    t_np.append(timeit.timeit(lambda: numpy_whiten(x), number=1))
                    t_io.append(timeit.timeit(lambda: np.save(zp, numpy_whiten(np.load(xp))), number=1))
                    t_sync.append(timeit.timeit(numpy_durable, number=1))
                    # OpenBLAS's threads spin for a while after numpy's last product: the same
                    # build run twice in a row at 1e5 x 64 on two threads took 0.081 then
                    # 0.065 s, the first losing a core to them. So each process waits them out.
                    time.sleep(0.2)
                    t_u.append(unmix_process(args, threads))
                    zp.unlink()
                    os.sync()  # the deletion's writeback is not left to the next process
                    time.sleep(0.2)
                    t_new.append(unmix_process(args, threads))
                    if base:
                        time.sleep(0.2)
                        t_b.append(unmix_process(args, threads, exe=base))
            a, b, f, c, e = (middle(t) for t in (t_np, t_io, t_sync, t_u, t_new))
            bound = whitening_bound(n, d, d, *rates[threads])
            last = f" | {middle(t_b):11.3f} s" if base else ""
            print(f"{n:>6} x {d:>3} {threads:>3} | {a:14.3f} s | {b:13.3f} s | {f:19.3f} s "
                  f"| {c:11.3f} s | {c / a:5.2f} | {c / f:5.2f} | {e:11.3f} s | {e / a:5.2f} "
                  f"| {bound:.3f} s ({a / bound:4.2f}, {e / bound:4.2f})" + last)


if __name__ == "__main__":
    import sys

    if "--embedding" in sys.argv:
        DATA.mkdir(parents=True, exist_ok=True)
        embedding()
    elif "--whiten" in sys.argv:
        DATA.mkdir(parents=True, exist_ok=True)
        whitening()
    else:
        main()
