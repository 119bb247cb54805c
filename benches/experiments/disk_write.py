"""How fast this machine's disk takes a durable output of the `whiten` process's size, written
with `O_DIRECT` in 1 MB or 4 MB writes, through the page cache, or copied into the file mapped
after `posix_fallocate` (as a transform writing its rows straight into a mapped output would),
each followed by `fsync` (Linux only; the figures behind "Outputs written with `O_DIRECT`" and
"A mapped output" in benches/README.md).

    python benches/experiments/disk_write.py [MB] [ROUNDS] [DIR]

MB defaults to 41 (2e4 x 256 f64), ROUNDS to 7, DIR to $TMPDIR or /tmp (the disk measured).
Prints, per way of writing, the median, min and max over the rounds of the writes' time, the
`fsync`'s time and the mean time of one write.
"""

import mmap
import os
import statistics
import sys
import tempfile
import time

mb = int(sys.argv[1]) if len(sys.argv) > 1 else 41
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
where = sys.argv[3] if len(sys.argv) > 3 else os.environ.get("TMPDIR", "/tmp")
total = mb << 20


def one_round(stage, how):
    """(seconds writing, seconds in fsync, writes) for one output of `total` bytes, written
    `how`: "direct" (`O_DIRECT`), "cache" (`write` through the page cache) or "mapped"."""
    # An anonymous map is page-aligned, as O_DIRECT needs; its bytes are not all zero so that
    # no layer can shortcut them.
    buf = mmap.mmap(-1, stage)
    buf.write(bytes(range(256)) * (stage // 256))
    fd, path = tempfile.mkstemp(dir=where)
    os.close(fd)
    flags = {"direct": os.O_WRONLY | os.O_DIRECT, "cache": os.O_WRONLY, "mapped": os.O_RDWR}[how]
    fd = os.open(path, flags | os.O_TRUNC)
    out = None
    try:
        start = time.perf_counter()
        writes = 0
        if how == "mapped":
            # Blocks reserved first, so that a full disk is an error here and not a SIGBUS
            # on a page of the map.
            os.posix_fallocate(fd, 0, total)
            out = mmap.mmap(fd, total)
        for i in range(total // stage):
            if out is None:
                os.write(fd, buf)
            else:
                out[i * stage:(i + 1) * stage] = buf
            writes += 1
        wrote = time.perf_counter()
        if out is not None:
            out.flush()
        os.fsync(fd)
        synced = time.perf_counter()
    finally:
        if out is not None:
            out.close()
        os.close(fd)
        os.unlink(path)
        buf.close()
    return wrote - start, synced - wrote, writes


def summary(xs):
    xs = sorted(xs)
    return f"median {statistics.median(xs) * 1e3:6.1f} ms (min {xs[0] * 1e3:.1f}, max {xs[-1] * 1e3:.1f})"


ways = [("O_DIRECT, 1 MB writes", 1 << 20, "direct"),
        ("O_DIRECT, 4 MB writes", 4 << 20, "direct"),
        ("page cache, 4 MB writes", 4 << 20, "cache"),
        ("mapped file, 4 MB copies", 4 << 20, "mapped")]
results = {label: [] for label, _, _ in ways}
for _ in range(rounds):  # interleaved, so that the disk's drift hits every way alike
    for label, stage, how in ways:
        results[label].append(one_round(stage, how))
print(f"{total >> 20} MB to {where}, {rounds} rounds")
for label, rs in results.items():
    write, sync = [r[0] for r in rs], [r[1] for r in rs]
    per_write = statistics.median(r[0] / r[2] for r in rs)
    print(f"{label:24s} writes {summary(write)}, fsync {summary(sync)}, "
          f"one write {per_write * 1e3:.2f} ms")
