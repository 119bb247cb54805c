"""One FastICA iteration of the `unmix` process on 1 and 2 threads, for thread scaling on a
machine that other work shares: the minimum over `--repeat` runs (the run the load disturbed
least) of `fit --max-iter 1` and `--max-iter 21` at tol 0, their difference over 20.

    python3 benches/peers/scaling.py X.npy W_INIT.npy [name=path/to/unmix ...] [--repeat 5]

Without binaries it times target/release/unmix. Several binaries are run interleaved, so that a
change of load hits them alike. Prints the machine's load average before and after.
"""

import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    args = sys.argv[1:]
    repeat = 5
    if "--repeat" in args:
        i = args.index("--repeat")
        repeat = int(args[i + 1])
        del args[i:i + 2]
    data, w_init, *named = args
    bins = dict(b.split("=", 1) for b in named) or {"unmix": str(ROOT / "target/release/unmix")}
    times = {}
    print("load", open("/proc/loadavg").read().split()[:3])
    for _ in range(repeat):
        for name, exe in bins.items():
            for threads in ("1", "2"):
                for max_iter in ("1", "21"):
                    start = time.perf_counter()
                    subprocess.run([exe, "fit", "--input", data, "--w-init", w_init, "--tol", "0",
                                    "--max-iter", max_iter, "--threads", threads, "--model",
                                    "/tmp/unmix_scaling_model.json"],
                                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    times.setdefault((name, threads, max_iter), []).append(time.perf_counter() - start)
    for name in bins:
        it = {t: (min(times[(name, t, "21")]) - min(times[(name, t, "1")])) / 20 for t in ("1", "2")}
        print(f"{data} {name}: one iteration (min of {repeat}) 1 thread {it['1'] * 1e3:.1f} ms, "
              f"2 threads {it['2'] * 1e3:.1f} ms, ratio {it['1'] / it['2']:.2f}")
    print("load", open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
