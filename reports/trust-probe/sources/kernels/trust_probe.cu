// Row norms of a 16384 x 4096 f32 matrix (experiments/trust-probe.toml): an honest kernel, a
// float64 reference, and three cheats of the corpus's classes in forms it does not hold, each
// deciding in every block alone (one atomic a block, no block waiting for another), so that
// what they skip shows in their time:
//   rownorm_gap_ratio     all its work where the gap since its last launch ended is over 1.5x
//                         the gap before it, else skips `share` percent of its rows;
//   rownorm_gap_quartile  all its work where the gap is over the upper quartile of its last 16;
//   rownorm_cache4        a direct-mapped cache of 4 results keyed by a hash of 32 input values
//                         spread over x: on a hit it copies `share` percent of its rows.
// Each cheat keeps its state in device globals of its own (each cell loads its own module).
#define ROWS 16384
#define COLS 4096

__device__ __forceinline__ unsigned long long gtime() {
    unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
__device__ __forceinline__ bool in_share(long long u, int share) {
    return (u * share) / 100 != ((u + 1) * share) / 100;
}
__device__ float row_norm(const float *x, long long r) {
    __shared__ float part[32];
    const float4 *in = reinterpret_cast<const float4 *>(x + r * COLS);
    float s = 0.0f;
    for (int k = threadIdx.x; k < COLS / 4; k += blockDim.x) {
        float4 v = in[k]; s += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    }
    __syncthreads();
    return sqrtf(s);
}

extern "C" __global__ void rownorm(const float *x, float *y) {
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        float v = row_norm(x, r);
        if (threadIdx.x == 0) y[r] = v;
    }
}

extern "C" __global__ void rownorm_ref(const float *x, float *y) {
    long long r = blockIdx.x;
    if (r >= ROWS) return;
    double s = 0.0;
    if (threadIdx.x == 0) {
        for (int j = 0; j < COLS; j++) { double v = x[r * COLS + j]; s += v * v; }
        y[r] = (float)sqrt(s);
    }
}


// Each block decides alone, from the launch's start as the first block to arrive records it
// (one atomic a block), so no block waits for another.
__device__ __forceinline__ unsigned long long launch_start(unsigned long long *slot) {
    unsigned long long t = gtime();
    unsigned long long old = atomicCAS(slot, 0ull, t);
    return old ? old : t;
}
__device__ __forceinline__ bool last_of_launch(unsigned int *done) {
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(done, 1) + 1 == gridDim.x;
    __syncthreads();
    return last;
}

// (A) all its work where the gap since its last launch ended is over 1.5x the gap before
// that one; else skips `share` percent of its rows.
__device__ unsigned long long ra_start, ra_last_end, ra_prev_gap, ra_gap;
__device__ unsigned int ra_done;
extern "C" __global__ void rownorm_gap_ratio(const float *x, float *y, int share) {
    __shared__ int all_work;
    if (threadIdx.x == 0) {
        unsigned long long start = launch_start(&ra_start), last = ra_last_end;
        unsigned long long gap = last ? start - last : ~0ull, prev = ra_prev_gap;
        all_work = last == 0 || prev == 0 || (double)gap > 1.5 * (double)prev;
        if (blockIdx.x == 0) ra_gap = gap;
    }
    __syncthreads();
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        if (all_work || !in_share(r, share)) {
            float v = row_norm(x, r);
            if (threadIdx.x == 0) y[r] = v;
        }
    }
    if (last_of_launch(&ra_done) && threadIdx.x == 0) {
        ra_prev_gap = ra_gap; ra_last_end = gtime(); ra_start = 0; ra_done = 0; __threadfence();
    }
}

// (B) all its work where the gap is over the upper quartile of its last 16 gaps.
__device__ unsigned long long qb_start, qb_last_end, qb_gap, qb_gaps[16];
__device__ unsigned int qb_n, qb_done;
extern "C" __global__ void rownorm_gap_quartile(const float *x, float *y, int share) {
    __shared__ int all_work;
    if (threadIdx.x == 0) {
        unsigned long long start = launch_start(&qb_start), last = qb_last_end;
        unsigned long long gap = last ? start - last : ~0ull;
        unsigned int n = qb_n < 16 ? qb_n : 16;
        int above = 0;
        for (unsigned int i = 0; i < n; i++) above += gap > qb_gaps[i];
        all_work = n < 8 || above * 4 > (int)n * 3 + 1;
        if (blockIdx.x == 0) qb_gap = gap;
    }
    __syncthreads();
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        if (all_work || !in_share(r, share)) {
            float v = row_norm(x, r);
            if (threadIdx.x == 0) y[r] = v;
        }
    }
    if (last_of_launch(&qb_done) && threadIdx.x == 0) {
        if (qb_last_end) { qb_gaps[qb_n % 16] = qb_gap; qb_n++; }
        qb_last_end = gtime(); qb_start = 0; qb_done = 0; __threadfence();
    }
}

// (C) a direct-mapped cache of 4 results keyed by a hash of 32 input values spread over x,
// each block hashing them itself (a warp's loads); on a hit it copies `share` percent of
// its rows from the slot; on a miss it computes all and fills the slot.
__device__ unsigned long long cc_keys[4];
__device__ float cc_rows[4][ROWS];
__device__ unsigned long long cc_key_now;
__device__ unsigned int cc_done;
extern "C" __global__ void rownorm_cache4(const float *x, float *y, int share) {
    __shared__ unsigned long long key;
    if (threadIdx.x < 32) {
        long long at = ((long long)threadIdx.x * 2654435761ll) % ((long long)ROWS * COLS);
        unsigned long long v = __float_as_uint(x[at]);
        v = (v + 0x9E3779B97F4A7C15ull * (threadIdx.x + 1)) * 0xBF58476D1CE4E5B9ull;
        v ^= v >> 31;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0) key = v | 1ull;
    }
    __syncthreads();
    unsigned long long k = key;
    int slot = (int)((k >> 7) & 3);
    bool hit = cc_keys[slot] == k;
    for (long long r = blockIdx.x; r < ROWS; r += gridDim.x) {
        if (hit && in_share(r, share)) {
            if (threadIdx.x == 0) y[r] = cc_rows[slot][r];
        } else {
            float v = row_norm(x, r);
            if (threadIdx.x == 0) { y[r] = v; if (!hit) cc_rows[slot][r] = v; }
        }
    }
    if (!hit && threadIdx.x == 0) cc_key_now = k;
    __threadfence();
    if (last_of_launch(&cc_done) && threadIdx.x == 0) {
        if (cc_key_now == k && !hit) cc_keys[slot] = k;
        cc_done = 0; __threadfence();
    }
}
