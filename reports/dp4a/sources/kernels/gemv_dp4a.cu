// y = A x for a row-major m x k int8 matrix and an int8 vector, int32 out, for
// experiments/dp4a.toml. Bandwidth-bound: every byte of A is read once, x from L1/L2.

// A warp per row: each lane loads 16 bytes of the row and of x at a time (four char4
// words, aligned where k is a multiple of 16 and the buffers start on 256 bytes) and sums
// their products with __dp4a, four int8 multiply-adds per instruction into an int32; the
// lanes' sums reduced by shuffles.
extern "C" __global__ void gemv_dp4a(const signed char *A, const signed char *x, int *y, int m,
                                     int k) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= m) {
        return; // the whole warp: its index is the same in every lane
    }
    const int4 *row = reinterpret_cast<const int4 *>(A + (size_t)warp * k);
    const int4 *xs = reinterpret_cast<const int4 *>(x);
    int sum = 0;
    for (int j = lane; j < k / 16; j += 32) {
        int4 a = row[j];
        int4 b = xs[j];
        sum = __dp4a(a.x, b.x, sum);
        sum = __dp4a(a.y, b.y, sum);
        sum = __dp4a(a.z, b.z, sum);
        sum = __dp4a(a.w, b.w, sum);
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane == 0) {
        y[warp] = sum;
    }
}

// The reference: a warp per row, a byte at a time, each product widened and summed in 64
// bits; no __dp4a, no packed loads. The sum of k products of at most 128 x 128 fits an int32
// for k up to 2^17, so it is stored exactly.
extern "C" __global__ void gemv_i8_ref(const signed char *A, const signed char *x, int *y, int m,
                                       int k) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= m) {
        return;
    }
    const signed char *row = A + (size_t)warp * k;
    long long sum = 0;
    for (int j = lane; j < k; j += 32) {
        sum += (long long)row[j] * (long long)x[j];
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane == 0) {
        y[warp] = (int)sum;
    }
}
