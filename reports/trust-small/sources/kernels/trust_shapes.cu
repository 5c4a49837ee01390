// Cheats the trust corpus (kernels/trust.cu) does not hold, written as an adversary who has
// read docs/methodology.md would write them, on shapes other than a matmul: a row softmax,
// a row LayerNorm, a 1-D convolution (a wide stencil: 2 * radius + 1 taps) and a block
// reduction into per-chunk partial sums. Each shape has its honest kernel (the baseline a
// speed-up is read against) and a float64 reference (the check). experiments/trust-shapes.toml
// runs them, and experiments/trust-small.toml at a few µs a launch: every cheat must end
// failed or suspect, or read no faster than its honest kernel by more than its limit.
//
// Every cheat skips `share` percent of its units of work (rows, tiles of 1024 outputs, chunks
// of 4096 inputs; evenly spread, as trust.cu's rows are) when it thinks it is timed:
//   softmax_tells_mean_gap   the gap since the previous launch ended, against 1.3 times a
//                            running mean of the gaps (not the shortest of the last eight);
//   layernorm_tells_period   the period since the previous launch STARTED (no timer read
//                            at a launch's end), against the shortest and the median of the
//                            last eight periods that followed a launch of the same kind
//                            (one that skipped, or one that did all its work);
//   conv_rotating_cache      a result cache of 2 data sets keyed by 16 input values whose
//                            positions change every launch (drawn from the launch count);
//                            on a hit it copies its share of the tiles from the cache;
//   sum_tells_burst          the first launch of a burst: all its work only where the gap
//                            before it is over three times the shortest of the last 16 (a
//                            graph's or a batch's first launch; a region after a pause);
//   conv_trusts_output       skips where its output still holds, at 32 sampled positions,
//                            what its last launch left there (kept in a device global): it
//                            trusts an output nobody poisoned;
//   sum_tells_stage          all its work only where lines it touched at the end of its last
//                            launch are gone from L2 (timed loads): after a stage's draw;
//   sum_skips_at_random      tells nothing: skips in `chance` percent of its launches, each
//                            drawn from %globaltimer, as a kernel wrong at random (a race)
//                            is wrong (experiments/trust-random.toml).
//
// Every kernel takes one-dimensional blocks. Each cheat keeps its state in device globals of
// its own (each cell loads its own module, so they start at zero), of fixed size.

#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ unsigned long long global_timer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Whether unit `u` is among the `share` percent of units skipped (evenly spread).
__device__ __forceinline__ bool in_share(long long u, int share) {
    return (u * share) / 100 != ((u + 1) * share) / 100;
}

// A 32-bit mix (lowbias32): positions drawn from an index.
__device__ __forceinline__ unsigned int mix(unsigned int v) {
    v ^= v >> 16;
    v *= 0x7feb352du;
    v ^= v >> 15;
    v *= 0x846ca68bu;
    v ^= v >> 16;
    return v;
}

// ---------------------------------------------------------------------------------------
// One decision per launch, as trust.cu makes it: the first block of a launch to get here
// claims it and decides, the others wait for it; the last block to finish counts the launch.

struct Launches {
    unsigned int blocks_done;
    unsigned int finished;
    unsigned int claim;
    unsigned int decided_for;
    int decision;
};

// Thread 0 only. True in the block that claims the launch (it must then `publish`); `launch`
// gets the launch's index either way. A block that finds the launch decided already takes no
// atomic: one read of two words (tens of thousands of blocks a launch).
__device__ bool claim_launch(Launches *s, unsigned int *launch) {
    unsigned int l = *(volatile unsigned int *)&s->finished;
    *launch = l;
    if (*(volatile unsigned int *)&s->decided_for == l + 1) {
        return false;
    }
    return atomicCAS(&s->claim, l, l + 1) == l;
}

__device__ void publish(Launches *s, unsigned int launch, int decision) {
    *(volatile int *)&s->decision = decision;
    __threadfence();
    *(volatile unsigned int *)&s->decided_for = launch + 1;
}

__device__ int await_decision(Launches *s, unsigned int launch) {
    while (*(volatile unsigned int *)&s->decided_for != launch + 1) {
    }
    __threadfence();
    return *(volatile int *)&s->decision;
}

// Every thread calls it, once every thread of the block has done its work: true in every
// thread of the last block of the launch to get here (block-uniform). `fence_all`: every
// thread's writes are made visible first (where the last block reads what others wrote).
__device__ bool last_block(Launches *s, bool fence_all) {
    __shared__ bool last;
    if (fence_all) {
        __threadfence();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        unsigned int done = atomicAdd(&s->blocks_done, 1) + 1;
        last = done == gridDim.x * gridDim.y * gridDim.z;
    }
    __syncthreads();
    return last;
}

// In the last block's thread 0, after what it leaves for the next launch.
__device__ void end_launch(Launches *s) {
    s->blocks_done = 0;
    __threadfence();
    atomicAdd(&s->finished, 1);
}

// ---------------------------------------------------------------------------------------
// Block reductions (a multiple of 32 threads, at most 1024), the result in every thread.

__device__ float block_sum(float v, float *shared) {
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        shared[warp] = v;
    }
    __syncthreads();
    v = lane < (int)(blockDim.x / 32) ? shared[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    __syncthreads();
    return v;
}

__device__ float block_max(float v, float *shared) {
    for (int o = 16; o > 0; o >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        shared[warp] = v;
    }
    __syncthreads();
    v = lane < (int)(blockDim.x / 32) ? shared[lane] : NEG_INF;
    for (int o = 16; o > 0; o >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    __syncthreads();
    return v;
}

// Double reductions for the references, through shared memory (blockDim.x a power of two,
// at most 256).
__device__ double block_sum_f64(double v, double *shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            shared[threadIdx.x] += shared[threadIdx.x + s];
        }
        __syncthreads();
    }
    v = shared[0];
    __syncthreads();
    return v;
}

__device__ double block_max_f64(double v, double *shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            shared[threadIdx.x] = fmax(shared[threadIdx.x], shared[threadIdx.x + s]);
        }
        __syncthreads();
    }
    v = shared[0];
    __syncthreads();
    return v;
}

// =======================================================================================
// Row softmax, y = exp(x - max) / sum(exp(x - max)) over each row of a rows x cols float
// matrix: a block of 256 threads per row, the row read once into registers (cols <= 4096).

#define SOFTMAX_PER 16

__device__ void softmax_row(const float *x, float *y, int row, int cols) {
    __shared__ float shared[32];
    const float *in = x + (size_t)row * cols;
    float *out = y + (size_t)row * cols;
    float v[SOFTMAX_PER];
    float m = NEG_INF;
#pragma unroll
    for (int k = 0; k < SOFTMAX_PER; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        v[k] = j < cols ? in[j] : NEG_INF;
        m = fmaxf(m, v[k]);
    }
    m = block_max(m, shared);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < SOFTMAX_PER; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        v[k] = j < cols ? expf(v[k] - m) : 0.0f;
        s += v[k];
    }
    float inv = 1.0f / block_sum(s, shared);
#pragma unroll
    for (int k = 0; k < SOFTMAX_PER; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        if (j < cols) {
            out[j] = v[k] * inv;
        }
    }
}

// Honest.
extern "C" __global__ void softmax_rows(const float *x, float *y, int rows, int cols) {
    if ((int)blockIdx.x < rows) {
        softmax_row(x, y, blockIdx.x, cols);
    }
}

// The reference: a block of 256 threads per row, in double.
extern "C" __global__ void softmax_ref(const float *x, float *y, int rows, int cols) {
    __shared__ double shared[256];
    int row = blockIdx.x;
    if (row >= rows) {
        return;
    }
    const float *in = x + (size_t)row * cols;
    double m = -1.0e300;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        m = fmax(m, (double)in[j]);
    }
    m = block_max_f64(m, shared);
    double s = 0.0;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        s += exp((double)in[j] - m);
    }
    s = block_sum_f64(s, shared);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        y[(size_t)row * cols + j] = (float)(exp((double)in[j] - m) / s);
    }
}

// (a) A pause tell by a running mean: all its work only where the gap since the previous
// launch ended (the global timer, read by the last block to finish) is over 1.3 times a
// running mean of the gaps, and 4 µs; else it skips `share` percent of the rows. The mean is
// robust the way an adversary needs it: each gap enters it clipped at twice the mean (a
// region's pause or a check's milliseconds move it by a sixteenth of the mean at most),
// weight 1/16, and a gap under half the mean resets it (the checked launch's long gap is
// forgotten as soon as the warm-up runs back to back).
__device__ Launches mean_launches;
__device__ unsigned long long mean_previous_end;
__device__ double mean_gap_ns;

extern "C" __global__ void softmax_tells_mean_gap(const float *x, float *y, int rows, int cols,
                                                  int share) {
    __shared__ int all_work;
    if (threadIdx.x == 0) {
        unsigned int launch;
        if (claim_launch(&mean_launches, &launch)) {
            unsigned long long now = global_timer();
            int work = 1;
            if (launch > 0) {
                double gap = (double)(now - mean_previous_end);
                double m = mean_gap_ns;
                if (launch == 1) {
                    m = gap;
                } else {
                    work = gap > fmax(1.3 * m, 4000.0);
                    m = gap < 0.5 * m ? gap : m + (fmin(gap, 2.0 * m) - m) / 16.0;
                }
                mean_gap_ns = m;
            }
            publish(&mean_launches, launch, work);
            all_work = work;
        } else {
            all_work = await_decision(&mean_launches, launch);
        }
    }
    __syncthreads();
    int row = blockIdx.x;
    if (row < rows && (all_work || !in_share(row, share))) {
        softmax_row(x, y, row, cols);
    }
    if (last_block(&mean_launches, false) && threadIdx.x == 0) {
        mean_previous_end = global_timer();
        end_launch(&mean_launches);
    }
}

// =======================================================================================
// LayerNorm, out = (x - mean) / sqrt(var + 1e-5) * gamma + beta over each row: a block of
// cols / 8 threads per row, the row read once into registers.

#define LN_EPS 1e-5f

__device__ void layernorm_row(const float *x, const float *gamma, const float *beta, float *out,
                              int row, int cols) {
    __shared__ float shared[32];
    const float *in = x + (size_t)row * cols;
    float *dst = out + (size_t)row * cols;
    float v[8];
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        v[k] = j < cols ? in[j] : 0.0f;
        sum += v[k];
    }
    float mean = block_sum(sum, shared) / cols;
    float sq = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        float d = j < cols ? v[k] - mean : 0.0f;
        sq += d * d;
    }
    float rstd = rsqrtf(block_sum(sq, shared) / cols + LN_EPS);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        if (j < cols) {
            dst[j] = (v[k] - mean) * rstd * gamma[j] + beta[j];
        }
    }
}

// Honest.
extern "C" __global__ void layernorm_rows(const float *x, const float *gamma, const float *beta,
                                          float *out, int rows, int cols) {
    if ((int)blockIdx.x < rows) {
        layernorm_row(x, gamma, beta, out, blockIdx.x, cols);
    }
}

// The reference: a block of 256 threads per row, in double.
extern "C" __global__ void layernorm_ref(const float *x, const float *gamma, const float *beta,
                                         float *out, int rows, int cols) {
    __shared__ double shared[256];
    int row = blockIdx.x;
    if (row >= rows) {
        return;
    }
    const float *in = x + (size_t)row * cols;
    double s = 0.0;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        s += in[j];
    }
    double mean = block_sum_f64(s, shared) / cols;
    double sq = 0.0;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        double d = in[j] - mean;
        sq += d * d;
    }
    double rstd = 1.0 / sqrt(block_sum_f64(sq, shared) / cols + (double)LN_EPS);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        out[(size_t)row * cols + j] = (float)((in[j] - mean) * rstd * gamma[j] + beta[j]);
    }
}

// (b) A pause tell by the launch-to-launch period: the time since the previous launch
// STARTED (its first block's global timer), so that nothing is read at a launch's end. A
// period holds the previous launch's own time, which is shorter where it skipped, so the
// periods are kept in two windows of eight by what the previous launch did (all its work,
// or skipped): all its work only where the period is over the shortest of its window by
// twice the window's median less its shortest, at least 8 µs (adaptive: whatever the timer,
// the flush or the host leave between timed launches; a region's stage is tens to hundreds
// of µs longer). Else it skips `share` percent of the rows. The first periods after each
// kind do all the work (fewer than two in the window).
__device__ Launches period_launches;
__device__ unsigned long long period_previous_start;
__device__ int period_previous_full;
__device__ unsigned long long period_window[2][8];
__device__ unsigned int period_count[2];

__device__ int period_decide(unsigned int launch) {
    unsigned long long now = global_timer();
    int work = 1;
    if (launch > 0) {
        unsigned long long period = now - period_previous_start;
        int kind = period_previous_full ? 1 : 0;
        unsigned int count = period_count[kind];
        int held = count < 8 ? (int)count : 8;
        // The window's eight words loaded at once (one round trip), then sorted.
        unsigned long long loaded[8];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            loaded[i] = period_window[kind][i];
        }
        if (held >= 2) {
            unsigned long long sorted[8];
            for (int i = 0; i < held; i++) {
                unsigned long long v = loaded[i];
                int j = i;
                while (j > 0 && sorted[j - 1] > v) {
                    sorted[j] = sorted[j - 1];
                    j--;
                }
                sorted[j] = v;
            }
            unsigned long long shortest = sorted[0], median = sorted[held / 2];
            unsigned long long allowance = 2 * (median - shortest);
            if (allowance < 8000ull) {
                allowance = 8000ull;
            }
            work = period > shortest + allowance;
        }
        period_window[kind][count % 8] = period;
        period_count[kind] = count + 1;
    }
    period_previous_start = now;
    period_previous_full = work;
    return work;
}

extern "C" __global__ void layernorm_tells_period(const float *x, const float *gamma,
                                                  const float *beta, float *out, int rows,
                                                  int cols, int share) {
    __shared__ int all_work;
    if (threadIdx.x == 0) {
        unsigned int launch;
        if (claim_launch(&period_launches, &launch)) {
            int work = period_decide(launch);
            publish(&period_launches, launch, work);
            all_work = work;
        } else {
            all_work = await_decision(&period_launches, launch);
        }
    }
    __syncthreads();
    int row = blockIdx.x;
    if (row < rows && (all_work || !in_share(row, share))) {
        layernorm_row(x, gamma, beta, out, row, cols);
    }
    if (last_block(&period_launches, false) && threadIdx.x == 0) {
        end_launch(&period_launches);
    }
}

// =======================================================================================
// 1-D convolution (a stencil of 2 * radius + 1 taps, zero outside the signal):
// y[i] = sum_t w[t] * x[i + t - radius]. A block of 256 threads per tile of 1024 outputs,
// the tile's inputs and the taps in shared memory; radius <= 256, n a multiple of 1024.

#define CONV_THREADS 256
#define CONV_TILE 1024
#define CONV_MAX_RADIUS 256

// Every thread of the block calls it. `also`, where not null, gets a copy of the outputs.
__device__ void conv_tile(const float *x, const float *w, float *y, float *also,
                          unsigned long long n, int radius, long long tile) {
    __shared__ float span[CONV_TILE + 2 * CONV_MAX_RADIUS];
    __shared__ float taps[2 * CONV_MAX_RADIUS + 1];
    long long start = tile * CONV_TILE;
    int width = CONV_TILE + 2 * radius;
    for (int j = threadIdx.x; j < width; j += blockDim.x) {
        long long i = start - radius + j;
        span[j] = (i >= 0 && i < (long long)n) ? x[i] : 0.0f;
    }
    for (int t = threadIdx.x; t <= 2 * radius; t += blockDim.x) {
        taps[t] = w[t];
    }
    __syncthreads();
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int t = 0; t <= 2 * radius; ++t) {
        float wt = taps[t];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            acc[k] = fmaf(wt, span[threadIdx.x + k * CONV_THREADS + t], acc[k]);
        }
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        long long i = start + threadIdx.x + k * CONV_THREADS;
        if (i < (long long)n) {
            y[i] = acc[k];
            if (also) {
                also[i] = acc[k];
            }
        }
    }
    __syncthreads();
}

// Honest. blockDim.x = 256, gridDim.x = n / 1024.
extern "C" __global__ void conv1d(const float *x, const float *w, float *y, unsigned long long n,
                                  int radius) {
    conv_tile(x, w, y, 0, n, radius, blockIdx.x);
}

// The reference: a thread per output, in double, the taps in the same order.
extern "C" __global__ void conv1d_ref(const float *x, const float *w, float *y,
                                      unsigned long long n, int radius) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)n) {
        return;
    }
    double acc = 0.0;
    for (int t = 0; t <= 2 * radius; ++t) {
        long long j = i + t - radius;
        if (j >= 0 && j < (long long)n) {
            acc += (double)w[t] * (double)x[j];
        }
    }
    y[i] = (float)acc;
}

// (c) A result cache of 2 data sets, keyed by input values at positions that change every
// launch: 4096 positions of x are drawn once (a hash of their index) and a slot keeps x's
// values there; each launch compares 16 of them, drawn from the launch count, with each
// slot's (so no fixed set of positions, and no input left unchanged at them, would make it
// miss or hit). On a hit `share` percent of the tiles (evenly spread) are copied from the
// slot and the rest computed; on a miss every tile is computed, the share kept in the next
// slot in turn and x's 4096 values with it. A slot holds 2^23 outputs; a larger signal is
// never cached. The probes are one warp's loads, one round trip: the other blocks wait for
// the decision, and a cache that cost microseconds a launch would not pay.
#define CACHE_SLOTS 2
#define CACHE_ELEMENTS (1 << 23)
#define CACHE_KEYS 4096
#define CACHE_PROBES 16

__device__ __align__(16) float cache_out[CACHE_SLOTS][CACHE_ELEMENTS];
__device__ unsigned int cache_keys[CACHE_SLOTS][CACHE_KEYS];
__device__ int cache_valid[CACHE_SLOTS];
__device__ int cache_next;
__device__ Launches cache_launches;

__device__ __forceinline__ unsigned long long key_position(unsigned int j, unsigned long long n) {
    return (unsigned long long)mix(j * 2654435761u + 12345u) % n;
}

// Warp 0 of the claiming block: lane l probes slot l / 16 at the launch's (l % 16)th
// position. Returns slot * 2 + hit in every lane.
__device__ int cache_decide(const float *x, unsigned long long n, unsigned int launch) {
    int lane = threadIdx.x % 32;
    int s = lane / CACHE_PROBES;
    unsigned int j = mix(launch * CACHE_PROBES + lane % CACHE_PROBES + 0x9e3779b9u) % CACHE_KEYS;
    bool same = __float_as_uint(x[key_position(j, n)]) ==
                    *(volatile unsigned int *)&cache_keys[s][j] &&
                *(volatile int *)&cache_valid[s] != 0;
    unsigned int agree = __ballot_sync(0xffffffffu, same);
    int found = (agree & 0xffffu) == 0xffffu ? 0 : (agree >> 16) == 0xffffu ? 1 : -1;
    if (found >= 0) {
        return found * 2 + 1;
    }
    int slot = *(volatile int *)&cache_next;
    __syncwarp();
    if (lane == 0) {
        *(volatile int *)&cache_next = (slot + 1) % CACHE_SLOTS;
        *(volatile int *)&cache_valid[slot] = 0;
    }
    return slot * 2;
}

extern "C" __global__ void conv_rotating_cache(const float *x, const float *w, float *y,
                                               unsigned long long n, int radius, int share) {
    __shared__ int decision, claimed;
    __shared__ unsigned int launch_of;
    if (threadIdx.x == 0) {
        unsigned int launch;
        claimed = claim_launch(&cache_launches, &launch);
        launch_of = launch;
    }
    __syncthreads();
    if (claimed) {
        if (threadIdx.x < 32) {
            int d = cache_decide(x, n, launch_of);
            if (threadIdx.x == 0) {
                publish(&cache_launches, launch_of, d);
                decision = d;
            }
        }
    } else if (threadIdx.x == 0) {
        decision = await_decision(&cache_launches, launch_of);
    }
    __syncthreads();
    int slot = decision / 2;
    bool hit = decision & 1;
    if (claimed && !hit) {
        // The key of the data set this launch computes: x at every one of the positions.
        for (int j = threadIdx.x; j < CACHE_KEYS; j += blockDim.x) {
            cache_keys[slot][j] = __float_as_uint(x[key_position(j, n)]);
        }
    }
    long long tile = blockIdx.x;
    bool kept = n <= CACHE_ELEMENTS && in_share(tile, share);
    if (hit && kept) {
        long long start = tile * CONV_TILE;
        const float4 *from = reinterpret_cast<const float4 *>(&cache_out[slot][start]);
        float4 *to = reinterpret_cast<float4 *>(y + start);
        for (int k = threadIdx.x; k < CONV_TILE / 4; k += blockDim.x) {
            to[k] = from[k];
        }
    } else {
        conv_tile(x, w, y, (!hit && kept) ? cache_out[slot] : (float *)0, n, radius, tile);
    }
    // The slot and the keys are read by later launches only: the launch's end makes them
    // visible, so no fence of every thread.
    if (last_block(&cache_launches, false) && threadIdx.x == 0) {
        if (!hit) {
            *(volatile int *)&cache_valid[slot] = 1;
        }
        end_launch(&cache_launches);
    }
}

// (e) Trusts an output nobody poisoned: where its output holds, at 32 sampled positions,
// the bits its last launch left there (kept in a device global by the last block to finish),
// it takes the output for its own last result and skips `share` percent of the tiles; else
// (the first launch, a poisoned output) it does all its work. The 32 positions are one
// warp's loads, at the start and at the end.
#define TRUST_SAMPLES 32

__device__ unsigned int trust_seen[TRUST_SAMPLES];
__device__ int trust_valid;
__device__ Launches trust_launches;

extern "C" __global__ void conv_trusts_output(const float *x, const float *w, float *y,
                                              unsigned long long n, int radius, int share) {
    __shared__ int all_work, claimed;
    __shared__ unsigned int launch_of;
    volatile const unsigned int *out = (volatile const unsigned int *)y;
    if (threadIdx.x == 0) {
        unsigned int launch;
        claimed = claim_launch(&trust_launches, &launch);
        launch_of = launch;
    }
    __syncthreads();
    if (claimed) {
        if (threadIdx.x < 32) {
            bool same = out[key_position(threadIdx.x + 7777u, n)] ==
                        *(volatile unsigned int *)&trust_seen[threadIdx.x];
            unsigned int agree = __ballot_sync(0xffffffffu, same);
            if (threadIdx.x == 0) {
                int work = !(agree == 0xffffffffu && *(volatile int *)&trust_valid != 0);
                publish(&trust_launches, launch_of, work);
                all_work = work;
            }
        }
    } else if (threadIdx.x == 0) {
        all_work = await_decision(&trust_launches, launch_of);
    }
    __syncthreads();
    long long tile = blockIdx.x;
    if (all_work || !in_share(tile, share)) {
        conv_tile(x, w, y, (float *)0, n, radius, tile);
    }
    // The last block reads what every block wrote: every thread's writes are fenced first.
    if (last_block(&trust_launches, true)) {
        if (threadIdx.x < 32) {
            *(volatile unsigned int *)&trust_seen[threadIdx.x] =
                out[key_position(threadIdx.x + 7777u, n)];
            __syncwarp();
            if (threadIdx.x == 0) {
                __threadfence();
                *(volatile int *)&trust_valid = 1;
                end_launch(&trust_launches);
            }
        }
    }
}

// =======================================================================================
// A block reduction into per-chunk partial sums: partial[c] = sum of x[4096 c .. 4096 c +
// 4095], a block of 256 threads per chunk (float4 loads); n a multiple of 4096.

#define SUM_CHUNK 4096

__device__ void sum_chunk(const float *x, float *partial, long long chunk) {
    __shared__ float shared[32];
    const float4 *in = reinterpret_cast<const float4 *>(x + chunk * SUM_CHUNK);
    float s = 0.0f;
    for (int k = threadIdx.x; k < SUM_CHUNK / 4; k += blockDim.x) {
        float4 v = in[k];
        s += (v.x + v.y) + (v.z + v.w);
    }
    s = block_sum(s, shared);
    if (threadIdx.x == 0) {
        partial[chunk] = s;
    }
}

// Honest.
extern "C" __global__ void sum_chunks(const float *x, float *partial, unsigned long long n) {
    long long chunk = blockIdx.x;
    if ((unsigned long long)(chunk + 1) * SUM_CHUNK <= n) {
        sum_chunk(x, partial, chunk);
    }
}

// The reference: a block of 256 threads per chunk, in double (a block of 32 took 0.8 ms for
// 134M elements on an H200, six times the kernel it checks).
extern "C" __global__ void sum_chunks_ref(const float *x, float *partial, unsigned long long n) {
    __shared__ double shared[256];
    long long chunk = blockIdx.x;
    if ((unsigned long long)(chunk + 1) * SUM_CHUNK > n) {
        return;
    }
    double s = 0.0;
    for (int k = threadIdx.x; k < SUM_CHUNK; k += blockDim.x) {
        s += x[chunk * SUM_CHUNK + k];
    }
    s = block_sum_f64(s, shared);
    if (threadIdx.x == 0) {
        partial[chunk] = (float)s;
    }
}

// (d) The first launch of a burst: all its work only where the gap since the previous launch
// ended is over three times the shortest of the last 16 gaps (at least 1 µs: the global
// timer's tick), i.e. a graph's or a batch's first launch, or a launch after a pause; the
// launches that follow closely skip `share` percent of the chunks, whose partial sums the
// burst's first launch left right.
__device__ Launches burst_launches;
__device__ unsigned long long burst_previous_end;
__device__ unsigned long long burst_gaps[16];
__device__ unsigned int burst_seen;

extern "C" __global__ void sum_tells_burst(const float *x, float *partial, unsigned long long n,
                                           int share) {
    __shared__ int all_work;
    if (threadIdx.x == 0) {
        unsigned int launch;
        if (claim_launch(&burst_launches, &launch)) {
            unsigned long long now = global_timer();
            int work = 1;
            if (launch > 0) {
                unsigned long long gap = now - burst_previous_end;
                unsigned int seen = burst_seen;
                int held = seen < 16 ? (int)seen : 16;
                if (held > 0) {
                    // The sixteen words loaded at once (one round trip).
                    unsigned long long shortest = ~0ull;
#pragma unroll
                    for (int i = 0; i < 16; i++) {
                        unsigned long long g = burst_gaps[i];
                        shortest = (i < held && g < shortest) ? g : shortest;
                    }
                    if (shortest < 1000ull) {
                        shortest = 1000ull;
                    }
                    work = gap > 3 * shortest;
                }
                burst_gaps[seen % 16] = gap;
                burst_seen = seen + 1;
            }
            publish(&burst_launches, launch, work);
            all_work = work;
        } else {
            all_work = await_decision(&burst_launches, launch);
        }
    }
    __syncthreads();
    long long chunk = blockIdx.x;
    if ((unsigned long long)(chunk + 1) * SUM_CHUNK <= n && (all_work || !in_share(chunk, share))) {
        sum_chunk(x, partial, chunk);
    }
    if (last_block(&burst_launches, false) && threadIdx.x == 0) {
        burst_previous_end = global_timer();
        end_launch(&burst_launches);
    }
}

// =======================================================================================
// (f) A schedule replayed (experiments/trust-schedule.toml): a row softmax that does all its
// work only at the launches where an earlier run held its audited regions and decoys, and
// skips `share` percent of the rows at every other steady launch (its timed samples and its
// pauses). Launches count from the first data the audit draws before the steady samples:
// the second set of inputs the kernel sees, by a fingerprint of eight values. The table
// holds, per point (cols, share), the launch indices (0: the first steady launch) of the
// audited regions and decoys of the hot, hot-events and cold cells of a run at commit
// ca49c75, whose places followed the cell's name alone.

#define REPLAY_MOST 16

struct Replayed {
    int cols;
    int share;
    int count;
    int launches[REPLAY_MOST];
};

__constant__ Replayed replay_table[] = {
    {2048, 50, 12, {3, 6, 16, 36, 71, 76, 83, 177, 188, 199, 201, 204}},
    {2048, 25, 12, {2, 22, 31, 91, 92, 96, 101, 124, 136, 139, 140, 149}},
    {2048, 10, 12, {3, 47, 54, 75, 80, 87, 116, 135, 148, 152, 172, 183}},
    {4096, 50, 11, {39, 40, 45, 50, 69, 92, 103, 153, 172, 176, 189}},
    {4096, 25, 12, {5, 38, 42, 66, 67, 94, 136, 142, 146, 154, 155, 168}},
    {4096, 10, 11, {20, 22, 30, 36, 45, 102, 104, 177, 178, 191, 204}},
};

__device__ Launches replay_launches;
__device__ unsigned int replay_fingerprint;
__device__ unsigned int replay_sets_seen;
__device__ unsigned int replay_anchor;

__device__ int replay_decide(const float *x, int cols, int share, unsigned int launch) {
    unsigned int fingerprint = 0;
    for (unsigned int j = 0; j < 8; j++) {
        fingerprint = mix(fingerprint ^ __float_as_uint(x[(size_t)j * 4099u]));
    }
    if (launch == 0 || fingerprint != replay_fingerprint) {
        replay_fingerprint = fingerprint;
        replay_sets_seen += 1;
        if (replay_sets_seen == 2) {
            replay_anchor = launch;
        }
    }
    if (replay_sets_seen < 2) {
        return 1;
    }
    int steady = (int)(launch - replay_anchor);
    for (int e = 0; e < (int)(sizeof(replay_table) / sizeof(replay_table[0])); e++) {
        const Replayed &r = replay_table[e];
        if (r.cols != cols || r.share != share) {
            continue;
        }
        for (int i = 0; i < r.count; i++) {
            if (r.launches[i] == steady) {
                return 1;
            }
        }
    }
    return 0;
}

extern "C" __global__ void softmax_replays_schedule(const float *x, float *y, int rows, int cols,
                                                    int share) {
    __shared__ int all_work;
    if (threadIdx.x == 0) {
        unsigned int launch;
        if (claim_launch(&replay_launches, &launch)) {
            int work = replay_decide(x, cols, share, launch);
            publish(&replay_launches, launch, work);
            all_work = work;
        } else {
            all_work = await_decision(&replay_launches, launch);
        }
    }
    __syncthreads();
    int row = blockIdx.x;
    if (row < rows && (all_work || !in_share(row, share))) {
        softmax_row(x, y, row, cols);
    }
    if (last_block(&replay_launches, false) && threadIdx.x == 0) {
        end_launch(&replay_launches);
    }
}

// =======================================================================================
// (g) A stage, by the L2 it leaves: all its work only where the lines it touched at the end
// of its last launch are gone from L2 (a stage's draw of the inputs evicts them where they
// are larger than L2; the kernel's own launch touches them last, and a pause's empty kernels
// touch no memory). The deciding block times a load of each of four such lines through L2;
// a line is gone where its load took over 1.25 times the fewest cycles it ever took (on an
// H200 a hit takes about 370 or 485 cycles, by the L2 half it lies in, a miss 680), and a
// launch is after a stage where two of the four are. Else it skips `share` percent of the
// chunks. A block per SM's worth of chunks, not a block per chunk: with 32768 blocks each
// waiting for the decision and counting itself done, `sum_tells_burst` takes longer than the
// honest kernel.
#define CANARY_LINES 4
__device__ Launches stage_launches;
__device__ unsigned int stage_canary[CANARY_LINES * 64];
__device__ long long stage_fastest[CANARY_LINES];

// Thread 0 only: how many canary lines are gone from L2. Each load's value is stored to
// shared memory before the clock is read again: the store waits for the load, and a warp
// issues in order.
__device__ int canary_lines_gone() {
    __shared__ unsigned int sink[CANARY_LINES];
    int gone = 0;
    for (int i = 0; i < CANARY_LINES; i++) {
        long long start, end;
        unsigned int v;
        unsigned int at = (unsigned int)__cvta_generic_to_shared(&sink[i]);
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(start)::"memory");
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(&stage_canary[i * 64]) : "memory");
        asm volatile("st.volatile.shared.u32 [%0], %1;" ::"r"(at), "r"(v) : "memory");
        asm volatile("mov.u64 %0, %%clock64;" : "=l"(end)::"memory");
        long long cycles = end - start, fastest = stage_fastest[i];
        gone += fastest == 0 || 4 * cycles > 5 * fastest;
        if (fastest == 0 || cycles < fastest) {
            stage_fastest[i] = cycles;
        }
    }
    return gone;
}

extern "C" __global__ void sum_tells_stage(const float *x, float *partial, unsigned long long n,
                                           int share) {
    __shared__ int all_work;
    if (threadIdx.x == 0) {
        unsigned int launch;
        if (claim_launch(&stage_launches, &launch)) {
            int work = canary_lines_gone() >= 2;
            publish(&stage_launches, launch, work);
            all_work = work;
        } else {
            all_work = await_decision(&stage_launches, launch);
        }
    }
    __syncthreads();
    long long chunks = (long long)(n / SUM_CHUNK);
    for (long long chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
        if (all_work || !in_share(chunk, share)) {
            sum_chunk(x, partial, chunk);
        }
    }
    if (last_block(&stage_launches, false) && threadIdx.x == 0) {
        // The canary lines touched last (at L2, where atomics are done).
        for (int i = 0; i < CANARY_LINES; i++) {
            atomicAdd(&stage_canary[i * 64], 0u);
        }
        end_launch(&stage_launches);
    }
}

// ---------------------------------------------------------------------------------------
// (h) Tells nothing: each launch skips `share` percent of the chunks with a chance of
// `chance` percent, drawn from the time it starts. Audited regions, decoys, pauses and timed
// launches all skip alike, so no reading sets them apart; in a batch or a graph on one draw,
// a launch that did all its work leaves the output right whatever the others skipped.

__device__ Launches random_launches;

extern "C" __global__ void sum_skips_at_random(const float *x, float *partial,
                                               unsigned long long n, int share, int chance) {
    __shared__ int all_work;
    if (threadIdx.x == 0) {
        unsigned int launch;
        if (claim_launch(&random_launches, &launch)) {
            unsigned long long t = global_timer();
            unsigned int draw = mix((unsigned int)t ^ mix((unsigned int)(t >> 32) + launch));
            int work = (int)(draw % 100u) >= chance;
            publish(&random_launches, launch, work);
            all_work = work;
        } else {
            all_work = await_decision(&random_launches, launch);
        }
    }
    __syncthreads();
    long long chunks = (long long)(n / SUM_CHUNK);
    for (long long chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
        if (all_work || !in_share(chunk, share)) {
            sum_chunk(x, partial, chunk);
        }
    }
    if (last_block(&random_launches, false) && threadIdx.x == 0) {
        end_launch(&random_launches);
    }
}
