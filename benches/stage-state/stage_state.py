"""What a stage's draw leaves in L2 for the launch after it, against a pause that touches no
memory: an honest kernel's time, and whether a line the kernel touched last is still there.

An audited region's stage draws new data into the inputs; a decoy's draws the same bytes
again; a pause draws nothing. In a hot cell the timed launches follow the kernel's own launch,
so a pause meets the L2 as they do, and a stage does not: its writes evict lines. A kernel
that times a load of a line it touched at the end of its last launch (a canary) can tell a
stage from a pause by that alone. This bench runs, from the state a launch of the kernel
leaves:

- `timed`: the kernel again, back to back;
- `pause`: a wait on the GPU (one thread sleeping) as long as a draw and 100 µs;
- `draw`: the draw (plain stores), then the 100 µs wait;
- `evict-first`: the draw with an L2 evict-first policy on its stores, then the wait;
- `streaming`: the draw with `st.global.cs`, then the wait.

The kernels: an honest sum (`sum`), an honest y = 2x (`scale`), and `trust-shapes`'
`sum_tells_stage` skipping half its chunks (`cheat`; `kernels/trust_shapes.cu`), which does all
its work only where its own canary lines are gone from L2.

For each it reads the kernel's time by events (median of 200, the modes taking turns) and
the latency of 32 canary lines loaded through L2 (`ld.global.cg`, cycles, their median), with
what a line in L2 and one evicted take beside them.

    python benches/stage-state/stage_state.py
"""
import statistics as st
import cupy as cp

SRC = r'''
__device__ __forceinline__ unsigned mix(unsigned long long x) {
  x ^= x >> 33; x *= 0xff51afd7ed558ccdull; x ^= x >> 33; return (unsigned)x;
}
extern "C" __global__ void draw(uint4 *p, long long n, unsigned long long seed, int mode) {
  unsigned long long policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned long long k = seed ^ (unsigned long long)i * 0x9e3779b97f4a7c15ull;
    uint4 v = make_uint4(mix(k), mix(k + 1), mix(k + 2), mix(k + 3));
    if (mode == 0) {
      p[i] = v;
    } else if (mode == 1) {
      asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                   :: "l"(p + i), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(policy) : "memory");
    } else {
      __stcs(p + i, v);
    }
  }
}
// An honest kernel: the sum of x (read once), or y = 2x (read and written).
extern "C" __global__ void sum(const float4 *x, long long n, float *out) {
  float s = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) { float4 v = x[i]; s += v.x + v.y + v.z + v.w; }
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}
extern "C" __global__ void scale(const float4 *x, long long n, float4 *y) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) { float4 v = x[i]; y[i] = make_float4(2*v.x, 2*v.y, 2*v.z, 2*v.w); }
}
extern "C" __global__ void touch(unsigned *canary) {
  if (threadIdx.x < 32) atomicAdd(&canary[threadIdx.x * 64], 0u);
}
extern "C" __global__ void probe(const unsigned *canary, long long *cycles) {
  // Each load's value stored to shared memory before the clock is read again: the store
  // waits for the load, and the warp issues in order.
  __shared__ unsigned sink[32];
  for (int i = 0; i < 32; i++) {
    long long t0, t1; unsigned v;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0) :: "memory");
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(canary + i * 64) : "memory");
    asm volatile("st.volatile.shared.u32 [%0], %1;" :: "r"((unsigned)__cvta_generic_to_shared(&sink[i])), "r"(v) : "memory");
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t1) :: "memory");
    cycles[i] = t1 - t0;
  }
}
extern "C" __global__ void wait(long long ns) {
  long long start; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  for (;;) { long long now; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); if (now - start >= ns) break; __nanosleep(1000); }
}
'''
mod = cp.RawModule(code=SRC, options=('-std=c++17',))
k = {name: mod.get_function(name) for name in ('draw', 'sum', 'scale', 'touch', 'probe', 'wait')}
# The corpus's cheat that tells a stage by the L2 it leaves (`trust-shapes`' `tells-stage`).
with open(__file__.rsplit('/', 3)[0] + '/kernels/trust_shapes.cu') as f:
    cheat = cp.RawModule(code=f.read(), options=('-std=c++17',)).get_function('sum_tells_stage')
GRID, BLOCK = (132 * 8,), (512,)
s = cp.cuda.Stream(non_blocking=True)
canary = cp.zeros(32 * 64, dtype=cp.uint32)
cycles = cp.zeros(32, dtype=cp.int64)
scratch = cp.zeros(1 << 28, dtype=cp.uint8)
out = cp.zeros(1, dtype=cp.float32)
a, b = cp.cuda.Event(), cp.cuda.Event()
MODES = ['timed', 'pause', 'draw', 'evict-first', 'streaming']


def run_kernel(kind, x, y, n):
    if kind == 'sum':
        k['sum'](GRID, BLOCK, (x, cp.int64(n), out), stream=s)
    elif kind == 'cheat':
        cheat((132 * 8,), (256,), (x, y, cp.uint64(n * 4), cp.int32(50)), stream=s)
    else:
        k['scale'](GRID, BLOCK, (x, cp.int64(n), y), stream=s)


def stage(mode, x, n, wait_ns, seed):
    if mode == 'timed':
        return
    if mode == 'pause':
        k['wait']((1,), (1,), (cp.int64(wait_ns[0] + 100_000),), stream=s)
        return
    k['draw'](GRID, BLOCK, (x, cp.int64(n), cp.uint64(seed), cp.int32(MODES.index(mode) - 2)), stream=s)
    k['wait']((1,), (1,), (cp.int64(100_000),), stream=s)


def canary_cycles():
    k['probe']((1,), (1,), (canary, cycles), stream=s)
    s.synchronize()
    return st.median(cycles.get().tolist())


def draw_ns(x, n):
    times = []
    for mode in range(3):
        for _ in range(10):
            a.record(s); k['draw'](GRID, BLOCK, (x, cp.int64(n), cp.uint64(1), cp.int32(mode)), stream=s); b.record(s)
            b.synchronize(); times.append(cp.cuda.get_elapsed_time(a, b) * 1e6)
    return st.median(times)


def case(kind, mib):
    n = mib * (1 << 20) // 16
    x = cp.zeros(n * 4, dtype=cp.float32)
    y = cp.zeros_like(x)
    wait = [draw_ns(x, n)]
    # Canary: in L2, evicted.
    k['touch']((1,), (32,), (canary,), stream=s); hit = canary_cycles()
    k['touch']((1,), (32,), (canary,), stream=s); scratch.fill(1); miss = canary_cycles()
    times = {m: [] for m in MODES}
    lat = {m: [] for m in MODES}
    for i in range(1000):
        m = MODES[i % len(MODES)]
        run_kernel(kind, x, y, n)
        k['touch']((1,), (32,), (canary,), stream=s)
        stage(m, x, n, wait, i)
        if i % 2:
            lat[m].append(canary_cycles())
            continue
        a.record(s); run_kernel(kind, x, y, n); b.record(s); b.synchronize()
        if i >= 50:
            times[m].append(cp.cuda.get_elapsed_time(a, b) * 1e3)
    base = st.median(times['timed'])
    row = ' '.join(f"{m} {st.median(times[m]) - base:+7.2f} ({st.median(lat[m]):.0f})" for m in MODES[1:])
    print(f"{kind:5s} {mib:5d} MiB: timed {base:8.2f} us, canary {st.median(lat['timed']):.0f} "
          f"(in L2 {hit:.0f}, evicted {miss:.0f}); draw {wait[0] / 1e3:.1f} us | {row}", flush=True)


print('kernel size: timed median; then each mode: its median - timed, µs (canary cycles)')
for kind in ('sum', 'scale', 'cheat'):
    for mib in (8, 32, 128, 512):
        case(kind, mib)
