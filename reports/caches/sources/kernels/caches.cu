// Seed 004's gpu-cache and gpu-strides: reads that stay in a cache level, one block per SM.
// Four independent sums keep loads in flight (one sum would wait on each add); the total
// is written only if it takes an impossible value, so no load can be dropped.

// Every block reads the same `n` doubles `reps` times: a working set within L1 is read from
// each SM's L1, one within L2 from the L2.
extern "C" __global__ void cache_read(const double* A, double* sink, unsigned n, unsigned reps) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    const unsigned step = blockDim.x;
    for (unsigned r = 0; r < reps; r++) {
        unsigned i = threadIdx.x;
        for (; i + 3 * step < n; i += 4 * step) {
            s0 += A[i];
            s1 += A[i + step];
            s2 += A[i + 2 * step];
            s3 += A[i + 3 * step];
        }
        for (; i < n; i += step) s0 += A[i];
    }
    double sum = s0 + s1 + s2 + s3;
    if (sum == -1.5) sink[0] = sum;
}

// Thread t reads element (t * stride + r) of an L1-resident buffer of `n` doubles (a power
// of two) at each of `reps` steps (a multiple of 4): a warp's 32 loads touch 32 addresses
// `stride` doubles apart.
extern "C" __global__ void stride_read(const double* A, double* sink, unsigned n, unsigned stride, unsigned reps) {
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    const unsigned base = threadIdx.x * stride, mask = n - 1;
    for (unsigned r = 0; r < reps; r += 4) {
        s0 += A[(base + r) & mask];
        s1 += A[(base + r + 1) & mask];
        s2 += A[(base + r + 2) & mask];
        s3 += A[(base + r + 3) & mask];
    }
    double sum = s0 + s1 + s2 + s3;
    if (sum == -1.5) sink[0] = sum;
}

// Seed 004's gpu-l2-cache: block b reads region (b % regions) of `region` doubles, so the
// working set is regions x region doubles, shared by the blocks that read each region. A
// region is larger than an SM's L1 (256 KiB), so repeated reads of it come from L2 or, once
// the working set outgrows L2, from DRAM.
extern "C" __global__ void l2_read(const double* A, double* sink, unsigned region, unsigned regions) {
    const double* R = A + (size_t)(blockIdx.x % regions) * region;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    const unsigned step = blockDim.x;
    unsigned i = threadIdx.x;
    for (; i + 3 * step < region; i += 4 * step) {
        s0 += R[i];
        s1 += R[i + step];
        s2 += R[i + 2 * step];
        s3 += R[i + 3 * step];
    }
    for (; i < region; i += step) s0 += R[i];
    double sum = s0 + s1 + s2 + s3;
    if (sum == -1.5) sink[0] = sum;
}

// Seed 004's 2-D part of gpu-strides: a block of bx x (1024 / bx) threads reads the 5-point
// neighbourhood of its (x, y) in an L1-resident 1024 x 8 grid of doubles, `reps` times
// (a multiple of 4), moving down a row each time: how a warp's 32 threads fall on rows
// (bx threads to a row) sets how many cache lines each load instruction touches. Each of
// the 4 unrolled steps reads at its own column (x + 256 k): were they at one column, a
// step's row below would be the next step's row, and the compiler (ptxas, even for loads
// in volatile asm) would load each shared row once, 14 loads for the 20 declared (SASS).
extern "C" __global__ void shape_read(const double* A, double* sink, unsigned reps) {
    const unsigned y = threadIdx.y;
    const unsigned w = 1024, rows = 8;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (unsigned r = 0; r < reps; r += 4) {
        #pragma unroll
        for (unsigned k = 0; k < 4; k++) {
            const unsigned x = (threadIdx.x + 256 * k) % w;
            const unsigned xl = (x + w - 1) % w, xr = (x + 1) % w;
            const unsigned row = (y + r + k) % rows;
            const unsigned up = (row + rows - 1) % rows, down = (row + 1) % rows;
            double v = A[row * w + x] + A[row * w + xl] + A[row * w + xr] + A[up * w + x] + A[down * w + x];
            if (k == 0) s0 += v; else if (k == 1) s1 += v; else if (k == 2) s2 += v; else s3 += v;
        }
    }
    double sum = s0 + s1 + s2 + s3;
    if (sum == -1.5) sink[0] = sum;
}
