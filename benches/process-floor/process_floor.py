# Starts a process_floor binary 10 times per exit path and prints the medians of the time to
# its "done" line and from there to its reaping.
import subprocess, time, sys, statistics
exe = sys.argv[1]
for mode in ["exit", "_exit", "destroy", "exit", "_exit"]:
    ts = []
    for _ in range(10):
        t0 = time.perf_counter()
        p = subprocess.Popen([exe, mode], stdout=subprocess.PIPE)
        line = p.stdout.readline(); t1 = time.perf_counter()
        p.wait(); t2 = time.perf_counter()
        ts.append(((t1 - t0) * 1e3, (t2 - t1) * 1e3))
    print(f"{mode:8s} start..done median {statistics.median(a for a,_ in ts):7.1f} ms  done..reaped median {statistics.median(b for _,b in ts):6.1f} ms  min {min(b for _,b in ts):6.1f}")
