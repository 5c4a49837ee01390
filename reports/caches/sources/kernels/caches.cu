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
