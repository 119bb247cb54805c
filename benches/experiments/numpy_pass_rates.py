"""numpy's rate on the FastICA pass's shapes, one thread (benches/README.md, "A Zen 4 host").

1. The second product timed three ways: `w @ z` (the first product), `z @ z.T` (numpy runs it
   as a symmetric rank-k update, half the flops) and `g @ z.T` with another array `g`, as in
   scikit-learn's pass. Each rate counts 2 K^2 N flops.
2. The pass's two products (`y = zb @ W'`, `G += y' zb`) on row blocks of 256 and 1024 rows and
   on all rows at once, the blocking of `kernel_timings products`, and numpy's 1024^3 product.

    python benches/experiments/numpy_pass_rates.py
"""
import time

import numpy as np
from threadpoolctl import threadpool_limits


def median(fn, runs=7):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[runs // 2]


def pass_products(z, wt, rows):
    acc = np.zeros((wt.shape[1], z.shape[1]))
    for s in range(0, z.shape[0], rows):
        zb = z[s:s + rows]
        y = zb @ wt
        acc += y.T @ zb


def main():
    rng = np.random.default_rng(0)
    k, n = 256, 20480
    z, g, w = rng.standard_normal((k, n)), rng.standard_normal((k, n)), rng.standard_normal((k, k))
    gf = 2 * k * k * n / 1e9
    with threadpool_limits(limits=1):
        for name, fn in (("w @ z", lambda: w @ z), ("z @ z.T", lambda: z @ z.T),
                         ("g @ z.T", lambda: g @ z.T)):
            print(f"{name:8} {gf / median(fn):6.1f} GF/s")
        rows_major, wt = rng.standard_normal((n, k)), np.ascontiguousarray(w.T)
        for rows in (256, 1024, n):
            t = median(lambda: pass_products(rows_major, wt, rows))
            print(f"pass products, blocks of {rows:5} rows: {t * 1e3:6.1f} ms, {2 * gf / t:5.1f} GF/s")
        a = rng.standard_normal((1024, 1024))
        print(f"1024^3   {2 * 1024**3 / 1e9 / median(lambda: a @ a, 5):6.1f} GF/s")


if __name__ == "__main__":
    main()
