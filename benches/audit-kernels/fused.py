"""A stage's verify and draw (`audit_draw` of kernels/audit.cu, twice) against one kernel that
verifies and draws each 16-byte group in one pass, on f32 uniform draws of 64 MiB to 1 GiB,
beside a memset of the same bytes: what one pass would save a stage. Needs a GPU and CuPy;
run from the repository's root: `python benches/audit-kernels/fused.py`. Each time is the
median of 20 launches timed alone by events; "fused to a new seed" verifies the held draw and
writes another (a plain draw puts the held one back, its time taken off)."""
import cupy as cp, numpy as np, statistics
AUDIT = open("kernels/audit.cu").read()
# The worker's own key set-up, cut from `audit_draw` (after its draw's entry, to its `lowest`),
# as a function of the seed: the one pass keys both draws as the worker does.
ENTRY_LINE = "const AuditDraw d = draws[blockIdx.y];"
START = AUDIT.index(ENTRY_LINE) + len(ENTRY_LINE)
SET_UP = AUDIT[START:AUDIT.index("unsigned long long *lowest = &first", START)]
src = AUDIT + r'''
__device__ AuditKeys fused_keys(const AuditDraw &d, unsigned long long seed) {
''' + SET_UP + r'''
    return keys;
}
__device__ __forceinline__ uint4 fused_group(const AuditDraw &d, const AuditKeys &keys, float top, unsigned long long g) {
    union { uint4 v; unsigned int e[4]; } w;
    const unsigned long long key = audit_group_key(keys, g);
#pragma unroll
    for (unsigned int k = 0; k < 4; k += 2) {
        float x0, x1;
        audit_pair_float(d, top, key, g * 4 + k, &x0, &x1);
        w.e[k] = __float_as_uint(x0);
        w.e[k + 1] = __float_as_uint(x1);
    }
    return w.v;
}
extern "C" __global__ void fused_f32(const AuditDraw *draws, unsigned long long held, unsigned long long seed, unsigned long long *first) {
    const AuditDraw d = draws[0];
    const AuditKeys kh = fused_keys(d, held), kn = fused_keys(d, seed);
    const float top = nextafterf((float)d.b, (float)d.a);
    const unsigned long long groups = d.count / 4;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    uint4 *base = reinterpret_cast<uint4 *>(d.address);
    for (unsigned long long g = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += stride) {
        const uint4 now = __ldcs(base + g);
        const uint4 was = fused_group(d, kh, top, g);
        if (now.x != was.x || now.y != was.y || now.z != was.z || now.w != was.w) atomicMin(first, g * 4);
        __stcs(base + g, fused_group(d, kn, top, g));
    }
}
'''
m = cp.RawModule(code=src, options=("-std=c++17",))
draw, fused = m.get_function("audit_draw"), m.get_function("fused_f32")
ENTRY = np.dtype([("address", "<u8"), ("count", "<u8"), ("salt", "<u8"), ("a", "<f8"),
                  ("b", "<f8"), ("dtype", "<u4"), ("normal", "<u4")])
ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
def ev_us(f, reps=20):
    f(); cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record(); f(); e.record(); e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) * 1e3)
    return statistics.median(ts)
print(cp.cuda.runtime.getDeviceProperties(0)['name'].decode())
for mib in (64, 256, 512, 1024):
    raw = cp.empty(mib << 20, dtype=cp.uint8)
    n = raw.nbytes // 4
    entry = np.zeros(1, dtype=ENTRY); entry[0] = (raw.data.ptr, n, 3, -1.0, 1.0, 2, 0)
    table = cp.asarray(entry.view(np.uint8))
    first = cp.full(1, ONES, dtype=cp.uint64)
    blocks = int(min(4096, (n // 4 + 255) // 256))
    def sep():
        draw((blocks, 1), (256,), (table, np.uint32(1), np.uint64(5), np.uint32(1), first))
        draw((blocks, 1), (256,), (table, np.uint32(1), np.uint64(5), np.uint32(0), first))
    def fu():
        fused((blocks,), (256,), (table, np.uint64(5), np.uint64(5), first))
    def fu_new():
        fused((blocks,), (256,), (table, np.uint64(5), np.uint64(6), first))
        draw((blocks, 1), (256,), (table, np.uint32(1), np.uint64(5), np.uint32(0), first))
    draw((blocks, 1), (256,), (table, np.uint32(1), np.uint64(5), np.uint32(0), first))
    first.fill(ONES)
    a = ev_us(sep); ok1 = int(first.get()[0]) == int(ONES)
    first.fill(ONES); b = ev_us(fu); ok2 = int(first.get()[0]) == int(ONES)
    # a fused stage onto a new seed, then back (timed together), less one plain draw
    first.fill(ONES); c = ev_us(fu_new); ok3 = int(first.get()[0]) == int(ONES)
    wr = ev_us(lambda: draw((blocks, 1), (256,), (table, np.uint32(1), np.uint64(5), np.uint32(0), first)))
    vf = ev_us(lambda: draw((blocks, 1), (256,), (table, np.uint32(1), np.uint64(5), np.uint32(1), first)))
    cpy = ev_us(lambda: cp.cuda.runtime.memsetAsync(raw.data.ptr, 0, raw.nbytes, 0))
    draw((blocks, 1), (256,), (table, np.uint32(1), np.uint64(5), np.uint32(0), first))
    print(f"{mib:5d} MiB f32 uniform: verify then draw {a:8.1f} us (verify {vf:.1f}, draw {wr:.1f}) | fused, same seed {b:8.1f} us | fused to a new seed {c - wr:8.1f} us | memset {cpy:.1f} us | verifies clean: {ok1} {ok2} {ok3}", flush=True)
