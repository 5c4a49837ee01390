// 256-bin histograms of 32-bit values' low 8 bits, three ways, for
// experiments/histogram-budget.toml and the honest histogram of experiments/trust.toml. The
// bins accumulate, so they are reset to zero before every launch (`reset = "zeros"`).

// Bins in shared memory per block, added to the global bins once per block.
extern "C" __global__ void histogram_shared(const unsigned int *data, unsigned int *bins,
                                            unsigned long long count) {
    __shared__ unsigned int local[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) {
        local[i] = 0;
    }
    __syncthreads();
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < count; i += stride) {
        atomicAdd(&local[data[i] & 255u], 1u);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x) {
        if (local[i] != 0) {
            atomicAdd(&bins[i], local[i]);
        }
    }
}

// One global atomic per value, over a grid-stride loop: every value contends for 256
// addresses in L2.
extern "C" __global__ void histogram_global(const unsigned int *data, unsigned int *bins,
                                            unsigned long long count) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < count; i += stride) {
        atomicAdd(&bins[data[i] & 255u], 1u);
    }
}

// The plain reference: one thread per value.
extern "C" __global__ void histogram_plain(const unsigned int *data, unsigned int *bins,
                                           unsigned long long count) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) {
        atomicAdd(&bins[data[i] & 255u], 1u);
    }
}
