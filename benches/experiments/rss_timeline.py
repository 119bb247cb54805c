"""A command's resident memory over time: VmRSS, RssAnon and RssFile from /proc/PID/status,
sampled about every 0.5 ms (Linux). Prints the command's stderr (with UNMIX_PHASES=1, the
phases), the largest sample and about 60 samples spread over the run, in kB:

    UNMIX_PHASES=1 python benches/experiments/rss_timeline.py target/release/unmix fit \
        --input x_20000_256_f32.npy --dtype f64 --n-components 256 --max-iter 3 --tol 0 \
        --model m.json --sources s.npy
"""
import subprocess
import sys
import time

proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                        text=True)
start = time.perf_counter()
samples = []  # (seconds, VmRSS, RssAnon, RssFile)
while proc.poll() is None:
    try:
        with open(f"/proc/{proc.pid}/status") as f:
            status = f.read()
    except OSError:
        break
    kb = {line.split(":")[0]: int(line.split()[1]) for line in status.splitlines()
          if line.startswith(("VmRSS", "RssAnon", "RssFile"))}
    if kb:
        samples.append((time.perf_counter() - start, kb.get("VmRSS", 0), kb.get("RssAnon", 0),
                        kb.get("RssFile", 0)))
    time.sleep(0.0005)
print(proc.stderr.read())
if samples:
    print("largest: %.3f s  rss %d  anon %d  file %d" % max(samples, key=lambda s: s[1]))
    for s in samples[::max(1, len(samples) // 60)]:
        print("%.3f s  rss %6d  anon %6d  file %6d" % s)
