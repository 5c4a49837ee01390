#!/usr/bin/env python3
"""How long after the host enqueues it does a small kernel finish, right after a synchronized
region: a CUDA graph of 20 launches, 20 launches back to back, or one launch? The runner's
stage enqueues its draw there and waits a fixed time for it (`wait_ns`: 1.5 draws + 20 µs);
a stage whose draw is not done by then is late.

Usage: python3 after_graph.py [repeats]   (CuPy, a GPU)
"""
import sys
import time

import cupy as cp

N = 512
REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
src = r'''
extern "C" __global__ void mm(const float *a, const float *b, float *c, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float s = 0.0f;
        for (int k = 0; k < n; k++) s += a[row * n + k] * b[k * n + col];
        c[row * n + col] = s;
    }
}
extern "C" __global__ void fill(float *x, unsigned long long count, unsigned int seed) {
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
        x[i] = (float)((i * 2654435761u + seed) & 0xffffff) * (1.0f / 16777216.0f);
}
'''
mod = cp.RawModule(code=src)
mm, fill = mod.get_function("mm"), mod.get_function("fill")
a, b, c = (cp.random.rand(N * N, dtype=cp.float32) for _ in range(3))
stream = cp.cuda.Stream(non_blocking=True)
grid, block = ((N + 31) // 32, (N + 31) // 32), (32, 32)


def launch():
    mm(grid, block, (a, b, c, cp.int32(N)), stream=stream)


with stream:
    stream.begin_capture()
    for _ in range(20):
        launch()
    graph = stream.end_capture()
done = cp.cuda.Event(disable_timing=True)


def after(region, label):
    lat = []
    for r in range(REPEATS):
        region()
        stream.synchronize()
        t0 = time.perf_counter()
        fill((264,), (256,), (a, cp.uint64(N * N), cp.uint32(r)), stream=stream)
        done.record(stream)
        while not done.done:
            pass
        lat.append((time.perf_counter() - t0) * 1e6)
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
    over = sum(x > 25.0 for x in lat)
    print(f"{label:26s} enqueue to done, us: median {q(0.5):6.1f}  p90 {q(0.9):6.1f}  p99 {q(0.99):6.1f}  max {lat[-1]:7.1f}  over 25 us: {over} of {len(lat)}")


with stream:
    for _ in range(3):
        graph.launch(stream)
        stream.synchronize()
    after(lambda: graph.launch(stream), "after a graph of 20")
    after(lambda: [launch() for _ in range(20)], "after 20 launches")
    after(launch, "after one launch")
    after(lambda: graph.launch(stream), "after a graph of 20, again")
