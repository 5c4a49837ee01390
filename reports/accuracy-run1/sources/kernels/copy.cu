// Seed 001's grid-stride copy: a memory-bound kernel whose working set can fit in L2.
extern "C" __global__ void copy(float *output, float const *input, unsigned long long n) {
    unsigned long long const idx = (unsigned long long)blockDim.x * blockIdx.x + threadIdx.x;
    unsigned long long const stride = (unsigned long long)blockDim.x * gridDim.x;
    for (unsigned long long i = idx; i < n; i += stride) {
        output[i] = input[i];
    }
}
