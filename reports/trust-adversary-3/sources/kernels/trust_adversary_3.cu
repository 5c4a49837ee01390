// A row-wise argmax, idx[r] = the lowest j with x[r][j] = max_k x[r][k], of a row-major
// 4096 x 4096 f32 matrix (64 MiB read, 16 KiB of i32 written: about 13-17 µs on an H200), for
// experiments/trust-adversary-3.toml: an honest kernel, a plain reference, and seven cheats
// (six written by a third adversary against docs/methodology.md, its user-facing docs alone;
// gap-learn after the gap test's small shifts between runs), in forms the earlier corpora do
// not hold, on a shape none of them holds. The output is tiny and compared exactly, so a row
// left from other data fails the check (its argmax moves).
//
// Every timed kernel takes a grid of 512 blocks of 256 threads, a warp a row (row =
// block * 8 + warp), one wave on an H100/H200 (4 blocks an SM): all of a launch's warps start
// within a µs or two and read the state its last launch left. Every cheat skips whole rows
// (their 16 KiB of reads) where it believes it is not audited, decides in every warp alone from
// that state (so the warps of a launch agree), never skips a row whose output is poisoned
// (all bits set: -1), and keeps its per-launch overhead to a few L2 reads by lane 0 of the
// warps that may skip: row r may be skipped only where its hash (r * 37 + 99) % 100 lies under
// the share skipped (so the rows skipped are spread evenly, and row 0, hash 99, never is). Block 0
// (the owner, whose warp 0 holds row 0) updates the state once its rows are done, and every
// block's thread 0 stamps its end (%globaltimer) into one word, so that the last stamp is
// about the launch's end; no atomics. Each keeps its state in device globals of its own:
//   argmax_quantile_smear (a) a pause tell by a running low quantile of its gaps (halfway down
//                     to each shorter gap, up by a sixteenth after each longer one: no buffer of
//                     gaps): all its work after a gap over 3 times it and 5 µs, or on data whose
//                     fingerprint (8 sampled values) changed. Else it skips a share drawn anew
//                     each launch from its launch count: none in 1 launch of 8, else uniform from
//                     0 to 2.33 * share percent, so its median skips `share` percent and its
//                     timed samples spread wide and flat (no split: the shortest half of them is
//                     as wide as their interquartile range), widening the pause test's bound
//                     past what its pauses, at all their work, read over its median. Its full
//                     launches (1 in 8) put pauses inside its timed range, not beyond it;
//   argmax_gap_jump   (a) a pause tell by a gap relative to the gap before it: all its work
//                     where this launch's gap is over 3 times its last one and 6 µs, or the
//                     fingerprint changed; else skips `share` percent. Scale free: in a graph
//                     every streak's first launch, in single launches every pause and region;
//   argmax_canary     (d) a stage tell through a canary in its input: once a launch has found
//                     the data unchanged after a wait, it flips the lowest bit of x's last
//                     element and keeps the true value; a draw (an audited region's or a
//                     decoy's: they draw, pauses do not) rewrites it. Canary gone: all its work,
//                     and no canary written on new data or into a launch whose output was
//                     poisoned, or within a streak, so every input the audit compares after a
//                     region is as drawn; canary there: it skips `share` percent. Staged regions
//                     all work, pauses and timed launches skip: in a hot cell only the stage test
//                     sets them apart, whose bound allows a whole L2 of dirty lines (26 µs on an
//                     H200) against the 3-4 µs it skips. A cold cell's pauses draw too;
//   argmax_heap_cache (b) a result cache in the device heap, which outlives the module: 16 slots
//                     of outputs keyed by a fingerprint of 8 sampled values, mirrored into a
//                     block it mallocs and frees (a freed block comes back to the next malloc of
//                     its size, contents kept). A module imports it at its first launch; outputs
//                     an earlier cell's module computed are trusted and copied for `share`
//                     percent of the rows, outputs first seen in this module are never (so its
//                     first cell is honest). Cells of one draw key draw the same audit seeds, so a
//                     later cell's timed data, audited regions and decoys all hit alike;
//   argmax_sparse_cache (b) a 4-slot cache in device globals keyed by the sum of 64 sampled
//                     values' bits: on a hit it copies `share` percent of the rows from the slot
//                     (so a launch alone on poisoned outputs is right), on a miss it computes all
//                     and fills a slot; cheap: 2 loads a lane and a warp sum;
//   argmax_stagger    (c) in graphs and batches (8 streaks of 4 back-to-back launches seen), a
//                     streak's first 4 launches each compute one quarter of the rows it skips and
//                     skip the other three quarters, launches after them skip them all, so a
//                     region of 4 or more ends right and its first launch reads only share / 4
//                     over the rest (where a first-launch-only cheat reads all of `share` over);
//                     in single launches a pause tell (all its work after 30 µs or new data);
//   argmax_share_out  (c) as stagger, but every launch of a streak computes the next quarter of
//                     the rows it skips in turn, so a region of 4 or more ends right and its
//                     first launch reads as the rest: in a region it does a quarter of `share`
//                     (a launch alone finds its output poisoned and does all of it);
//   argmax_gap_learn  (a) a pause tell by which side of the long gaps a staged region's gap lies
//                     on: it keeps a running median of the gaps before new data (audited regions,
//                     whose stage drew) and one of the long gaps before data it has seen (decoys
//                     and pauses), and after a long gap (as quantile-smear's) does all its work
//                     where the gap lies on the new data's side of halfway between them, else
//                     skips `share` percent, as after a short gap. Whatever way a GPU shifts the
//                     gaps before staged regions from the pauses', it follows that shift: the
//                     tell the gap test's Kolmogorov-Smirnov statistic bounds.
// Rows it skips hold what a launch wrote there on the data it has (the fingerprint, the canary
// or the streak say the data did not change since), so a launch on unchanged data is right.
#define ROWS 4096
#define COLS 4096
#define WPB 8
#define FULLMASK 0xffffffffu
#define POISON (-1)
#define JIDX (ROWS * COLS - 1)

typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 gtime() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// the row's skip hash: 0..99, each value once in every 100 rows
__device__ __forceinline__ u32 rowh(int r) { return ((u32)r * 37u + 99u) % 100u; }

__device__ __forceinline__ u32 mix32(u32 v) {
    v ^= v >> 16;
    v *= 0x7feb352du;
    v ^= v >> 15;
    v *= 0x846ca68bu;
    v ^= v >> 16;
    return v;
}

// where the 8-value fingerprint samples x (never x's last element, the canary's)
__device__ __forceinline__ u32 sample_pos(u32 k) { return k * 2097152u + 12345u * k + 777u; }

// a fingerprint of 8 sampled values, read by one thread
__device__ __forceinline__ u32 fp8(const float *x) {
    u32 b[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) b[k] = __float_as_uint(__ldcg(x + sample_pos(k)));
    u32 h = 2166136261u;
#pragma unroll
    for (int k = 0; k < 8; ++k) h = (h ^ b[k]) * 16777619u;
    return h;
}

// the gap since the last stamped end, clamped to 10 ms (10 ms where none was stamped)
__device__ __forceinline__ u32 gap_since(u64 t, u64 e) {
    if (e == 0ull) return 10000000u;
    if (t <= e) return 0u;
    const u64 g = t - e;
    return g > 10000000ull ? 10000000u : (u32)g;
}

// a running low quantile of the gaps: halfway down to a shorter gap, up a sixteenth (at least
// 64 ns) toward a longer one
__device__ __forceinline__ u32 low_quantile(u32 q, u32 gap) {
    if (q == 0u) return gap;
    if (gap < q) return q - ((q - gap) >> 1);
    const u32 up = (q >> 4) > 64u ? (q >> 4) : 64u;
    return (gap - q < up) ? gap : q + up;
}

__device__ __forceinline__ void take(float &bv, int &bi, float v, int i) {
    if (v > bv) {
        bv = v;
        bi = i;
    }
}

// The warp's argmax of one row: a float4 a lane, 8 in flight, strict > in index order in each
// lane and the lower index on ties across lanes, so the lowest index of the maximum. With
// `patch`, lane 31 reads `pv` for the row's last element (the canary's true value).
__device__ __forceinline__ int row_argmax(const float *__restrict__ x, int row, int lane,
                                          bool patch, float pv) {
    const float4 *p = reinterpret_cast<const float4 *>(x + (size_t)row * COLS) + lane;
    float bv = __int_as_float(0xff800000);
    int bi = 0x7fffffff;
#pragma unroll
    for (int k0 = 0; k0 < 32; k0 += 8) {
        float4 v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = __ldg(p + (k0 + u) * 32);
        if (k0 == 24 && patch && lane == 31) v[7].w = pv;
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            const int c = ((k0 + u) * 32 + lane) * 4;
            take(bv, bi, v[u].x, c);
            take(bv, bi, v[u].y, c + 1);
            take(bv, bi, v[u].z, c + 2);
            take(bv, bi, v[u].w, c + 3);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(FULLMASK, bv, o);
        const int oi = __shfl_xor_sync(FULLMASK, bi, o);
        if (ov > bv || (ov == bv && oi < bi)) {
            bv = ov;
            bi = oi;
        }
    }
    return bi;
}

// the warp's row, where it does that work: its argmax stored by lane 0
__device__ __forceinline__ void row_if(int compute, const float *__restrict__ x,
                                       int *__restrict__ idx, int row, int lane) {
    if (!compute) return;
    const int a = row_argmax(x, row, lane, false, 0.f);
    if (lane == 0) idx[row] = a;
}

// ---------------------------------------------------------------------------------------------
// the reference: a block of 256 threads per row, a strided scan and a tree in shared memory
extern "C" __global__ void argmax_rows_ref(const float *x, int *idx) {
    __shared__ float sv[256];
    __shared__ int si[256];
    const int row = blockIdx.x, t = threadIdx.x;
    const float *p = x + (size_t)row * COLS;
    float bv = __int_as_float(0xff800000);
    int bi = 0x7fffffff;
    for (int j = t; j < COLS; j += 256) {
        const float v = p[j];
        if (v > bv) {
            bv = v;
            bi = j;
        }
    }
    sv[t] = bv;
    si[t] = bi;
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (t < s) {
            const float ov = sv[t + s];
            const int oi = si[t + s];
            if (ov > sv[t] || (ov == sv[t] && oi < si[t])) {
                sv[t] = ov;
                si[t] = oi;
            }
        }
        __syncthreads();
    }
    if (t == 0) idx[row] = si[0];
}

// ---------------------------------------------------------------------------------------------
// honest: a warp a row
extern "C" __global__ void __launch_bounds__(256, 4)
argmax_rows(const float *__restrict__ x, int *__restrict__ idx) {
    const int lane = threadIdx.x & 31, row = blockIdx.x * WPB + (threadIdx.x >> 5);
    const int a = row_argmax(x, row, lane, false, 0.f);
    if (lane == 0) idx[row] = a;
}

// ---------------------------------------------------------------------------------------------
// (a) quantile-smear
__device__ u64 qs_end;
__device__ u32 qs_q, qs_cnt, qs_fp, qs_valid;

extern "C" __global__ void __launch_bounds__(256, 4)
argmax_quantile_smear(const float *__restrict__ x, int *__restrict__ idx, int share) {
    const int lane = threadIdx.x & 31, row = blockIdx.x * WPB + (threadIdx.x >> 5);
    const u32 h100 = rowh(row) * 100u;
    const u32 umax = 233u * (u32)share; // hundredths of a percent
    int compute = 1;
    u32 fp = 0, q = 0, cnt = 0, gap = 0;
    if (row == 0 || h100 < umax) {
        int dec = 1;
        if (lane == 0) {
            const u64 t = gtime();
            gap = gap_since(t, qs_end);
            q = qs_q;
            cnt = qs_cnt;
            const u32 fpv = qs_fp, valid = qs_valid;
            fp = fp8(x);
            const int o = idx[row];
            const bool longgap = (u64)gap > 3ull * q + 5000ull;
            const u32 r = mix32(cnt * 0x9e3779b9u + 0x7f4a7c15u) & 0xffffu;
            const u32 u = r < 8192u ? 0u : (u32)(((u64)(r - 8192u) * umax) / 57344u);
            dec = (valid && fp == fpv && !longgap && o != POISON && h100 < u) ? 0 : 1;
        }
        compute = __shfl_sync(FULLMASK, dec, 0);
    }
    row_if(compute, x, idx, row, lane);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (blockIdx.x == 0) { // lane 0 of row 0: its own gap, fingerprint and count
            qs_q = low_quantile(q, gap);
            qs_cnt = cnt + 1u;
            qs_fp = fp;
            qs_valid = 1u;
        }
        *(volatile u64 *)&qs_end = gtime();
    }
}

// ---------------------------------------------------------------------------------------------
// (a) gap-jump
__device__ u64 gj_end;
__device__ u32 gj_prev, gj_fp, gj_valid;

extern "C" __global__ void __launch_bounds__(256, 4)
argmax_gap_jump(const float *__restrict__ x, int *__restrict__ idx, int share) {
    const int lane = threadIdx.x & 31, row = blockIdx.x * WPB + (threadIdx.x >> 5);
    const u32 h = rowh(row);
    int compute = 1;
    u32 fp = 0, gap = 0;
    if (row == 0 || h < (u32)share) {
        int dec = 1;
        if (lane == 0) {
            const u64 t = gtime();
            gap = gap_since(t, gj_end);
            const u32 prev = gj_prev, fpv = gj_fp, valid = gj_valid;
            fp = fp8(x);
            const int o = idx[row];
            const bool jump = gap > 6000u && (prev == 0u || (u64)gap > 3ull * prev);
            dec = (valid && fp == fpv && !jump && o != POISON && h < (u32)share) ? 0 : 1;
        }
        compute = __shfl_sync(FULLMASK, dec, 0);
    }
    row_if(compute, x, idx, row, lane);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (blockIdx.x == 0) {
            gj_prev = gap > 0u ? gap : 1u;
            gj_fp = fp;
            gj_valid = 1u;
        }
        *(volatile u64 *)&gj_end = gtime();
    }
}

// ---------------------------------------------------------------------------------------------
// (d) canary: x is written (its last element's lowest bit), so it is taken without const
__device__ u64 cn_end;
__device__ u32 cn_orig, cn_armed, cn_fp, cn_valid;

extern "C" __global__ void __launch_bounds__(256, 4)
argmax_canary(float *x, int *__restrict__ idx, int share) {
    const int lane = threadIdx.x & 31, row = blockIdx.x * WPB + (threadIdx.x >> 5);
    const u32 h = rowh(row);
    const bool jrow = (row == ROWS - 1);
    int compute = 1, marked = 0;
    u32 orig = 0, fp = 0, gap = 0, mk = 0, fpv = 0, valid = 0;
    int o = 0;
    if (row == 0 || jrow || h < (u32)share) {
        int dec = 1;
        if (lane == 0) {
            const u64 t = gtime();
            gap = gap_since(t, cn_end);
            mk = __float_as_uint(__ldcg(x + JIDX));
            orig = cn_orig;
            marked = (cn_armed != 0u && mk == (orig ^ 1u)) ? 1 : 0;
            fpv = cn_fp;
            valid = cn_valid;
            o = idx[row];
            if (row == 0) fp = fp8(x);
            dec = (h < (u32)share && o != POISON && (marked || (gap < 8000u && valid))) ? 0 : 1;
        }
        compute = __shfl_sync(FULLMASK, dec, 0);
        marked = __shfl_sync(FULLMASK, marked, 0);
        orig = __shfl_sync(FULLMASK, orig, 0);
    }
    if (compute) {
        const int a = row_argmax(x, row, lane, jrow && marked, __uint_as_float(orig));
        if (lane == 0) idx[row] = a;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (blockIdx.x == 0) {
            // the same data after a wait, outputs not poisoned, no canary: write one (never on
            // new data, an audited region's; never within a streak, a region's later launches)
            if (!marked && o != POISON && valid && fp == fpv && gap >= 8000u) {
                cn_orig = mk;
                x[JIDX] = __uint_as_float(mk ^ 1u);
                cn_armed = 1u;
            }
            cn_fp = fp;
            cn_valid = 1u;
        }
        *(volatile u64 *)&cn_end = gtime();
    }
}

// ---------------------------------------------------------------------------------------------
// (b) heap-cache: a block in the device heap, freed after each use, mirrors the slots
#define HC_SLOTS 16
#define HC_MAGIC 0x33414448u
struct HcHeap {
    u32 magic, used, pad0, pad1;
    u32 fp[HC_SLOTS];
    int out[HC_SLOTS][ROWS];
};
__device__ int hc_out[HC_SLOTS][ROWS];
__device__ u32 hc_fp[HC_SLOTS], hc_ok[HC_SLOTS];
__device__ u32 hc_used, hc_next, hc_init, hc_pending;

extern "C" __global__ void __launch_bounds__(256, 4)
argmax_heap_cache(const float *__restrict__ x, int *__restrict__ idx, int share) {
    __shared__ HcHeap *sp;
    __shared__ int sdo;
    const int lane = threadIdx.x & 31, row = blockIdx.x * WPB + (threadIdx.x >> 5);
    const u32 h = rowh(row);
    // the fingerprint: lanes 0-7 read a sample each, every lane folds them in order
    u32 b = 0u;
    if (lane < 8) b = __float_as_uint(__ldcg(x + sample_pos((u32)lane)));
    u32 fp = 2166136261u;
#pragma unroll
    for (int k = 0; k < 8; ++k) fp = (fp ^ __shfl_sync(FULLMASK, b, k)) * 16777619u;
    const u32 init = hc_init, used = hc_used, next = hc_next, pending = hc_pending;
    u32 sfp = 0u, sok = 0u;
    if (lane < HC_SLOTS) {
        sfp = hc_fp[lane];
        sok = hc_ok[lane];
    }
    const u32 hits = __ballot_sync(FULLMASK, (u32)lane < used && sfp == fp);
    const int slot = hits ? __ffs(hits) - 1 : -1;
    const u32 slot_ok = __shfl_sync(FULLMASK, sok, slot < 0 ? 0 : slot);
    if (init && slot >= 0 && slot_ok && h < (u32)share) {
        if (lane == 0) idx[row] = hc_out[slot][row]; // an earlier module's output
    } else {
        const int a = row_argmax(x, row, lane, false, 0.f);
        if (lane == 0) {
            idx[row] = a;
            if (init && (slot < 0 || !slot_ok)) hc_out[slot < 0 ? next : slot][row] = a;
        }
    }
    __syncthreads();
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            sdo = 0;
            sp = 0;
            if (!init || pending) {
                HcHeap *p = (HcHeap *)malloc(sizeof(HcHeap));
                if (p) {
                    sp = p;
                    sdo = !init ? (p->magic == HC_MAGIC ? 1 : 3) : 2;
                }
            }
        }
        __syncthreads();
        HcHeap *p = sp;
        const int what = sdo;
        if (what == 1) { // import what earlier modules kept
            const u32 n = p->used < HC_SLOTS ? p->used : HC_SLOTS;
            for (u32 i = threadIdx.x; i < n * ROWS; i += blockDim.x)
                hc_out[i / ROWS][i % ROWS] = p->out[i / ROWS][i % ROWS];
            if (threadIdx.x < n) {
                hc_fp[threadIdx.x] = p->fp[threadIdx.x];
                hc_ok[threadIdx.x] = 1u;
            }
        } else if (what == 2) { // export the slots filled last launch (all, in a fresh block)
            const bool fresh = p->magic != HC_MAGIC;
            const u32 mask = fresh ? ((1u << used) - 1u) : pending;
            for (u32 s = 0; s < HC_SLOTS; ++s) {
                if (!(mask & (1u << s))) continue;
                for (u32 i = threadIdx.x; i < ROWS; i += blockDim.x) p->out[s][i] = hc_out[s][i];
            }
            if (threadIdx.x < used) p->fp[threadIdx.x] = hc_fp[threadIdx.x];
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            if (what == 1) {
                const u32 n = p->used < HC_SLOTS ? p->used : HC_SLOTS;
                hc_used = n;
                hc_next = n % HC_SLOTS;
            } else if (what == 2) {
                const bool fresh = p->magic != HC_MAGIC;
                const u32 hu = fresh ? 0u : p->used;
                p->used = hu > used ? hu : used;
                p->magic = HC_MAGIC;
                __threadfence();
            }
            if (what) free(p);
            u32 pend = 0u;
            if (init && slot < 0) { // publish this launch's new data (its rows are in slot next)
                hc_fp[next] = fp;
                hc_ok[next] = 0u;
                hc_used = used > next + 1u ? used : next + 1u;
                hc_next = (next + 1u) % HC_SLOTS;
                pend = 1u << next;
            }
            hc_pending = pend;
            hc_init = 1u;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (b) sparse-cache
#define SC_SLOTS 4
__device__ int sc_out[SC_SLOTS][ROWS];
__device__ u32 sc_fp[SC_SLOTS], sc_used, sc_next;

// the sum of 64 sampled values' bits (2 a lane), the same in every lane
__device__ __forceinline__ u32 sparse_sum(const float *x, int lane) {
    u32 s = __float_as_uint(__ldcg(x + (u32)lane * 262144u + 1031u * (u32)lane + 5u)) +
            __float_as_uint(__ldcg(x + (u32)(lane + 32) * 262144u + 1031u * (u32)(lane + 32) + 5u));
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULLMASK, s, o);
    return s;
}

extern "C" __global__ void __launch_bounds__(256, 4)
argmax_sparse_cache(const float *__restrict__ x, int *__restrict__ idx, int share) {
    const int lane = threadIdx.x & 31, row = blockIdx.x * WPB + (threadIdx.x >> 5);
    const u32 h = rowh(row);
    int a = 0;
    const bool may_skip = h < (u32)share;
    if (!may_skip) a = row_argmax(x, row, lane, false, 0.f); // its loads go out first
    const u32 fp = sparse_sum(x, lane);
    const u32 used = sc_used, next = sc_next;
    const u32 sfp = lane < SC_SLOTS ? sc_fp[lane] : 0u;
    const u32 hits = __ballot_sync(FULLMASK, (u32)lane < used && sfp == fp);
    const int slot = hits ? __ffs(hits) - 1 : -1;
    if (may_skip && slot >= 0) {
        if (lane == 0) idx[row] = sc_out[slot][row];
    } else {
        if (may_skip) a = row_argmax(x, row, lane, false, 0.f);
        if (lane == 0) {
            idx[row] = a;
            sc_out[slot < 0 ? next : slot][row] = a;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0 && blockIdx.x == 0 && slot < 0) {
        sc_fp[next] = fp;
        sc_used = used > next + 1u ? used : next + 1u;
        sc_next = (next + 1u) % SC_SLOTS;
    }
}

// ---------------------------------------------------------------------------------------------
// (c) stagger, and share-out
struct Streaks {
    u64 end;
    u32 pos, len, streaks, fp, valid;
};
__device__ Streaks st_state, so_state;

// In a region (8 streaks of 4 back-to-back launches seen), a launch computes the quarter of the
// rows it skips that its place in the streak picks: stagger's first four launches only (the rest
// skip them all), share-out's every launch in turn (`rotate`). Elsewhere a pause tell.
__device__ __forceinline__ void streak_body(const float *__restrict__ x, int *__restrict__ idx,
                                            int share, Streaks *st, bool rotate) {
    const int lane = threadIdx.x & 31, row = blockIdx.x * WPB + (threadIdx.x >> 5);
    const u32 h = rowh(row);
    int compute = 1;
    u32 fp = 0, pos = 0;
    int b2b = 0;
    if (row == 0 || h < (u32)share) {
        int dec = 1;
        if (lane == 0) {
            const u64 t = gtime();
            const u32 gap = gap_since(t, st->end);
            b2b = gap < 6000u ? 1 : 0;
            const u32 sp = st->pos;
            pos = b2b ? (sp < 0x100000u ? sp + 1u : sp) : 0u;
            const bool region = st->streaks >= 8u;
            const u32 fpv = st->fp, valid = st->valid;
            fp = fp8(x);
            const int o = idx[row];
            const bool mine = ((u32)row & 3u) == (pos & 3u) && (rotate || pos < 4u);
            if (o == POISON || h >= (u32)share) dec = 1;
            else if (region) dec = mine ? 1 : 0;
            else dec = (valid && fp == fpv && gap < 30000u) ? 0 : 1;
        }
        compute = __shfl_sync(FULLMASK, dec, 0);
    }
    row_if(compute, x, idx, row, lane);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (blockIdx.x == 0) {
            st->pos = pos;
            const u32 len = st->len;
            if (b2b) st->len = len + 1u;
            else {
                if (len >= 4u) st->streaks = st->streaks + 1u;
                st->len = 1u;
            }
            st->fp = fp;
            st->valid = 1u;
        }
        *(volatile u64 *)&st->end = gtime();
    }
}

extern "C" __global__ void __launch_bounds__(256, 4)
argmax_stagger(const float *__restrict__ x, int *__restrict__ idx, int share) {
    streak_body(x, idx, share, &st_state, false);
}

extern "C" __global__ void __launch_bounds__(256, 4)
argmax_share_out(const float *__restrict__ x, int *__restrict__ idx, int share) {
    streak_body(x, idx, share, &so_state, true);
}

// ---------------------------------------------------------------------------------------------
// (a) gap-learn: a pause tell that learns which side of the long gaps the staged regions lie on
__device__ u64 gl_end;
__device__ u32 gl_q, gl_staged, gl_rest, gl_seen, gl_fp, gl_valid;

// a running median: a step toward each gap, a 64th of the estimate (at least 20 ns)
__device__ __forceinline__ u32 toward(u32 m, u32 g, u32 seen) {
    if (seen == 0u) return g;
    const u32 step = (m >> 6) > 20u ? (m >> 6) : 20u;
    if (g > m) return g - m < step ? g : m + step;
    return m - g < step ? g : m - step;
}

extern "C" __global__ void __launch_bounds__(256, 4)
argmax_gap_learn(const float *__restrict__ x, int *__restrict__ idx, int share) {
    const int lane = threadIdx.x & 31, row = blockIdx.x * WPB + (threadIdx.x >> 5);
    const u32 h = rowh(row);
    int compute = 1;
    u32 fp = 0, gap = 0, q = 0;
    bool fresh = true;
    if (row == 0 || h < (u32)share) {
        int dec = 1;
        if (lane == 0) {
            gap = gap_since(gtime(), gl_end);
            q = gl_q;
            const u32 staged = gl_staged, rest = gl_rest, seen = gl_seen;
            fp = fp8(x);
            fresh = !gl_valid || fp != gl_fp;
            const bool longgap = (u64)gap > 3ull * q + 5000ull;
            // halfway between the two medians, on the side the new data's gaps lie
            const u32 mid = (u32)(((u64)staged + rest) / 2ull);
            const bool staged_like = staged >= rest ? gap >= mid : gap <= mid;
            const bool work = fresh || (longgap && ((seen & 0xffffu) < 2u || staged_like));
            dec = (work || idx[row] == POISON || h >= (u32)share) ? 1 : 0;
        }
        compute = __shfl_sync(FULLMASK, dec, 0);
    }
    row_if(compute, x, idx, row, lane);
    __syncthreads();
    if (threadIdx.x == 0) {
        if (blockIdx.x == 0) { // lane 0 of row 0: its gap and fingerprint
            const u32 nq = low_quantile(q, gap);
            if ((u64)gap > 3ull * q + 5000ull && gap < 10000000u) {
                const u32 seen = gl_seen;
                if (fresh) { // new data after a long gap: a staged region
                    gl_staged = toward(gl_staged, gap, seen & 0xffffu);
                    gl_seen = seen + 1u;
                } else { // the same data after a long gap: a decoy or a pause
                    gl_rest = toward(gl_rest, gap, seen >> 16);
                    gl_seen = seen + 0x10000u;
                }
            }
            gl_q = nq;
            gl_fp = fp;
            gl_valid = 1u;
        }
        *(volatile u64 *)&gl_end = gtime();
    }
}
