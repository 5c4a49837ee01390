// A GEMV, y = A x for a row-major 16384 x 8192 f32 matrix A (512 MiB read, about 120-140 µs
// on an H200), for experiments/trust-adversary.toml: an honest kernel, a float64 reference,
// and six cheats written against docs/methodology.md, in forms the corpus (trust.cu,
// trust_shapes.cu, trust_probe.cu) does not hold. Every kernel takes a block of 256 threads per
// row (one row a block, 16384 blocks); every cheat skips `share` percent of its rows (evenly
// spread) where it believes it is not audited, so that what it skips shows in its time, and
// decides in every block alone (at most one atomic a block to learn the launch's start, one to
// count the blocks done; no block waits for another):
//   gemv_gap_q80        (a) pause tell: all its work where the gap since its last launch ended
//                       is over 1.5 times an exponentially weighted 80th percentile of its
//                       gaps (a stochastic quantile tracker: up 1/16 on a gap above it, down
//                       1/64 below, reset where a gap falls under a quarter of it) and 5 µs;
//                       else skips `share` percent of its rows;
//   gemv_dither_pad     (a) pause tell that hides behind two speeds of its own: all its work,
//                       unpadded, where the gap is over 1.25 times an exponentially weighted
//                       median of its gaps (steps of 1/16, reset where a gap falls under half
//                       of it) and 20 µs; after a shorter gap, in 3 launches of 8 (drawn from a
//                       hash of the launch's start) all its work plus a read of 2 * share + 5
//                       percent of another row per row (a slower mode above where its pauses
//                       read), in the other 5 it skips `share` percent of its rows, leaving
//                       them as its last launch wrote them. It never skips a row whose output
//                       is not what it last wrote there (a device-global mirror of y), so a
//                       launch on poisoned outputs does that row's work;
//   gemv_lru3           (b) a result cache of 3 outputs, least recently used out, keyed by a
//                       hash of 64 strided values (32 of A over its whole length, 32 of x),
//                       each block hashing them itself: on a hit it copies `share` percent of
//                       its rows from the slot, on a miss computes all and fills the oldest;
//   gemv_rowkey_second  (b) a cache of its own per row, keyed by the row's first 32 values and
//                       x's first 32 (one warp's loads), engaging only on the second sight of
//                       a key: the first sight computes and keeps the key, the second computes
//                       and keeps the value where it matches the last one, from the third the
//                       row's value is copied; only `share` percent of the rows are cached;
//   gemv_every8         (c) first launch in graphs and batches: all its work on the first launch
//                       after a long period (the time since its last launch STARTED over 1.6
//                       times the shortest of its last 4 periods) and on every 8th launch after
//                       it; else skips `share` percent of its rows;
//   gemv_cache_dither   (a+b) a one-output cache keyed by a hash of 32 values of A and 32 of x,
//                       and a pause tell: after a gap over twice the median of its last 5
//                       short gaps and 10 µs (long ones never enter them) it computes all and
//                       refreshes the cache, unpadded; after a shorter gap on a hit, in 3
//                       launches of 8 all its work plus a read of share + 10 percent of another
//                       row per row, in the other 5 it copies `share` percent of its rows from
//                       the cache; on a miss it computes all and fills the cache.
// Skipped rows hold the right values where a launch skips: a cache hit copies them, and a
// pause tell skips only on the data it last computed (the held data is the same between
// timed launches). Each cheat keeps its state in device globals of its own (each cell loads
// its own module, so they start at zero).
#define ROWS 16384
#define COLS 8192
#define SIZE ((long long)ROWS * COLS)

__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Whether unit `u` is among the `share` percent of units skipped (evenly spread).
__device__ __forceinline__ bool in_share(long long u, int share) {
    return (u * share) / 100 != ((u + 1) * share) / 100;
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

// A block's sum, in thread 0 (every thread calls it).
__device__ __forceinline__ float block_sum(float s) {
    __shared__ float part[32];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < (blockDim.x >> 5) ? part[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    }
    __syncthreads();
    return s;
}

// Row r of A times x, in thread 0: float4 loads, the same order in every kernel here (so the
// same bits every launch).
__device__ __forceinline__ float row_dot(const float *A, const float *x, long long r) {
    const float4 *a = reinterpret_cast<const float4 *>(A + r * COLS);
    const float4 *v = reinterpret_cast<const float4 *>(x);
    float s = 0.0f;
#pragma unroll 8
    for (int k = threadIdx.x; k < COLS / 4; k += blockDim.x) {
        float4 p = a[k];
        float4 q = __ldg(&v[k]);
        s += p.x * q.x + p.y * q.y + p.z * q.z + p.w * q.w;
    }
    return block_sum(s);
}

// Honest.
extern "C" __global__ void gemv(const float *A, const float *x, float *y) {
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        float v = row_dot(A, x, r);
        if (threadIdx.x == 0) y[r] = v;
    }
}

// The reference: a block of 256 threads per row (a power of two), in float64.
extern "C" __global__ void gemv_ref(const float *A, const float *x, float *y) {
    __shared__ double part[256];
    long long r = blockIdx.x;
    if (r >= ROWS) return;
    double s = 0.0;
    for (int j = threadIdx.x; j < COLS; j += blockDim.x) {
        s += (double)A[r * COLS + j] * (double)x[j];
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) part[threadIdx.x] += part[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[r] = (float)part[0];
}

// ---------------------------------------------------------------------------------------
// Machinery. The launch's start, as the first block to arrive records it: a block that finds
// it recorded takes no atomic, one that does not takes one CAS. The last block of a launch to
// finish (one atomicAdd a block) leaves the state for the next launch and clears the slot.

__device__ __forceinline__ unsigned long long launch_start(unsigned long long *slot) {
    unsigned long long seen = *(volatile unsigned long long *)slot;
    if (seen) return seen;
    unsigned long long t = gtime();
    unsigned long long old = atomicCAS(slot, 0ull, t);
    return old ? old : t;
}

// Every thread calls it, once the block's work is done: true in every thread of the launch's
// last block to get here (block-uniform); every thread's writes are made visible first.
__device__ __forceinline__ bool last_of_launch(unsigned int *done) {
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(done, 1) + 1 == gridDim.x;
    __syncthreads();
    return last;
}

// Reads `percent` percent of a row of A far from row r (half the matrix away: not in L2 when
// it is read) and throws the sum away, so that the reads happen: a launch made slower by that
// many bytes.
__device__ __forceinline__ void pad_reads(const float *A, long long r, int percent) {
    const float4 *a = reinterpret_cast<const float4 *>(A + ((r + ROWS / 2) % ROWS) * COLS);
    long long n4 = ((long long)percent * (COLS / 4)) / 100;
    if (n4 > COLS / 4) n4 = COLS / 4;
    float e = 0.0f;
    for (int k = threadIdx.x; k < n4; k += blockDim.x) {
        float4 p = a[k];
        e += p.x + p.y + p.z + p.w;
    }
    asm volatile("" : : "f"(e));
}

// Warp 0 of a block (every lane calls it): a hash of 32 values of A at `a_at(lane)` and 32 of
// x at `x_at(lane)`, summed over the lanes; never 0.
__device__ __forceinline__ unsigned long long warp_key(const float *A, const float *x,
                                                       long long a_at, int x_at,
                                                       unsigned long long salt) {
    unsigned long long v = ((unsigned long long)__float_as_uint(A[a_at]) << 32) |
                           (unsigned long long)__float_as_uint(x[x_at]);
    v = mix64(v + salt * (threadIdx.x + 1));
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v | 1ull;
}

// Warp 0 of a block: the key of 64 strided values, 32 of A, one every 1/32 of its length, and
// 32 of x, one every 32nd of its length (`lru-3`'s and `smear`'s).
__device__ __forceinline__ unsigned long long strided_key(const float *A, const float *x) {
    long long a_at = (2ll * threadIdx.x + 1) * (SIZE / 64);
    int x_at = threadIdx.x * (COLS / 32) + 5;
    return warp_key(A, x, a_at, x_at, 0x9E3779B97F4A7C15ull);
}

// ---------------------------------------------------------------------------------------
// (a) All its work where the gap since its last launch ended is over 1.5 times an
// exponentially weighted 80th percentile of its gaps, and 5 µs: a stochastic quantile tracker
// that steps up by 1/16 after a gap above it and down by 1/64 after one below (so that a
// fifth of the gaps lie above it), reset to a gap under a quarter of it (the checked launch's
// long gap is forgotten once the warm-up runs back to back). Else skips `share` percent of
// its rows.
__device__ unsigned long long q1_start, q1_last_end, q1_q;
__device__ unsigned int q1_done;
extern "C" __global__ void gemv_gap_q80(const float *A, const float *x, float *y, int share) {
    __shared__ int all_work;
    unsigned long long last = 0, gap = 0;
    if (threadIdx.x == 0) {
        unsigned long long start = launch_start(&q1_start), q = q1_q;
        last = q1_last_end;
        gap = last ? start - last : ~0ull;
        all_work = last == 0 || q == 0 || gap > q + q / 2 + 5000ull;
    }
    __syncthreads();
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        if (all_work || !in_share(r, share)) {
            float v = row_dot(A, x, r);
            if (threadIdx.x == 0) y[r] = v;
        }
    }
    if (last_of_launch(&q1_done) && threadIdx.x == 0) {
        if (last) {
            unsigned long long q = q1_q;
            if (q == 0 || gap < q / 4) q = gap;
            else if (gap > q) q += q / 16;
            else q -= q / 64;
            q1_q = q ? q : 1;
        }
        q1_last_end = gtime();
        q1_start = 0;
        q1_done = 0;
        __threadfence();
    }
}

// ---------------------------------------------------------------------------------------
// (a) A pause tell that hides behind two speeds of its own. After a long gap (over 1.25 times
// an exponentially weighted median of its gaps, and 20 µs; the median steps by 1/16 toward
// each gap and is reset to a gap under half of it) it does all its work, unpadded: every
// region of the audit, whose stage and pause are long, reads as the honest kernel. After a
// shorter gap, in 3 launches of 8 (drawn from a hash of the launch's start, the same in every
// block) it does all its work and reads 2 * share + 5 percent of another row per row besides,
// a mode slower than the honest kernel and than its own pauses; in the other 5 it skips
// `share` percent of its rows, leaving them as its last launch wrote them (the held data is
// the same). So its timed median is a skipping launch, its timed samples' upper quartile a
// padded one: the pauses read between the two, under the quartile that tells a kernel of two
// speeds whose pauses all fall with its slow launches, and within the bound the spread of two
// speeds gives. It never skips a row whose output is not what it last wrote there (a
// device-global mirror of y): a launch alone on poisoned outputs does all its work.
// `honest_from`: the launch (counted from the module's load) from which it does all its work
// in every launch, unpadded (0: never; `dither-counted`, added by the project).
__device__ unsigned long long d2_start, d2_last_end, d2_m;
__device__ unsigned int d2_done, d2_launches;
__device__ unsigned int d2_mirror[ROWS];
__device__ __forceinline__ void dither_pad(const float *A, const float *x, float *y, int share,
                                           unsigned int honest_from) {
    __shared__ int mode;  // 0 skip, 1 all its work, 2 all its work and the padding
    __shared__ int do_row;
    unsigned long long last = 0, gap = 0;
    if (threadIdx.x == 0) {
        unsigned long long start = launch_start(&d2_start), m = d2_m;
        last = d2_last_end;
        gap = last ? start - last : ~0ull;
        bool long_gap = last == 0 || m == 0 || gap > m + m / 4 + 20000ull;
        bool honest = honest_from && d2_launches >= honest_from;
        mode = long_gap || honest ? 1 : ((mix64(start) & 7) < 3 ? 2 : 0);
    }
    __syncthreads();
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        if (threadIdx.x == 0) {
            do_row = mode != 0 || !in_share(r, share) ||
                     __float_as_uint(y[r]) != d2_mirror[r];
        }
        __syncthreads();
        if (do_row) {
            float v = row_dot(A, x, r);
            if (threadIdx.x == 0) {
                y[r] = v;
                d2_mirror[r] = __float_as_uint(v);
            }
            if (mode == 2) pad_reads(A, r, 2 * share + 5);
        }
        __syncthreads();
    }
    if (last_of_launch(&d2_done) && threadIdx.x == 0) {
        if (last) {
            unsigned long long m = d2_m;
            if (m == 0 || gap < m / 2) m = gap;
            else if (gap > m) m += m / 16;
            else m -= m / 16;
            d2_m = m ? m : 1;
        }
        d2_last_end = gtime();
        d2_start = 0;
        d2_done = 0;
        d2_launches += 1;
        __threadfence();
    }
}
extern "C" __global__ void gemv_dither_pad(const float *A, const float *x, float *y, int share) {
    dither_pad(A, x, y, share, 0);
}

// Added by the project: `dither-pad` that counts its launches and does all its work in every
// one from launch `after` on, once its samples are over: a second reading after them meets
// an honest kernel.
extern "C" __global__ void gemv_dither_counted(const float *A, const float *x, float *y,
                                               int share, int after) {
    dither_pad(A, x, y, share, (unsigned int)after);
}

// ---------------------------------------------------------------------------------------
// (b) A result cache of 3 outputs, the least recently used one replaced, keyed by a hash of
// 64 strided values: 32 of A, one every 1/32 of its length, and 32 of x, one every 32nd of
// its length; every block hashes them itself (warp 0's loads, from L2 after the first block).
// On a hit it copies `share` percent of its rows from the slot and computes the rest; on a
// miss it computes all and fills the slot least recently used (or never used). The state
// moves only in the launch's last block, so every block of a launch decides alike.
__device__ unsigned long long l3_keys[3];
__device__ unsigned int l3_stamp[3], l3_valid[3], l3_clock, l3_done;
__device__ float l3_store[3][ROWS];
extern "C" __global__ void gemv_lru3(const float *A, const float *x, float *y, int share) {
    __shared__ unsigned long long key;
    __shared__ int slot, hit;
    if (threadIdx.x < 32) {
        unsigned long long k = strided_key(A, x);
        if (threadIdx.x == 0) {
            int found = -1, oldest = 0;
            for (int s = 0; s < 3; s++) {
                if (l3_valid[s] && l3_keys[s] == k) found = s;
                unsigned int age_s = l3_valid[s] ? l3_stamp[s] : 0u;
                unsigned int age_o = l3_valid[oldest] ? l3_stamp[oldest] : 0u;
                if (age_s < age_o) oldest = s;
            }
            key = k;
            hit = found >= 0;
            slot = found >= 0 ? found : oldest;
        }
    }
    __syncthreads();
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        if (hit && in_share(r, share)) {
            if (threadIdx.x == 0) y[r] = l3_store[slot][r];
        } else {
            float v = row_dot(A, x, r);
            if (threadIdx.x == 0) {
                y[r] = v;
                if (!hit) l3_store[slot][r] = v;
            }
        }
    }
    if (last_of_launch(&l3_done) && threadIdx.x == 0) {
        unsigned int now = ++l3_clock;
        if (!hit) {
            l3_keys[slot] = key;
            l3_valid[slot] = 1;
        }
        l3_stamp[slot] = now;
        l3_done = 0;
        __threadfence();
    }
}

// ---------------------------------------------------------------------------------------
// (b) A cache of its own per row, engaging only on the second sight of a key: rows among
// `share` percent keep a key (a hash of the row's first 32 values and x's first 32, warp 0's
// loads: 256 bytes of the row's 32 KiB and x), a value and how often they saw them. The first
// sight of a key computes the row and keeps the key; the second computes it again and keeps
// the value where it matches the first (a cache that trusts only a result seen twice); from
// the third sight the row's value is copied. No state is shared between blocks: every block
// decides for its own row, with no atomic at all.
__device__ unsigned long long rk_key[ROWS];
__device__ unsigned int rk_bits[ROWS], rk_seen[ROWS];
extern "C" __global__ void gemv_rowkey_second(const float *A, const float *x, float *y,
                                              int share) {
    __shared__ unsigned long long key;
    __shared__ int copy;
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        bool cached = in_share(r, share);
        if (cached && threadIdx.x < 32) {
            unsigned long long k =
                warp_key(A, x, r * COLS + threadIdx.x, threadIdx.x, 0xD1B54A32D192ED03ull);
            if (threadIdx.x == 0) {
                key = k;
                copy = rk_key[r] == k && rk_seen[r] >= 2;
            }
        }
        __syncthreads();
        if (cached && copy) {
            if (threadIdx.x == 0) y[r] = __uint_as_float(rk_bits[r]);
        } else {
            float v = row_dot(A, x, r);
            if (threadIdx.x == 0) {
                y[r] = v;
                if (cached) {
                    unsigned int bits = __float_as_uint(v);
                    if (rk_key[r] != key) {
                        rk_key[r] = key;
                        rk_bits[r] = bits;
                        rk_seen[r] = 1;
                    } else {
                        rk_seen[r] = rk_bits[r] == bits ? 2 : 1;
                        rk_bits[r] = bits;
                    }
                }
            }
        }
        __syncthreads();
    }
}

// ---------------------------------------------------------------------------------------
// (c) First launch in graphs and batches: all its work on the first launch after a long
// period and on every 8th launch after it; else skips `share` percent of its rows. Periods
// are measured start to start (the launch's first block's timer; nothing is read at a
// launch's end), and one is long where it is over 1.6 times the shortest of the last 4 (a
// skipping launch's period: one that did all its work is a third longer at most, a region's
// stage and pause add hundreds of µs). In a region of 20 it does all its work on launches 0,
// 8 and 16; a graph's timed replays, one long streak, do it on every 8th launch wherever it
// falls.
__device__ unsigned long long e8_start, e8_prev_start, e8_periods[4];
__device__ unsigned int e8_n, e8_streak, e8_done;
extern "C" __global__ void gemv_every8(const float *A, const float *x, float *y, int share) {
    __shared__ int all_work;
    unsigned long long start = 0, prev = 0, period = 0;
    unsigned int k = 0;
    if (threadIdx.x == 0) {
        start = launch_start(&e8_start);
        prev = e8_prev_start;
        period = prev ? start - prev : ~0ull;
        unsigned int n = e8_n < 4 ? e8_n : 4;
        unsigned long long shortest = ~0ull;
        for (unsigned int i = 0; i < n; i++) {
            if (e8_periods[i] < shortest) shortest = e8_periods[i];
        }
        bool long_period = n == 0 || period > shortest + shortest / 2 + shortest / 10;
        k = long_period ? 0 : e8_streak + 1;
        all_work = k % 8 == 0;
    }
    __syncthreads();
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        if (all_work || !in_share(r, share)) {
            float v = row_dot(A, x, r);
            if (threadIdx.x == 0) y[r] = v;
        }
    }
    if (last_of_launch(&e8_done) && threadIdx.x == 0) {
        if (prev) {
            e8_periods[e8_n % 4] = period;
            e8_n = e8_n + 1;
        }
        e8_prev_start = start;
        e8_streak = k;
        e8_start = 0;
        e8_done = 0;
        __threadfence();
    }
}

// ---------------------------------------------------------------------------------------
// (a+b) A cache of one output keyed by a hash of 32 values of A (at positions a multiplicative
// hash of the lane spreads over it) and 32 of x, and a pause tell. A gap is long where it is
// over twice the median of the last 5 short gaps and 10 µs (a long gap never enters them; a
// gap under half their median restarts them). After a long gap it computes all and refreshes
// the cache, unpadded (every region of the audit reads as the honest kernel, decoys as audited
// regions). After a short gap, on a hit, in 3 launches of 8 (a hash of the launch's start and
// the key) it computes all and reads share + 10 percent of another row per row besides (a
// slower mode above its pauses), and in the other 5 it copies `share` percent of its rows from
// the cache. On a miss it computes all and fills the cache: its skipped rows are right on any
// data.
__device__ unsigned long long c6_start, c6_last_end, c6_key, c6_gaps[5];
__device__ unsigned int c6_n, c6_valid, c6_done;
__device__ float c6_store[ROWS];
extern "C" __global__ void gemv_cache_dither(const float *A, const float *x, float *y,
                                             int share) {
    __shared__ unsigned long long key;
    __shared__ int mode;  // 0 copy, 1 all its work, 2 all its work and the padding
    __shared__ int hit;
    unsigned long long last = 0, gap = 0, median = 0;
    bool long_gap = true;
    if (threadIdx.x < 32) {
        long long a_at = ((long long)threadIdx.x * 2654435761ll * 97) % SIZE;
        int x_at = (threadIdx.x * 257 + 11) % COLS;
        unsigned long long k = warp_key(A, x, a_at, x_at, 0xC2B2AE3D27D4EB4Full);
        if (threadIdx.x == 0) {
            unsigned long long start = launch_start(&c6_start);
            last = c6_last_end;
            gap = last ? start - last : ~0ull;
            // The median of the short gaps kept (fewer than 5 at first): insertion sort.
            unsigned int n = c6_n < 5 ? c6_n : 5;
            unsigned long long g[5];
            for (unsigned int i = 0; i < n; i++) {
                unsigned long long v = c6_gaps[i];
                unsigned int j = i;
                while (j > 0 && g[j - 1] > v) {
                    g[j] = g[j - 1];
                    j--;
                }
                g[j] = v;
            }
            median = n ? g[n / 2] : 0;
            long_gap = last == 0 || n == 0 || gap > 2 * median + 10000ull;
            key = k;
            hit = c6_valid && c6_key == k;
            mode = (long_gap || !hit) ? 1 : ((mix64(start ^ k) & 7) < 3 ? 2 : 0);
        }
    }
    __syncthreads();
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        if (mode == 0 && in_share(r, share)) {
            if (threadIdx.x == 0) y[r] = c6_store[r];
        } else {
            float v = row_dot(A, x, r);
            if (threadIdx.x == 0) {
                y[r] = v;
                c6_store[r] = v;
            }
            if (mode == 2) pad_reads(A, r, share + 10);
        }
    }
    if (last_of_launch(&c6_done) && threadIdx.x == 0) {
        if (!hit) {
            c6_key = key;
            c6_valid = 1;
        }
        if (last) {
            if (c6_n == 0 || gap < median / 2) {
                c6_gaps[0] = gap;
                c6_n = 1;
            } else if (!long_gap) {
                c6_gaps[c6_n % 5] = gap;
                c6_n = c6_n + 1;
            }
        }
        c6_last_end = gtime();
        c6_start = 0;
        c6_done = 0;
        __threadfence();
    }
}

// ---------------------------------------------------------------------------------------
// Added by the project: a one-output cache keyed as `lru-3`'s whose timed launches spread on
// purpose. On a miss (new data: every audited region) it computes all its rows and keeps
// them; on a hit it copies a share of its rows drawn anew each launch, uniformly from
// `share` - 10 to `share` + 10 percent (a hash of the launch's start, alike in every block),
// and computes the rest. Its timed launches and decoys then spread over a fifth of its work,
// which widens the bound its audited regions are judged by.
__device__ unsigned long long sm_key, sm_start;
__device__ unsigned int sm_valid, sm_done;
__device__ float sm_store[ROWS];
extern "C" __global__ void gemv_smear(const float *A, const float *x, float *y, int share) {
    __shared__ unsigned long long key;
    __shared__ int hit, skip;
    if (threadIdx.x < 32) {
        unsigned long long k = strided_key(A, x);
        if (threadIdx.x == 0) {
            unsigned long long start = launch_start(&sm_start);
            key = k;
            hit = sm_valid && sm_key == k;
            int s = share - 10 + (int)(mix64(start) % 21);
            skip = s < 0 ? 0 : s;
        }
    }
    __syncthreads();
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        if (hit && in_share(r, skip)) {
            if (threadIdx.x == 0) y[r] = sm_store[r];
        } else {
            float v = row_dot(A, x, r);
            if (threadIdx.x == 0) {
                y[r] = v;
                if (!hit) sm_store[r] = v;
            }
        }
    }
    if (last_of_launch(&sm_done) && threadIdx.x == 0) {
        if (!hit) {
            sm_key = key;
            sm_valid = 1;
        }
        sm_start = 0;
        sm_done = 0;
        __threadfence();
    }
}
