// An all-pairs gravitational n-body step, for experiments/trust-adversary-4.toml: the acceleration
// and potential of 8192 bodies, each pulled by all 8192 (self included: it adds no pull), with a
// Plummer softening of 0.1 (eps^2 = 0.01):
//   a_i = sum_j m_j (p_j - p_i) / (|p_j - p_i|^2 + eps^2)^(3/2),
//   phi_i = -sum_j m_j / (|p_j - p_i|^2 + eps^2)^(1/2)
// pos holds a float4 a body (x, y, z, w), each drawn uniform(-1, 1); a body's mass is 1 + w / 2
// (0.5 to 1.5), so that every draw of the buffer is a valid system. acc gets a float4 a body
// (ax, ay, az, phi). 67M interactions a launch, compute bound (about 14 FP32 instructions and an
// rsqrt each), 128 KiB read and 128 KiB written: an honest kernel, a plain reference, and six
// cheats written by a fourth adversary against docs/methodology.md, in forms the earlier corpora
// do not hold, on a shape none of them holds.
//
// Every timed kernel takes a grid of 128 blocks of 512 threads, one block an SM (4 of an
// H100/H200's 132 idle), one wave. Each thread keeps 16 attracting bodies in registers (j = t +
// 512 k), the block walks its 64 bodies one after another: every thread adds its 16 sources' pull,
// a warp sums by shuffles, the 16 warp sums meet in shared memory, thread b writes body b. So a
// block's time is its bodies' count times a body's, and every block of a launch skips the same
// share of its bodies (pick(): an even spread, floor(64 * share / 100) of each block's 64), so what
// a cheat skips comes off every SM alike and the launch shortens in proportion.
//
// The cheats skip whole bodies (leaving acc[i] as their last launch wrote it, right wherever the
// inputs have not changed since), never a body whose output is poisoned (all bits set: NaN), and
// never on inputs whose fingerprint (32 sampled bodies, hashed) differs from their last launch's,
// so that their audited regions' checks and their launches alone pass: what is left to tell them
// apart is time. Each keeps its state in device globals of its own, read by every block at its
// start (so the blocks of a launch agree) and written by the block that finishes last (a ticket
// taken after a fence: every other block is done, so no block of the launch reads it half
// written). A launch's start is the earliest block's %globaltimer, its end the last block's.
//   nbody_gap_over_run  (1) a pause tell scaled by its own run time: all its work where the gap
//                       since its last launch ended is longer than that launch itself took (start
//                       to end) and 6 µs; else skips `share` percent. No history of gaps: its unit
//                       is what it takes itself, so a timing loop's gaps (about 13 µs between
//                       launches of 25-35 µs) read short and regions (a stage's wait and more)
//                       read long, whatever the timer;
//   nbody_pair_cache    (2) a 2-slot result cache keyed by a hash of 64 bodies sampled at a stride
//                       of 127 over the whole input, mixed with both buffers' addresses (a moved
//                       buffer misses): on a hit it copies `share` percent of its bodies from the
//                       slot (right on poisoned outputs too) and computes the rest, on a miss
//                       computes all and fills the least recently used slot;
//   nbody_first_after_change (3) graphs and batches: all its work on a launch that follows any
//                       change, of its inputs' fingerprint, of 8 sampled outputs against what it
//                       left there, or of time (a gap over 4 µs: a replay's or a batch's first
//                       launch), and `share` percent skipped on a launch straight after its own
//                       (a region's later launches). In single launches every launch follows a
//                       gap: it is honest there, and the experiment runs it in graphs and batches
//                       only;
//   nbody_region_smear  (4) a spread of its own behind a data tell: on new data (fingerprint) all
//                       its work; else it skips a share drawn per streak (back-to-back launches
//                       within 4 µs: a graph replay, a batch, or one launch alone) uniform from 0
//                       to 2 x `share` percent (median `share`), the same for every launch of the
//                       streak. A graph's or a batch's sample is its launches' mean, which a share
//                       drawn per launch would average flat; drawn per region it spreads the
//                       samples, whose spread the methodology looks at only in single launches;
//   nbody_replica_probe (5) a stage tell by where its inputs' lines live in L2: at its start warp
//                       0 of every block issues, side by side, loads of 32 lines of pos and of 32
//                       control lines of its own (a device array every block reads at its end and
//                       nothing else touches), all through L2 (ld.global.cg), and times how much
//                       later the pos loads complete, twice on two disjoint sets. L2 keeps copies
//                       of a line near the SMs that read it (an H100's two partitions); the last
//                       launch read every line of pos from every SM, so after a pause both sets
//                       complete together, while a stage's draw rewrites every line of pos (and
//                       its read-back reads them first) and leaves each in one place only: far
//                       for half the SMs, or evicted. Both sets over 128 cycles late, after a gap
//                       over 8 µs: all of that block's work, else `share` percent skipped. No
//                       block loads pos before its own probe; a block that misses a stage skips
//                       harmlessly (the data is the held data, or the fingerprint saw new data);
//                       any block that catches it holds the launch to its full time. A hot cell's
//                       stage test allows a whole L2 of dirty lines (26 µs on an H200) against
//                       the few µs it skips;
//   nbody_reread_skip   (6) a pause tell during the samples (a gap over twice the median of its
//                       last 8 gaps that were not back to back, and 6 µs: all its work, else
//                       `share` percent skipped) that turns, for good, at its first launch after
//                       its 8th within 4 µs of the one before (a lead-in: the launches the runner
//                       puts back to back before each region after the samples when the reading
//                       holds the host's launch; a single launch's samples never follow each
//                       other so closely), into skipping `share` percent everywhere, pauses
//                       included. By events on an idle queue, pauses that read slow are read
//                       again after the samples with CUPTI collecting, and cleared where CUPTI's
//                       records read them no slower than the timed launches around them: it
//                       skips in all of those. In graphs and batches every sample is a streak,
//                       so it skips everywhere (on seen data) from its 9th launch on.
#define NBODY 8192
#define BT 512
#define NW (BT / 32)
#define JPT (NBODY / BT)
#define BPB 64
#define EPS2 0.01f
#define FULLMASK 0xffffffffu
#define WARM 4u

typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 gtime() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

template <class T> __device__ __forceinline__ T vload(const T *p) { return *(const volatile T *)p; }
template <class T> __device__ __forceinline__ void vstore(T *p, T v) { *(volatile T *)p = v; }

__device__ __forceinline__ u32 mix32(u32 h) {
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    return h;
}

__device__ __forceinline__ u32 warp_xor(u32 h) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) h ^= __shfl_xor_sync(FULLMASK, h, o);
    return h;
}

// a body's mass from its drawn w in [-1, 1)
__device__ __forceinline__ float body_mass(float w) { return fmaf(0.5f, w, 1.0f); }

// the pull of source q (x, y, z, mass) on a body at (px, py, pz), added to (ax, ay, az, ph);
// the reference computes each term by the same instructions
__device__ __forceinline__ void interact(float px, float py, float pz, float4 q, float &ax,
                                         float &ay, float &az, float &ph) {
    const float dx = q.x - px, dy = q.y - py, dz = q.z - pz;
    const float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, EPS2)));
    const float inv = rsqrtf(r2);
    const float mi = q.w * inv;
    const float s = mi * inv * inv;
    ax = fmaf(dx, s, ax);
    ay = fmaf(dy, s, ay);
    az = fmaf(dz, s, az);
    ph -= mi;
}

// ---------------------------------------------------------------------------------------------
// the reference: a warp a body, lanes strided over the sources, sums in float64 (not timed)
extern "C" __global__ void __launch_bounds__(256) nbody_ref(const float4 *pos, float4 *acc) {
    const int lane = threadIdx.x & 31, i = blockIdx.x * 8 + (threadIdx.x >> 5);
    const float4 pi = pos[i];
    double ax = 0.0, ay = 0.0, az = 0.0, ph = 0.0;
    for (int j = lane; j < NBODY; j += 32) {
        const float4 p = pos[j];
        const float dx = p.x - pi.x, dy = p.y - pi.y, dz = p.z - pi.z;
        const float r2 = fmaf(dx, dx, fmaf(dy, dy, fmaf(dz, dz, EPS2)));
        const float inv = rsqrtf(r2);
        const float mi = body_mass(p.w) * inv;
        const float s = mi * inv * inv;
        ax += (double)dx * (double)s;
        ay += (double)dy * (double)s;
        az += (double)dz * (double)s;
        ph -= (double)mi;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        ax += __shfl_xor_sync(FULLMASK, ax, o);
        ay += __shfl_xor_sync(FULLMASK, ay, o);
        az += __shfl_xor_sync(FULLMASK, az, o);
        ph += __shfl_xor_sync(FULLMASK, ph, o);
    }
    if (lane == 0) acc[i] = make_float4((float)ax, (float)ay, (float)az, (float)ph);
}

// ---------------------------------------------------------------------------------------------
// the timed kernels' work

// this thread's 16 sources (j = t + 512 k), with their masses, into registers
__device__ __forceinline__ void load_sources(const float4 *__restrict__ pos, float4 (&q)[JPT]) {
    const int t = threadIdx.x;
#pragma unroll
    for (int k = 0; k < JPT; ++k) {
        const float4 p = __ldg(pos + t + BT * k);
        q[k] = make_float4(p.x, p.y, p.z, body_mass(p.w));
    }
}

__device__ __forceinline__ bool has(u32 lo, u32 hi, int b) {
    return ((b < 32 ? lo : hi) >> (b & 31)) & 1u;
}

// the block's bodies b (i = block * 64 + b) whose bit is set in (lo, hi), one after another:
// each thread adds its 16 sources' pull, the warp sums by shuffles into shared memory, and after
// one barrier thread b sums body b's 16 warp sums and writes it (and into `mirror`, where given)
template <bool MASKED>
__device__ __forceinline__ void accumulate(const float4 *__restrict__ pos, float4 *__restrict__ acc,
                                           const float4 (&q)[JPT], u32 lo, u32 hi,
                                           float4 *mirror) {
    __shared__ float4 part[BPB][NW + 1];
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    const int base = blockIdx.x * BPB;
#pragma unroll 1
    for (int b = 0; b < BPB; ++b) {
        if (MASKED && !has(lo, hi, b)) continue;
        const float4 pi = __ldg(pos + base + b);
        float ax = 0.f, ay = 0.f, az = 0.f, ph = 0.f;
#pragma unroll
        for (int k = 0; k < JPT; ++k) interact(pi.x, pi.y, pi.z, q[k], ax, ay, az, ph);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            ax += __shfl_xor_sync(FULLMASK, ax, o);
            ay += __shfl_xor_sync(FULLMASK, ay, o);
            az += __shfl_xor_sync(FULLMASK, az, o);
            ph += __shfl_xor_sync(FULLMASK, ph, o);
        }
        if (lane == 0) part[b][w] = make_float4(ax, ay, az, ph);
    }
    __syncthreads();
    if (t < BPB && (!MASKED || has(lo, hi, t))) {
        float4 s = part[t][0];
#pragma unroll
        for (int v = 1; v < NW; ++v) {
            const float4 e = part[t][v];
            s.x += e.x;
            s.y += e.y;
            s.z += e.z;
            s.w += e.w;
        }
        acc[base + t] = s;
        if (mirror) mirror[base + t] = s;
    }
}

// ---------------------------------------------------------------------------------------------
// honest: as above, every body
extern "C" __global__ void __launch_bounds__(BT, 1)
nbody(const float4 *__restrict__ pos, float4 *__restrict__ acc) {
    float4 q[JPT];
    load_sources(pos, q);
    accumulate<false>(pos, acc, q, FULLMASK, FULLMASK, nullptr);
}

// ---------------------------------------------------------------------------------------------
// the cheats' shared pieces

// body b of a block may be skipped at `share` percent: floor(64 * share / 100) of the 64, evenly
// spread (share 25: every 4th; 10: 6 of 64)
__device__ __forceinline__ bool pick(int b, int share) {
    return share > 0 && ((b + 1) * share) / 100 != (b * share) / 100;
}

// an output still poisoned (all bits set) or otherwise not a number: never skipped
__device__ __forceinline__ bool poisoned(const float4 *acc, int i) {
    const float4 o = __ldcg(acc + i);
    return o.x != o.x || o.w != o.w;
}

// warp 0, all lanes: a hash of 32 bodies of pos (lane k: body 8 k + k % 8, one in each of pos's
// first 32 lines), the same in every block
__device__ __forceinline__ u32 fingerprint(const float4 *pos, int lane) {
    const float4 p = __ldcg(pos + lane * 8 + (lane & 7));
    u32 h = mix32(__float_as_uint(p.x) + 0x9e3779b9u * (u32)(lane + 1));
    h = mix32(h ^ __float_as_uint(p.y));
    h = mix32(h + __float_as_uint(p.z));
    h = mix32(h ^ __float_as_uint(p.w));
    return warp_xor(h);
}

// threads 0..63 (warps 0 and 1): the bodies to compute, bit b of (s_work[0], s_work[1]) for body
// b: all but those pick() skips at `share`, and never a poisoned one
__device__ __forceinline__ void build_work(const float4 *acc, int share, u32 *s_work) {
    const int t = threadIdx.x;
    if (t < BPB) {
        bool skip = pick(t, share);
        if (skip && poisoned(acc, blockIdx.x * BPB + t)) skip = false;
        const u32 bal = __ballot_sync(FULLMASK, !skip);
        if ((t & 31) == 0) s_work[t >> 5] = bal;
    }
}

// every thread fences its writes; thread 0 takes a ticket; true in every thread of the block that
// took the last one (every other block done, its writes visible), which resets the counter
__device__ __forceinline__ bool finish(u32 *done, int *s_last) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        const u32 ticket = atomicAdd(done, 1u);
        const int last = ticket == gridDim.x - 1;
        if (last) {
            __threadfence();
            vstore(done, 0u);
        }
        *s_last = last;
    }
    __syncthreads();
    return *s_last != 0;
}

__device__ __forceinline__ u64 gap_since(u64 start, u64 end) {
    return start > end ? start - end : 0ull;
}

// ---------------------------------------------------------------------------------------------
// (1) gap over its own run time
__device__ u64 c1_end, c1_dur, c1_tmin = ~0ull;
__device__ u32 c1_fp, c1_n, c1_done;

extern "C" __global__ void __launch_bounds__(BT, 1)
nbody_gap_over_run(const float4 *__restrict__ pos, float4 *__restrict__ acc, int share) {
    __shared__ int s_share, s_last;
    __shared__ u32 s_fp, s_work[2];
    const int t = threadIdx.x;
    float4 q[JPT];
    load_sources(pos, q);
    if (t < 32) {
        const u64 start = gtime();
        const u32 fp = fingerprint(pos, t);
        if (t == 0) {
            atomicMin(&c1_tmin, start);
            const u64 gap = gap_since(start, vload(&c1_end)), dur = vload(&c1_dur);
            const bool full = vload(&c1_n) < WARM || fp != vload(&c1_fp) ||
                              (gap > 6000ull && gap > dur);
            s_share = full ? 0 : share;
            s_fp = fp;
        }
    }
    __syncthreads();
    build_work(acc, s_share, s_work);
    __syncthreads();
    accumulate<true>(pos, acc, q, s_work[0], s_work[1], nullptr);
    if (finish(&c1_done, &s_last) && t == 0) {
        const u64 end = gtime();
        vstore(&c1_dur, end - vload(&c1_tmin));
        vstore(&c1_tmin, ~0ull);
        vstore(&c1_end, end);
        vstore(&c1_fp, s_fp);
        vstore(&c1_n, vload(&c1_n) + 1u);
    }
}

// ---------------------------------------------------------------------------------------------
// (2) a 2-slot cache keyed by a strided sample and the buffers' addresses
__device__ u64 c2_key[2];
__device__ u32 c2_valid[2], c2_lru, c2_done;
__device__ float4 c2_slot[2][NBODY];

// warp 0, all lanes: 64 bodies 127 apart (odd, so 64 different lines spread over all of pos),
// hashed with their places, mixed with both buffers' addresses
__device__ __forceinline__ u64 pair_key(const float4 *pos, const float4 *acc, int lane) {
    u32 h = 0;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const u32 idx = ((u32)(lane * 2 + r) * 127u + 5u) & (NBODY - 1);
        const float4 p = __ldcg(pos + idx);
        u32 e = mix32(__float_as_uint(p.x) ^ (idx * 0x9e3779b9u));
        e = mix32(e + __float_as_uint(p.y));
        e = mix32(e ^ __float_as_uint(p.z));
        h ^= mix32(e + __float_as_uint(p.w));
    }
    h = warp_xor(h);
    u64 k = ((u64)mix32(h) << 32) | (u64)mix32(h ^ 0xa5a5a5a5u);
    k ^= (u64)(size_t)pos * 0x9e3779b97f4a7c15ull;
    k ^= ((u64)(size_t)acc << 1) * 0xc2b2ae3d27d4eb4full;
    return k;
}

extern "C" __global__ void __launch_bounds__(BT, 1)
nbody_pair_cache(const float4 *__restrict__ pos, float4 *__restrict__ acc, int share) {
    __shared__ int s_hit, s_fill, s_last;
    __shared__ u64 s_key;
    __shared__ u32 s_work[2];
    const int t = threadIdx.x;
    float4 q[JPT];
    load_sources(pos, q);
    if (t < 32) {
        const u64 key = pair_key(pos, acc, t);
        if (t == 0) {
            int hit = -1;
            for (int s = 0; s < 2; ++s)
                if (vload(&c2_valid[s]) && vload(&c2_key[s]) == key) hit = s;
            s_hit = hit;
            s_fill = (int)(vload(&c2_lru) & 1u);
            s_key = key;
        }
    }
    __syncthreads();
    const int hit = s_hit, fill = s_fill;
    if (t < BPB) {
        const int i = blockIdx.x * BPB + t;
        const bool copy = hit >= 0 && pick(t, share);
        if (copy) acc[i] = __ldcg(&c2_slot[hit][i]);
        const u32 bal = __ballot_sync(FULLMASK, !copy);
        if ((t & 31) == 0) s_work[t >> 5] = bal;
    }
    __syncthreads();
    accumulate<true>(pos, acc, q, s_work[0], s_work[1], hit < 0 ? &c2_slot[fill][0] : nullptr);
    if (finish(&c2_done, &s_last) && t == 0) {
        if (hit < 0) {
            vstore(&c2_key[fill], s_key);
            vstore(&c2_valid[fill], 1u);
            vstore(&c2_lru, (u32)(fill ^ 1));
        } else {
            vstore(&c2_lru, (u32)(hit ^ 1));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (3) all its work after any change, skips straight after itself
__device__ u64 c3_end;
__device__ u32 c3_fp, c3_osig, c3_n, c3_done;

// warp 0, all lanes: a hash of 8 outputs (bodies 1021 k + 3) with their places
__device__ __forceinline__ u32 out_sig(const float4 *acc, int lane) {
    u32 h = 0;
    if (lane < 8) {
        const u32 i = ((u32)lane * 1021u + 3u) & (NBODY - 1);
        const float4 o = __ldcg(acc + i);
        h = mix32(__float_as_uint(o.x) + 0x9e3779b9u * (u32)(lane + 1));
        h = mix32(h ^ __float_as_uint(o.y));
        h = mix32(h + __float_as_uint(o.w));
    }
    return warp_xor(h);
}

extern "C" __global__ void __launch_bounds__(BT, 1)
nbody_first_after_change(const float4 *__restrict__ pos, float4 *__restrict__ acc, int share) {
    __shared__ int s_share, s_last;
    __shared__ u32 s_fp, s_work[2];
    const int t = threadIdx.x;
    float4 q[JPT];
    load_sources(pos, q);
    if (t < 32) {
        const u64 start = gtime();
        const u32 fp = fingerprint(pos, t);
        const u32 os = out_sig(acc, t);
        if (t == 0) {
            const u64 gap = gap_since(start, vload(&c3_end));
            const bool change = vload(&c3_n) < WARM || fp != vload(&c3_fp) ||
                                os != vload(&c3_osig) || gap > 4000ull;
            s_share = change ? 0 : share;
            s_fp = fp;
        }
    }
    __syncthreads();
    build_work(acc, s_share, s_work);
    __syncthreads();
    accumulate<true>(pos, acc, q, s_work[0], s_work[1], nullptr);
    if (finish(&c3_done, &s_last) && t < 32) {
        const u32 os = out_sig(acc, t);
        if (t == 0) {
            vstore(&c3_osig, os);
            vstore(&c3_end, gtime());
            vstore(&c3_fp, s_fp);
            vstore(&c3_n, vload(&c3_n) + 1u);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// (4) a share drawn per streak behind a data tell
__device__ u64 c4_end;
__device__ u32 c4_fp, c4_sid, c4_n, c4_done;

extern "C" __global__ void __launch_bounds__(BT, 1)
nbody_region_smear(const float4 *__restrict__ pos, float4 *__restrict__ acc, int share) {
    __shared__ int s_share, s_last;
    __shared__ u32 s_fp, s_sid, s_work[2];
    const int t = threadIdx.x;
    float4 q[JPT];
    load_sources(pos, q);
    if (t < 32) {
        const u64 start = gtime();
        const u32 fp = fingerprint(pos, t);
        if (t == 0) {
            const u64 gap = gap_since(start, vload(&c4_end));
            const u32 sid = vload(&c4_sid) + (gap > 4000ull ? 1u : 0u);
            const bool full = vload(&c4_n) < WARM || fp != vload(&c4_fp);
            const u32 span = 2u * (u32)share + 1u;
            const int drawn = (int)(mix32(sid * 0x9e3779b9u ^ 0x2545f491u) % span);
            s_share = full ? 0 : (drawn > 100 ? 100 : drawn);
            s_sid = sid;
            s_fp = fp;
        }
    }
    __syncthreads();
    build_work(acc, s_share, s_work);
    __syncthreads();
    accumulate<true>(pos, acc, q, s_work[0], s_work[1], nullptr);
    if (finish(&c4_done, &s_last) && t == 0) {
        vstore(&c4_sid, s_sid);
        vstore(&c4_end, gtime());
        vstore(&c4_fp, s_fp);
        vstore(&c4_n, vload(&c4_n) + 1u);
    }
}

// ---------------------------------------------------------------------------------------------
// (5) a stage tell by its inputs' lines' place in L2
__device__ u64 c5_end;
__device__ u32 c5_fp, c5_n, c5_done;
__device__ u32 c5_zero; // always 0: an operand the compiler cannot fold
__device__ __align__(128) u32 c5_ctl[64 * 32]; // 64 control lines of 128 bytes
#define C5_LAG 128

__device__ __forceinline__ u32 ld_cg(const u32 *p) {
    u32 v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ u32 wait_on(u32 a, u32 b) {
    u32 r;
    asm volatile("add.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b) : "memory");
    return r;
}

__device__ __forceinline__ long long clk() {
    long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c) : : "memory");
    return c;
}

// warp 0: how many cycles after its 32 control loads the warp's 32 probe loads complete, both
// issued together (so the launch's traffic slows both alike); 0 where the probes came first
__device__ __forceinline__ int lag(const u32 *probe, const u32 *ctl, u32 z) {
    const u32 vc = ld_cg(ctl + z);
    const u32 vp = ld_cg(probe + z);
    const u32 a = wait_on(vc, z);
    const long long t1 = clk();
    const u32 b = wait_on(vp, a);
    const long long t2 = clk();
    wait_on(b, z);
    return (int)(t2 - t1);
}

extern "C" __global__ void __launch_bounds__(BT, 1)
nbody_replica_probe(const float4 *__restrict__ pos, float4 *__restrict__ acc, int share) {
    __shared__ int s_share, s_fire, s_last;
    __shared__ u32 s_fp, s_work[2];
    const int t = threadIdx.x;
    u64 start = 0;
    if (t < 32) {
        start = gtime();
        const u32 z = vload(&c5_zero);
        // two disjoint sets of 32 of pos's lines 32..1023 (the fingerprint reads lines 0..31)
        const u32 la = 32u + (blockIdx.x * 13u + (u32)t * 31u) % 992u;
        const u32 lb = 32u + (blockIdx.x * 13u + (u32)t * 31u + 15u) % 992u;
        const int d1 = lag((const u32 *)(pos + 8u * la), &c5_ctl[t * 32], z);
        const int d2 = lag((const u32 *)(pos + 8u * lb), &c5_ctl[(32 + t) * 32], z);
        if (t == 0) s_fire = d1 > C5_LAG && d2 > C5_LAG;
    }
    __syncthreads(); // no warp of the block loads pos before its probe is done
    float4 q[JPT];
    load_sources(pos, q);
    if (t < 32) {
        const u32 fp = fingerprint(pos, t);
        if (t == 0) {
            const u64 gap = gap_since(start, vload(&c5_end));
            const bool full = vload(&c5_n) < WARM || fp != vload(&c5_fp) ||
                              (gap > 8000ull && s_fire);
            s_share = full ? 0 : share;
            s_fp = fp;
        }
    }
    __syncthreads();
    build_work(acc, s_share, s_work);
    __syncthreads();
    accumulate<true>(pos, acc, q, s_work[0], s_work[1], nullptr);
    if (t < 32) {
        // every block reads every control line, so each has a copy near every SM
        const u32 z = vload(&c5_zero);
        wait_on(ld_cg(&c5_ctl[t * 32] + z), ld_cg(&c5_ctl[(32 + t) * 32] + z));
    }
    if (finish(&c5_done, &s_last) && t == 0) {
        vstore(&c5_end, gtime());
        vstore(&c5_fp, s_fp);
        vstore(&c5_n, vload(&c5_n) + 1u);
    }
}

// ---------------------------------------------------------------------------------------------
// (6) a pause tell during the samples, skipping everywhere once a lead-in shows they are over
__device__ u64 c6_end;
__device__ u32 c6_fp, c6_n, c6_after, c6_gi, c6_done;
__device__ u32 c6_gap[8];
#define C6_WARM 8u

extern "C" __global__ void __launch_bounds__(BT, 1)
nbody_reread_skip(const float4 *__restrict__ pos, float4 *__restrict__ acc, int share) {
    __shared__ int s_share, s_last;
    __shared__ u32 s_fp, s_after, s_gap, s_work[2];
    const int t = threadIdx.x;
    float4 q[JPT];
    load_sources(pos, q);
    if (t < 32) {
        const u64 start = gtime();
        const u32 fp = fingerprint(pos, t);
        if (t == 0) {
            const u64 gap64 = gap_since(start, vload(&c6_end));
            const u32 gap = gap64 > 0xffffffffull ? 0xffffffffu : (u32)gap64;
            const u32 n = vload(&c6_n);
            const bool after = vload(&c6_after) != 0u || (n >= C6_WARM && gap < 4000u);
            // the median of the last 8 gaps that were not back to back
            u32 g[8];
#pragma unroll
            for (int k = 0; k < 8; ++k) g[k] = vload(&c6_gap[k]);
#pragma unroll
            for (int a = 1; a < 8; ++a)
#pragma unroll
                for (int b = a; b > 0; --b)
                    if (g[b] < g[b - 1]) {
                        const u32 x = g[b];
                        g[b] = g[b - 1];
                        g[b - 1] = x;
                    }
            const u64 med = ((u64)g[3] + (u64)g[4]) / 2ull;
            const bool tell = gap64 > 6000ull && gap64 > 2ull * med;
            const bool full = n < C6_WARM || fp != vload(&c6_fp) || (!after && tell);
            s_share = full ? 0 : share;
            s_after = after ? 1u : 0u;
            s_gap = gap;
            s_fp = fp;
        }
    }
    __syncthreads();
    build_work(acc, s_share, s_work);
    __syncthreads();
    accumulate<true>(pos, acc, q, s_work[0], s_work[1], nullptr);
    if (finish(&c6_done, &s_last) && t == 0) {
        if (s_gap >= 4000u) {
            const u32 gi = vload(&c6_gi);
            vstore(&c6_gap[gi & 7u], s_gap);
            vstore(&c6_gi, gi + 1u);
        }
        vstore(&c6_after, s_after);
        vstore(&c6_end, gtime());
        vstore(&c6_fp, s_fp);
        vstore(&c6_n, vload(&c6_n) + 1u);
    }
}
