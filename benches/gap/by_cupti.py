"""Whether an honest kernel reads slower after the pause a region has than after a timed
launch's gap, and what the GPU does through the pause that matters: idle, one thread
spinning, one thread per SM, or one thread reading DRAM now and then.

The runner's timed launches follow the one before by about 12 µs (the sample's synchronize
and the next launch); a region follows a stage of about 85-130 µs: its work (a draw, or a
pause's hold on one thread as long as a draw), then the GPU idle until the wait ends. On an
H200 at 9f9e57f the honest `softmax` of `trust-small` at s=4 (32 MiB in, 32 MiB out) read
3.4% slower after every kind of region than timed, in one run of five, and was called
suspect by the pause test.

Each mode below precedes a launch of the kernel, read by CUPTI (through torch's profiler),
the modes taking turns in a shuffled order:

- `timed`: the host synchronizes and launches again (the gap a timed sample has);
- `idle`: the host waits 100 µs, the GPU idle, then launches;
- `hold-then-idle`: a hold on one thread as long as a draw (25 µs), then idle to 100 µs (a
  pause's stage now);
- `hold-all`: one thread spins the whole 100 µs, the launch queued behind it;
- `hold-most`: one thread spins until 12 µs before the launch, the host launching at 100 µs;
- `hold-sms`: one thread on every SM spins the whole 100 µs;
- `hold-dram`: one thread spins the whole 100 µs, reading a 32-byte sector of a 1 GiB buffer
  it never reads twice every ~1 µs (streaming loads, `ld.global.cs`: a few KiB of L2 at most).

    python benches/gap/by_cupti.py [REPEATS]
"""
import random
import statistics as st
import sys
import time

import cupy as cp
import torch
from torch.profiler import ProfilerActivity, profile

SRC = r'''
__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
extern "C" __global__ void hold(unsigned long long ns) {
  unsigned long long start = now_ns();
  while (now_ns() - start < ns) {}
}
extern "C" __global__ void hold_dram(unsigned long long ns, const unsigned *far, unsigned long long words,
                                     unsigned *sink) {
  unsigned long long start = now_ns(), i = (start * 2654435761ull) % words, acc = 0;
  while (now_ns() - start < ns) {
    unsigned v;
    asm volatile("ld.global.cs.u32 %0, [%1];" : "=r"(v) : "l"(far + i));
    acc += v;
    i = (i + 8192 + 8) % words;  // a new 32 KiB stride: never the same sector twice in a hold
  }
  if (acc == 0xdeadbeef) sink[0] = 1;
}
extern "C" __global__ void scale(const float4 *x, long long n, float4 *y) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) { float4 v = x[i]; y[i] = make_float4(2*v.x, 2*v.y, 2*v.z, 2*v.w); }
}
'''
mod = cp.RawModule(code=SRC, options=('-std=c++17',))
hold, hold_dram, scale = (mod.get_function(n) for n in ('hold', 'hold_dram', 'scale'))
with open(__file__.rsplit('/', 3)[0] + '/kernels/trust_shapes.cu') as f:
    shapes = cp.RawModule(code=f.read(), options=('-std=c++17',))
softmax = shapes.get_function('softmax_rows')
layernorm = shapes.get_function('layernorm_rows')
SMS = cp.cuda.Device().attributes['MultiProcessorCount']
far = cp.ones(1 << 28, dtype=cp.uint32)  # 1 GiB
sink = cp.zeros(1, dtype=cp.uint32)
MODES = ['timed', 'idle', 'hold-then-idle', 'hold-all', 'hold-most', 'hold-sms', 'hold-dram']
PAUSE_NS, DRAW_NS, TIMED_GAP_NS = 100_000, 25_000, 12_000


def spin_until(t0, ns):
    while time.perf_counter_ns() - t0 < ns:
        pass


def stage(mode):
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter_ns()
    u64 = cp.uint64
    if mode == 'timed':
        return
    if mode == 'idle':
        spin_until(t0, PAUSE_NS)
    elif mode == 'hold-then-idle':
        hold((1,), (1,), (u64(DRAW_NS),))
        spin_until(t0, PAUSE_NS)
    elif mode == 'hold-all':
        hold((1,), (1,), (u64(PAUSE_NS),))
    elif mode == 'hold-most':
        hold((1,), (1,), (u64(PAUSE_NS - TIMED_GAP_NS),))
        spin_until(t0, PAUSE_NS)
    elif mode == 'hold-sms':
        hold((SMS,), (1,), (u64(PAUSE_NS),))
    elif mode == 'hold-dram':
        hold_dram((1,), (1,), (u64(PAUSE_NS), far, u64(far.size), sink))


def kernels():
    out = []
    for s in (1, 4):
        rows, cols = 1024 * s, 2048
        x = cp.random.uniform(-4, 4, rows * cols, dtype=cp.float32)
        y = cp.empty_like(x)
        out.append((f'softmax s={s}', lambda x=x, y=y, r=rows: softmax((r,), (256,), (x, y, cp.int32(r), cp.int32(cols)))))
        g = cp.random.uniform(0.5, 1.5, cols, dtype=cp.float32)
        b = cp.random.uniform(-0.5, 0.5, cols, dtype=cp.float32)
        out.append((f'layernorm s={s}', lambda x=x, y=y, g=g, b=b, r=rows: layernorm((r,), (256,), (x, g, b, y, cp.int32(r), cp.int32(cols)))))
    n = (512 << 20) // 16
    x4 = cp.ones(n * 4, dtype=cp.float32)
    y4 = cp.empty_like(x4)
    out.append(('scale 512 MiB', lambda: scale((SMS * 8,), (512,), (x4, cp.int64(n), y4))))
    return out


def case(name, launch, reps):
    order = [m for m in MODES for _ in range(reps)]
    random.shuffle(order)
    for _ in range(20):
        launch()
    cp.cuda.Device().synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for m in order:
            stage(m)
            launch()
        cp.cuda.Device().synchronize()
    ev = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                key=lambda e: e.time_range.start)
    mine = [e for e in ev if e.name in ('softmax_rows', 'layernorm_rows', 'scale')]
    if len(mine) != len(order):
        print(f'{name}: {len(mine)} kernel records for {len(order)} launches', flush=True)
        return
    dur = {m: [] for m in MODES}
    gap = {m: [] for m in MODES}
    prev_end = None
    for m, e in zip(order, mine):
        dur[m].append(e.time_range.elapsed_us())
        if prev_end is not None:
            gap[m].append(e.time_range.start - prev_end)
        prev_end = e.time_range.end
    base = st.median(dur['timed'])
    row = '  '.join(f'{m} {100 * (st.median(dur[m]) / base - 1):+5.2f}% (gap {st.median(gap[m]):5.0f})' for m in MODES[1:])
    print(f'{name:15s} timed {base:8.2f} us (gap {st.median(gap["timed"]):4.0f} us) | {row}', flush=True)


reps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
print(cp.cuda.runtime.getDeviceProperties(0)['name'].decode(), 'SMs', SMS)
print('each mode: its median over the timed median, and the median gap before it (µs)')
for name, launch in kernels():
    case(name, launch, reps)
