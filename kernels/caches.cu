// Seed 004's gpu-cache and gpu-strides: reads that stay in a cache level, one block per SM.
// The sum is written only if it takes an impossible value, so no load can be dropped.

// Every block reads the same `n` doubles `reps` times: a working set that fits in L1 is
// read from L1, one that fits in L2 from L2.
extern "C" __global__ void cache_read(const double* A, double* sink, unsigned n, unsigned reps) {
    double sum = 0.0;
    for (unsigned r = 0; r < reps; r++) {
        for (unsigned i = threadIdx.x; i < n; i += blockDim.x) sum += A[i];
        if (sum == -1.25) sink[0] = sum;
    }
    if (sum == -1.5) sink[1] = sum;
}

// Thread t reads element (t * stride + r) of an L1-resident buffer of `n` doubles (a power
// of two) at each of `reps` steps: a warp's 32 loads touch 32 addresses `stride` apart.
extern "C" __global__ void stride_read(const double* A, double* sink, unsigned n, unsigned stride, unsigned reps) {
    double sum = 0.0;
    unsigned base = threadIdx.x * stride;
    for (unsigned r = 0; r < reps; r++) sum += A[(base + r) & (n - 1)];
    if (sum == -1.5) sink[0] = sum;
}
