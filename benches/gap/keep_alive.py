"""How much slower a 268 MB copy reads by CUDA events on an idle queue after the host spins
P µs launching nothing (`pause`), and after the same spin with an empty kernel launched every
K µs (`kK`), against back to back (`timed`): the medians' differences, in µs. The modes take
turns, 3,000 launches a pause length (the first 100 left out).

    python benches/gap/keep_alive.py
"""
import cupy as cp, time, statistics as st
copy = cp.RawKernel(r'''
extern "C" __global__ void copy(const float4 *x, float4 *y, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) y[i] = x[i];
}''', 'copy')
empty = cp.RawKernel(r'''extern "C" __global__ void empty() {}''', 'empty')
s = cp.cuda.Stream(non_blocking=True)
n = (1 << 26) // 4
x = cp.ones(n * 4, dtype=cp.float32); y = cp.empty_like(x)
a, b = cp.cuda.Event(), cp.cuda.Event()
def timed():
    with s:
        a.record(s); copy((132 * 8,), (512,), (x, y, cp.int64(n))); b.record(s)
    b.synchronize(); return cp.cuda.get_elapsed_time(a, b) * 1e3
def pause(P, K):
    t0 = time.perf_counter(); last = -1.0
    while True:
        el = time.perf_counter() - t0
        if el >= P: break
        if K and el - last >= K:
            with s: empty((1,), (1,), ())
            last = el
for P in (60e-6, 175e-6, 315e-6, 600e-6):
    modes = ['timed', 'pause', 'timed', 'k5', 'timed', 'k10', 'timed', 'k20', 'timed', 'k40']
    res = {m: [] for m in modes}
    for i in range(3000):
        m = modes[i % len(modes)]
        if m == 'pause': pause(P, 0)
        elif m.startswith('k'): pause(P, int(m[1:]) * 1e-6)
        r = timed()
        if i > 100: res[m].append(r)
    base = st.median(res['timed'])
    print(f"P={P*1e6:.0f}us timed {base:.2f}", {m: round(st.median(v) - base, 2) for m, v in res.items() if m != 'timed'}, flush=True)
