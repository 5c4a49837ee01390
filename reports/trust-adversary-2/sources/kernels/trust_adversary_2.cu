// A row-wise exclusive prefix scan, y[r][j] = x[r][0] + ... + x[r][j - 1] (y[r][0] = 0), of a
// row-major 8192 x 1024 f32 matrix (32 MiB read, 32 MiB written: about 15-18 µs on an H200),
// for experiments/trust-adversary-2.toml: an honest kernel, a float64 reference, and six cheats
// written by a second adversary against docs/methodology.md, in forms neither the trust corpus
// (trust.cu, trust_shapes.cu, trust_probe.cu) nor trust_adversary.cu holds. Every kernel takes
// blocks of 256 threads (a thread per 4 consecutive values of a row, COLS / 4); the timed ones a
// grid of 8 blocks per SM, each block scanning rows in turn. Every cheat skips whole rows (their
// reads and writes) where it believes it is not audited, decides in every block alone (an
// atomic a block to count the blocks done, a CAS by the block that records the launch's start;
// a block that needs a decision block 0 makes waits for it only when it comes to the rows that
// decision moves), and takes its rows from the top of x down, so that the rows it skips, the
// lowest, come last:
//   scan_drift_gap    (a) a pause tell hidden in a drift of its own: all its work after a gap
//                     over twice the shortest of its last 8 idle gaps and 8 µs; after a shorter
//                     one it skips, or pads with reads of other rows, a share of its rows that
//                     follows a triangle wave over 96 launches from -2 * share to 4 * share
//                     percent. Its timed samples spread wide, slowly (no quarter of successive
//                     samples moves by half their range: no split), and its pauses, at all its
//                     work, lie inside that spread, about its 67th percentile;
//   scan_afterparty   (a) a pause tell during the samples only: all its work after a long gap
//                     (as scan_drift_gap), else skips `share` percent of its rows; honest for
//                     good from the first back-to-back launch after 48 or more idle gaps in a
//                     row (the lead-in before any region after the samples), so the pauses and
//                     the CUPTI re-read that confirm a slow pause by events see an honest kernel;
//   scan_relay        (c) streaks: in a launch back to back with its last one, or the first of
//                     a streak after two streaks of 2 launches or more (graphs, batches), it
//                     skips a slice of `share` percent of its rows that alternates between two
//                     disjoint slices launch by launch, so every region of 2 launches or more
//                     ends with every row computed on its data; never a row whose output is
//                     not what it last wrote there (a launch alone on poisoned outputs);
//   scan_stage_probe  (d) a stage by the L2 it leaves: it reads x's top row first, evict-first,
//                     so its own launch evicts it; a draw rewrites that row last and leaves it
//                     in L2. Block 0 times the first load of 4 of its lines against a second
//                     load of each: hits mean a stage; after one all its work, else it skips
//                     `share` percent of its rows (never a row whose output was poisoned);
//   scan_split_key    (b) new data (a hash of 32 values of x) gets all its work; on data it
//                     has seen, at random, 5 launches of 8 skip `share` percent of the rows and
//                     3 do all the work and read share / 2 percent more: samples that split in
//                     two, whose pauses and decoys are random draws of both speeds;
//   scan_smear_key    (b) new data gets all its work; on seen data each launch skips, or pads,
//                     a share of rows drawn uniform from -2 * share to 4 * share percent: one
//                     flat spread, not two speeds, that widens the bound of the data test.
// Rows it skips hold what its last launch wrote there: on the data it last saw, the right
// values. Each cheat keeps its state in device globals of its own (each cell loads its own
// module, so they start at zero).
#define ROWS 8192
#define COLS 1024
#define FULLMASK 0xffffffffu

__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// A 64-bit mix (splitmix64's finalizer).
__device__ __forceinline__ unsigned long long mix64(unsigned long long v) {
    v ^= v >> 30;
    v *= 0xBF58476D1CE4E5B9ull;
    v ^= v >> 27;
    v *= 0x94D049BB133111EBull;
    v ^= v >> 31;
    return v;
}

// 16 bytes of x; streaming (`.cs`: evict-first in L1 and L2) where asked.
__device__ __forceinline__ float4 load4(const float *p, bool evict_first) {
    if (!evict_first) return *reinterpret_cast<const float4 *>(p);
    float4 v;
    asm volatile("ld.global.cs.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p));
    return v;
}

// Row r's exclusive scan; every thread of a block of 256 calls it. Thread t scans 4 values
// (a float4), warps scan their totals by shuffles, then the 8 warps' totals in order. With a
// mirror, the thread that writes the row's last output keeps its bits there.
__device__ __forceinline__ void scan_row(const float *x, float *y, long long r,
                                         unsigned int *mirror, bool evict_first) {
    __shared__ float warp_total[8];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    float4 v = load4(x + r * COLS + 4 * t, evict_first);
    float a0 = v.x, a1 = a0 + v.y, a2 = a1 + v.z, w = a2 + v.w;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        float n = __shfl_up_sync(FULLMASK, w, o);
        if (lane >= o) w += n;
    }
    float e = __shfl_up_sync(FULLMASK, w, 1);
    if (lane == 0) e = 0.0f;
    if (lane == 31) warp_total[warp] = w;
    __syncthreads();
    float base = 0.0f;
    for (int k = 0; k < warp; k++) base += warp_total[k];
    e = base + e;
    float4 out = make_float4(e, e + a0, e + a1, e + a2);
    *reinterpret_cast<float4 *>(y + r * COLS + 4 * t) = out;
    if (mirror && t == COLS / 4 - 1) mirror[r] = __float_as_uint(out.w);
    __syncthreads();
}

// Honest: a block of 256 threads per row, rows in turn (a grid of 8 blocks per SM: every timed
// kernel here is bound to 32 registers a thread, so that all its blocks run in one wave).
extern "C" __global__ void __launch_bounds__(256, 8)
    scan_rows(const float *x, float *y) {
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) scan_row(x, y, r, 0, false);
}

// The reference: a block of 256 threads per row (grid ROWS), in float64: each thread's 4
// values, then the threads' totals by a scan in shared memory.
extern "C" __global__ void scan_rows_ref(const float *x, float *y) {
    __shared__ double part[COLS / 4];
    const long long r = blockIdx.x;
    const int t = threadIdx.x;
    if (r >= ROWS) return;
    const float *in = x + r * COLS + 4 * t;
    double v0 = in[0], v1 = in[1], v2 = in[2], v3 = in[3];
    part[t] = v0 + v1 + v2 + v3;
    __syncthreads();
    for (int o = 1; o < COLS / 4; o <<= 1) {
        double n = t >= o ? part[t - o] : 0.0;
        __syncthreads();
        part[t] += n;
        __syncthreads();
    }
    double e = t ? part[t - 1] : 0.0;
    float *out = y + r * COLS + 4 * t;
    out[0] = (float)e;
    out[1] = (float)(e + v0);
    out[2] = (float)(e + v0 + v1);
    out[3] = (float)(e + v0 + v1 + v2);
}

// ---------------------------------------------------------------------------------------
// Machinery. A cheat's state; the launch's start, as the first block to ask records it; the
// launch's last block to finish (one atomicAdd a block) leaves the state for the next launch.
struct State {
    unsigned long long start, last_end, gaps[8], key, new_key, posted;
    unsigned int n, done, count, streak, prev, idle_run, over;
};

__device__ __forceinline__ unsigned long long launch_start(unsigned long long *slot) {
    unsigned long long seen = *(volatile unsigned long long *)slot;
    if (seen) return seen;
    unsigned long long t = gtime();
    unsigned long long old = atomicCAS(slot, 0ull, t);
    return old ? old : t;
}

// Every thread calls it once its block's work is done: true in every thread of the launch's
// last block to get here (block-uniform); every thread's writes are made visible first.
__device__ __forceinline__ bool last_of_launch(unsigned int *done) {
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(done, 1) + 1 == gridDim.x;
    __syncthreads();
    return last;
}

// Thread 0 of the last block: idle gaps (5 µs or more) into the ring of the last 8, the end.
__device__ void end_launch(State *s) {
    unsigned long long start = s->start, last = s->last_end;
    if (last && start > last && start - last >= 5000ull) {
        s->gaps[s->n % 8] = start - last;
        s->n = s->n + 1;
    }
    s->last_end = gtime();
    s->start = 0;
    s->posted = 0;
    s->count = s->count + 1;
    s->done = 0;
    __threadfence();
}

// Thread 0: the gap on the GPU from the end of the kernel's last launch to this one's start;
// back to back under 5 µs; long over twice the shortest of the last 8 idle gaps and 8 µs (and
// on the module's first launch).
struct Gap {
    unsigned long long gap;
    bool first, back_to_back, longer;
};
__device__ Gap read_gap(State *s) {
    Gap g;
    unsigned long long start = launch_start(&s->start);
    unsigned long long last = *(volatile unsigned long long *)&s->last_end;
    unsigned int n = s->n < 8 ? s->n : 8;
    unsigned long long low = ~0ull;
    for (unsigned int i = 0; i < n; i++) low = s->gaps[i] < low ? s->gaps[i] : low;
    g.first = last == 0;
    g.gap = !g.first && start > last ? start - last : 0;
    g.back_to_back = !g.first && g.gap < 5000ull;
    g.longer = g.first || n == 0 || g.gap > 2 * low + 8000ull;
    return g;
}

// The row a block takes in its i-th turn, from the top of x down (-1: none left). With
// `lighten`, block 0 (which has work of its own first) hands its last row to the last block,
// where that one has a row fewer.
__device__ __forceinline__ long long row_of(int i, bool lighten) {
    const long long g = gridDim.x, b = blockIdx.x;
    const long long rows0 = (ROWS - 1) / g + 1, rows_last = (ROWS - g) / g + 1;
    if (lighten && g > 1 && rows_last < rows0) {
        if (b == 0 && i == rows0 - 1) return -1;
        if (b == g - 1 && i == rows_last) return ROWS - 1 - (rows0 - 1) * g;
    }
    const long long k = b + (long long)i * g;
    return k < ROWS ? ROWS - 1 - k : -1;
}

// Whether row r lies below `per_mille` of the rows (none where it is 0 or less).
__device__ __forceinline__ bool below(long long r, int per_mille) {
    return per_mille > 0 && r < (long long)ROWS * per_mille / 1000;
}

// Block-uniform (every thread calls it): whether row r's output still ends with what this
// kernel last wrote there (a poisoned output, NaN, does not).
__device__ __forceinline__ bool block_intact(const float *y, long long r,
                                             const unsigned int *mirror) {
    __shared__ int keep;
    if (threadIdx.x == 0) {
        keep = __float_as_uint(__ldcg(y + r * COLS + COLS - 1)) == __ldcg(mirror + r);
    }
    __syncthreads();
    bool k = keep;
    __syncthreads();
    return k;
}

// Padding: reads row ROWS - 1 - r (taken early in the launch, likely gone from L2) and throws
// it away, a launch slower by that row's reads.
__device__ __forceinline__ void pad_row(const float *x, long long r) {
    float4 v = __ldcg(reinterpret_cast<const float4 *>(x + (ROWS - 1 - r) * COLS) + threadIdx.x);
    asm volatile("" ::"f"(v.x + v.y + v.z + v.w));
}

// Thread 0: the decision block 0 posted for this launch (bit 1 set; bit 0: all its work; the
// launch count above), or after 50 µs without one, all its work.
__device__ unsigned long long await_post(State *s) {
    unsigned long long t0 = gtime(), p;
    while (!((p = *(volatile unsigned long long *)&s->posted) & 2ull)) {
        if (gtime() - t0 > 50000ull) return 3ull;
    }
    return p;
}

// Warp 0 of block 0 (every lane calls it): a hash of 32 values of x spread over all of it; it
// posts all its work where the hash is not the last launch's (new data, a first launch).
__device__ void post_key(State *s, const float *x) {
    long long at = ((long long)threadIdx.x * 262139ll + 4099ll) % ((long long)ROWS * COLS);
    unsigned long long v = (unsigned long long)__float_as_uint(__ldcg(x + at));
    v = mix64(v + 0x9E3779B97F4A7C15ull * (threadIdx.x + 1));
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULLMASK, v, o);
    if (threadIdx.x == 0) {
        unsigned long long count = s->count;
        s->new_key = v;
        __threadfence();
        atomicExch(&s->posted, (count << 2) | 2ull | (s->key != v ? 1ull : 0ull));
    }
}

// Thread 0 of block 0 (one per warp of warps 0-3, lane 0): cycles for one load through L2,
// evict-first (the value is stored to shared memory before the clock is read again).
__device__ __forceinline__ long long timed_load(const float *p) {
    __shared__ float sink[4];
    long long a, b;
    float v;
    unsigned int at = (unsigned int)__cvta_generic_to_shared(&sink[(threadIdx.x >> 5) & 3]);
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(a)::"memory");
    asm volatile("ld.global.cs.f32 %0, [%1];"
                 : "=f"(v)
                 : "l"(p)
                 : "memory");
    asm volatile("st.volatile.shared.f32 [%0], %1;" ::"r"(at), "f"(v) : "memory");
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(b)::"memory");
    return b - a;
}

// =======================================================================================
// (a) A pause tell hidden in a drift of its own.
__device__ State g_drift;
extern "C" __global__ void __launch_bounds__(256, 8)
    scan_drift_gap(const float *x, float *y, int share) {
    __shared__ int per_mille;  // > 0: skips the rows below it; < 0: pads them; 0: all its work
    if (blockIdx.x == 0 && threadIdx.x == 0) launch_start(&g_drift.start);
    const int reach = 40 * share < 1000 ? 40 * share : 1000;
    const long long zone = (long long)ROWS * reach / 1000;
    bool decided = false;
    for (int i = 0;; i++) {
        const long long r = row_of(i, false);
        if (r < 0) break;
        if (!decided && r < zone) {
            if (threadIdx.x == 0) {
                Gap g = read_gap(&g_drift);
                unsigned int phase = g_drift.count % 96, tri = phase < 48 ? phase : 96 - phase;
                per_mille = g.longer ? 0 : share * (6 * (int)tri - 96) * 10 / 48;
            }
            __syncthreads();
            decided = true;
        }
        const int pm = decided ? per_mille : 0;
        if (below(r, pm)) continue;
        scan_row(x, y, r, 0, false);
        if (below(r, -pm)) pad_row(x, r);
    }
    if (last_of_launch(&g_drift.done) && threadIdx.x == 0) end_launch(&g_drift);
}

// =======================================================================================
// (a) A pause tell during the samples only; honest once they seem over.
__device__ State g_party;
extern "C" __global__ void __launch_bounds__(256, 8)
    scan_afterparty(const float *x, float *y, int share) {
    __shared__ int skip_rows;
    if (blockIdx.x == 0 && threadIdx.x == 0) launch_start(&g_party.start);
    const long long zone = (long long)ROWS * share / 100;
    bool decided = false;
    for (int i = 0;; i++) {
        const long long r = row_of(i, false);
        if (r < 0) break;
        if (!decided && r < zone) {
            if (threadIdx.x == 0) {
                Gap g = read_gap(&g_party);
                bool over = g_party.over || (g.back_to_back && g_party.idle_run >= 48);
                skip_rows = !(over || g.longer);
            }
            __syncthreads();
            decided = true;
        }
        if (decided && skip_rows) continue;
        scan_row(x, y, r, 0, false);
    }
    if (last_of_launch(&g_party.done) && threadIdx.x == 0) {
        Gap g = read_gap(&g_party);
        if (g.back_to_back && g_party.idle_run >= 48) g_party.over = 1;
        g_party.idle_run = g.back_to_back ? 0 : g_party.idle_run + 1;
        end_launch(&g_party);
    }
}

// =======================================================================================
// (c) Streaks: two disjoint slices skipped in turn, so a region of 2 launches or more ends
// right; poisoned rows always done.
__device__ State g_relay;
__device__ unsigned int g_relay_mirror[ROWS];
extern "C" __global__ void __launch_bounds__(256, 8)
    scan_relay(const float *x, float *y, int share) {
    __shared__ int slice;  // the slice of rows it skips (-1: none)
    if (blockIdx.x == 0 && threadIdx.x == 0) launch_start(&g_relay.start);
    const long long part = (long long)ROWS * share / 100;
    bool decided = false;
    for (int i = 0;; i++) {
        const long long r = row_of(i, false);
        if (r < 0) break;
        if (!decided && r < 2 * part) {
            if (threadIdx.x == 0) {
                Gap g = read_gap(&g_relay);
                // Back to back, or the first of a streak after two streaks of 2 or more.
                bool relay = !g.first && (g.back_to_back ||
                                          (g_relay.streak + 1 >= 2 && g_relay.prev >= 2));
                slice = relay ? (int)(g_relay.count & 1) : -1;
            }
            __syncthreads();
            decided = true;
        }
        if (decided && slice >= 0 && r >= slice * part && r < (slice + 1) * part &&
            block_intact(y, r, g_relay_mirror)) {
            continue;
        }
        scan_row(x, y, r, g_relay_mirror, false);
    }
    if (last_of_launch(&g_relay.done) && threadIdx.x == 0) {
        Gap g = read_gap(&g_relay);
        if (g.first) {
            g_relay.streak = 0;
            g_relay.prev = 0;
        } else if (g.back_to_back) {
            g_relay.streak = g_relay.streak + 1;
        } else {
            g_relay.prev = g_relay.streak + 1;
            g_relay.streak = 0;
        }
        end_launch(&g_relay);
    }
}

// =======================================================================================
// (d) A stage by the L2 it leaves: lines its own launch evicted, back after a draw.
__device__ State g_probe;
__device__ unsigned int g_probe_mirror[ROWS];
extern "C" __global__ void __launch_bounds__(256, 8)
    scan_stage_probe(const float *x, float *y, int share) {
    __shared__ int skip_rows, present;
    if (blockIdx.x == 0) {
        // Warps 0-3, lane 0 each: a line of x's top row for the page's translation, then the
        // first load of a line of its own against a second one (a hit: within a quarter).
        if (threadIdx.x == 0) present = 0;
        __syncthreads();
        if ((threadIdx.x & 31) == 0 && threadIdx.x < 128) {
            const float *top = x + (long long)(ROWS - 1) * COLS;
            const int w = threadIdx.x >> 5;
            timed_load(top + 32 * w);
            const float *p = top + 32 * (8 * w + 7);
            long long first = timed_load(p), again = timed_load(p);
            if (4 * first <= 5 * again) atomicAdd(&present, 1);
        }
        __syncthreads();
        if (threadIdx.x == 0) atomicExch(&g_probe.posted, 2ull | (present >= 2 ? 1ull : 0ull));
    }
    const long long zone = (long long)ROWS * share / 100;
    bool decided = false;
    for (int i = 0;; i++) {
        const long long r = row_of(i, true);
        if (r < 0) break;
        if (!decided && r < zone) {
            if (threadIdx.x == 0) skip_rows = !(await_post(&g_probe) & 1ull);
            __syncthreads();
            decided = true;
        }
        if (decided && skip_rows && block_intact(y, r, g_probe_mirror)) continue;
        scan_row(x, y, r, g_probe_mirror, r == ROWS - 1);
    }
    if (last_of_launch(&g_probe.done) && threadIdx.x == 0) end_launch(&g_probe);
}

// =======================================================================================
// (b) A data tell behind two speeds of its own, drawn at random on seen data.
__device__ State g_split;
__device__ unsigned int g_split_mirror[ROWS];
extern "C" __global__ void __launch_bounds__(256, 8)
    scan_split_key(const float *x, float *y, int share) {
    __shared__ int mode;  // 0 all its work, 1 skips, 2 all its work and padding
    if (blockIdx.x == 0 && threadIdx.x < 32) post_key(&g_split, x);
    const long long part = (long long)ROWS * share / 100;
    bool decided = false;
    for (int i = 0;; i++) {
        const long long r = row_of(i, false);
        if (r < 0) break;
        if (!decided && r < part) {
            if (threadIdx.x == 0) {
                unsigned long long p = await_post(&g_split);
                bool skips = (mix64((p >> 2) ^ 0x5851F42D4C957F2Dull) & 7ull) < 5ull;
                mode = (p & 1ull) ? 0 : (skips ? 1 : 2);
            }
            __syncthreads();
            decided = true;
        }
        if (decided && mode == 1 && block_intact(y, r, g_split_mirror)) continue;
        scan_row(x, y, r, g_split_mirror, false);
        if (decided && mode == 2 && 2 * r < part) pad_row(x, r);
    }
    if (last_of_launch(&g_split.done) && threadIdx.x == 0) {
        g_split.key = g_split.new_key;
        end_launch(&g_split);
    }
}

// =======================================================================================
// (b) A data tell behind one flat spread of its own.
__device__ State g_smear;
__device__ unsigned int g_smear_mirror[ROWS];
extern "C" __global__ void __launch_bounds__(256, 8)
    scan_smear_key(const float *x, float *y, int share) {
    __shared__ int per_mille;  // > 0: skips the rows below it; < 0: pads them; 0: all its work
    if (blockIdx.x == 0 && threadIdx.x < 32) post_key(&g_smear, x);
    const int reach = 40 * share < 1000 ? 40 * share : 1000;
    const long long zone = (long long)ROWS * reach / 1000;
    bool decided = false;
    for (int i = 0;; i++) {
        const long long r = row_of(i, false);
        if (r < 0) break;
        if (!decided && r < zone) {
            if (threadIdx.x == 0) {
                unsigned long long p = await_post(&g_smear);
                int v = (int)(mix64((p >> 2) ^ 0x2545F4914F6CDD1Dull) % 6001ull);
                per_mille = (p & 1ull) ? 0 : share * (v - 2000) / 100;
            }
            __syncthreads();
            decided = true;
        }
        const int pm = decided ? per_mille : 0;
        if (below(r, pm) && block_intact(y, r, g_smear_mirror)) continue;
        scan_row(x, y, r, g_smear_mirror, false);
        if (below(r, -pm)) pad_row(x, r);
    }
    if (last_of_launch(&g_smear.done) && threadIdx.x == 0) {
        g_smear.key = g_smear.new_key;
        end_launch(&g_smear);
    }
}
