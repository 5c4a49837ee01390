// Layer normalization of each row of a rows x cols float matrix, for
// experiments/layernorm.toml: out = (x - mean) / sqrt(var + eps) * gamma + beta.

#define EPS 1e-5f

// The sum of `v` over the block (a multiple of 32 threads, at most 1024), in every thread.
__device__ float block_sum(float v, float *shared) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        shared[warp] = v;
    }
    __syncthreads();
    int warps = blockDim.x / 32;
    v = lane < warps ? shared[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
    __syncthreads(); // `shared` is reused by the next call
    return v;
}

// A block per row, fused: the row read once into registers (cols <= 8 * blockDim.x), mean
// and variance by block reductions, the output written once.
extern "C" __global__ void layernorm_fused(const float *x, const float *gamma, const float *beta,
                                           float *out, int cols) {
    __shared__ float shared[32];
    const float *row = x + (size_t)blockIdx.x * cols;
    float *dst = out + (size_t)blockIdx.x * cols;
    float v[8];
    float sum = 0.0f;
    for (int k = 0; k < 8; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        v[k] = j < cols ? row[j] : 0.0f;
        sum += v[k];
    }
    float mean = block_sum(sum, shared) / cols;
    float sq = 0.0f;
    for (int k = 0; k < 8; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        float d = j < cols ? v[k] - mean : 0.0f;
        sq += d * d;
    }
    float rstd = rsqrtf(block_sum(sq, shared) / cols + EPS);
    for (int k = 0; k < 8; ++k) {
        int j = threadIdx.x + k * blockDim.x;
        if (j < cols) {
            dst[j] = (v[k] - mean) * rstd * gamma[j] + beta[j];
        }
    }
}

// A thread per row, in double, three passes over the row: the reference.
extern "C" __global__ void layernorm_ref(const float *x, const float *gamma, const float *beta,
                                         float *out, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) {
        return;
    }
    const float *row = x + (size_t)r * cols;
    double sum = 0.0;
    for (int j = 0; j < cols; ++j) {
        sum += row[j];
    }
    double mean = sum / cols, sq = 0.0;
    for (int j = 0; j < cols; ++j) {
        sq += (row[j] - mean) * (row[j] - mean);
    }
    double rstd = 1.0 / sqrt(sq / cols + (double)EPS);
    for (int j = 0; j < cols; ++j) {
        out[(size_t)r * cols + j] = (float)((row[j] - mean) * rstd * gamma[j] + beta[j]);
    }
}
