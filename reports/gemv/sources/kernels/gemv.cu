// y = A x for a row-major m x n float matrix, for experiments/gemv.toml. Bandwidth-bound:
// every element of A is read once, x from L1/L2.

// A warp per row: the lanes read the row together (coalesced), the dot product reduced by
// shuffles.
extern "C" __global__ void gemv_warp(const float *A, const float *x, float *y, int m, int n) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= m) {
        return; // the whole warp: its index is the same in every lane
    }
    const float *row = A + (size_t)warp * n;
    float sum = 0.0f;
    for (int j = lane; j < n; j += 32) {
        sum += row[j] * x[j];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane == 0) {
        y[warp] = sum;
    }
}

// A thread per row, the row walked in order: each warp's loads touch 32 rows at once
// (uncoalesced), the reference.
extern "C" __global__ void gemv_ref(const float *A, const float *x, float *y, int m, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) {
        return;
    }
    const float *row = A + (size_t)i * n;
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) {
        sum += row[j] * x[j];
    }
    y[i] = sum;
}
