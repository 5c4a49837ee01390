// y = A x for a sparse matrix in CSR form (row_ptr, col, val), for experiments/spmv.toml.
// The column indices are random: x is read by gathers, from L2 where it fits.

// A warp per row: the lanes take the row's nonzeros in turn, reduced by shuffles.
extern "C" __global__ void spmv_warp(const int *row_ptr, const int *col, const float *val,
                                     const float *x, float *y, int rows) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) {
        return; // the whole warp
    }
    float sum = 0.0f;
    for (int k = row_ptr[row] + lane; k < row_ptr[row + 1]; k += 32) {
        sum += val[k] * x[col[k]];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane == 0) {
        y[row] = sum;
    }
}

// A thread per row (CSR-scalar), the reference.
extern "C" __global__ void spmv_ref(const int *row_ptr, const int *col, const float *val,
                                    const float *x, float *y, int rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) {
        return;
    }
    float sum = 0.0f;
    for (int k = row_ptr[row]; k < row_ptr[row + 1]; ++k) {
        sum += val[k] * x[col[k]];
    }
    y[row] = sum;
}
