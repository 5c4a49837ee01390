// A block reduction: each block of `blockDim.x` threads sums a contiguous chunk of
// `per_block` floats into one partial sum, through dynamic shared memory. `reduce_ref`
// sums the same chunks with one thread per block, in order.
extern "C" __global__ void reduce_block(const float* x, float* partial, unsigned long long n, int per_block) {
    extern __shared__ float part[];
    unsigned long long start = (unsigned long long)blockIdx.x * per_block;
    float s = 0.f;
    for (int k = threadIdx.x; k < per_block && start + k < n; k += blockDim.x) s += x[start + k];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = part[0];
}

extern "C" __global__ void reduce_ref(const float* x, float* partial, unsigned long long n, int per_block) {
    if (threadIdx.x != 0) return;
    unsigned long long start = (unsigned long long)blockIdx.x * per_block;
    double s = 0.0;
    for (int k = 0; k < per_block && start + k < n; ++k) s += x[start + k];
    partial[blockIdx.x] = (float)s;
}

// The second pass: one block sums the partial sums into `out[0]` (blockDim.x a power of two).
extern "C" __global__ void reduce_final(const float* partial, float* out, int count) {
    extern __shared__ float part[];
    float s = 0.f;
    for (int k = threadIdx.x; k < count; k += blockDim.x) s += partial[k];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) part[threadIdx.x] += part[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = part[0];
}

// The reference's second pass: one thread adds the partial sums in order, in float64.
extern "C" __global__ void reduce_final_ref(const float* partial, float* out, int count) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    double s = 0.0;
    for (int k = 0; k < count; ++k) s += partial[k];
    out[0] = (float)s;
}
