// 256-bin histograms of 32-bit values' low 8 bits, four ways, for
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

// A reference with no contended atomic: each block stages a tile of 4,096 values' low bytes
// in shared memory, and each of its 256 threads counts the values of its own bin there, four
// bytes a compare, adding its count to the global bin once. Launched with 256 threads a block.
extern "C" __global__ void histogram_by_bin(const unsigned int *data, unsigned int *bins,
                                            unsigned long long count) {
    __shared__ unsigned int tile[1024];
    unsigned int bin = threadIdx.x;
    unsigned int pattern = bin * 0x01010101u;
    unsigned int mine = 0;
    for (unsigned long long base = (unsigned long long)blockIdx.x * 4096; base < count;
         base += (unsigned long long)gridDim.x * 4096) {
        __syncthreads();
        for (unsigned int i = threadIdx.x; i < 1024; i += blockDim.x) {
            unsigned int word = 0;
            for (unsigned int b = 0; b < 4; ++b) {
                unsigned long long at = base + 4 * i + b;
                word |= at < count ? (data[at] & 255u) << (8 * b) : 0u;
            }
            tile[i] = word;
        }
        __syncthreads();
        unsigned long long valid = count - base < 4096 ? count - base : 4096;
        unsigned int full = (unsigned int)(valid / 4);
        for (unsigned int i = 0; i < full; ++i) {
            mine += __popc(__vcmpeq4(tile[i], pattern)) / 8;
        }
        // The last word's valid bytes, where the values end inside it.
        for (unsigned int b = 0; b < valid % 4; ++b) {
            mine += ((tile[full] >> (8 * b)) & 255u) == bin;
        }
    }
    if (mine != 0) {
        atomicAdd(&bins[bin], mine);
    }
}
