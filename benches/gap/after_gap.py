#!/usr/bin/env python3
"""How much slower a kernel reads after a pause than back to back: the question the audit's
pauses ask of every checked cell (docs/methodology.md, "pauses").

    benches/gap/after_gap.py ROWS

times the fused LayerNorm of kernels/layernorm.cu (ROWS x ROWS floats) and a plain copy of
the same bytes by CUDA events, 300 launches each (the first 20 left out), in three ways:

- `b2b`: each launch right after the last one's events were read (the runner's timed launches);
- `host US`: the host waits US µs first, the GPU idle (the runner's pauses);
- `gsync US`: a one-thread kernel on the GPU spins US µs first, the host waiting on it, so the
  GPU is busy until a timed launch's usual gap before the launch.

Prints each way's median and interquartile range in µs. Needs CuPy.
"""

import sys
import time

import cupy as cp
import numpy as np

EXTRA = r"""
extern "C" __global__ void spin(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}
extern "C" __global__ void copy4(const float4 *a, float4 *b, long n) {
    long stride = (long)gridDim.x * blockDim.x;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += stride) b[i] = a[i];
}
"""


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rows = cols = int(sys.argv[1])
    with open("kernels/layernorm.cu") as f:
        module = cp.RawModule(code=f.read() + EXTRA, options=("-std=c++17",))
    layernorm, spin, copy4 = (module.get_function(n) for n in ("layernorm_fused", "spin", "copy4"))
    x = cp.random.standard_normal(rows * cols, dtype=cp.float32)
    gamma = cp.random.uniform(0.5, 1.5, cols, dtype=cp.float32)
    beta = cp.random.uniform(-0.5, 0.5, cols, dtype=cp.float32)
    out = cp.empty_like(x)
    kernels = {
        "layernorm": lambda: layernorm((rows,), (cols // 8,), (x, gamma, beta, out, np.int32(rows), np.int32(cols))),
        "copy": lambda: copy4((132 * 8,), (256,), (x, out, np.int64(rows * cols // 4))),
    }
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def timed(kernel, way, us, n=300):
        readings = []
        for _ in range(n):
            if way == "host":
                until = time.perf_counter_ns() + us * 1000
                while time.perf_counter_ns() < until:
                    pass
            elif way == "gsync":
                spin((1,), (1,), (np.uint64(us * 1000),))
                cp.cuda.Stream.null.synchronize()
            start.record()
            kernel()
            stop.record()
            stop.synchronize()
            readings.append(cp.cuda.get_elapsed_time(start, stop) * 1000)
        r = np.array(readings[20:])
        return np.median(r), np.percentile(r, 25), np.percentile(r, 75)

    ways = [("b2b", 0), ("host", 64), ("gsync", 64), ("host", 150), ("gsync", 150), ("host", 250), ("gsync", 250)]
    for name, kernel in kernels.items():
        for _ in range(30):
            kernel()
        cp.cuda.Device().synchronize()
        for way, us in ways + ways[:5]:
            median, q1, q3 = timed(kernel, way, us)
            print(f"{name:10s} {way:5s} {us:4d} us  median {median:8.2f}  iqr {q1:8.2f}-{q3:8.2f}", flush=True)


if __name__ == "__main__":
    main()
