// Seed 001's grid-stride copy compiled for one block size, given as a define so that an
// experiment can sweep it: the compiler may budget registers for exactly BLOCK threads.
#ifndef BLOCK
#define BLOCK 256
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
copy_block(float *output, float const *input, unsigned long long n) {
    unsigned long long const idx = (unsigned long long)BLOCK * blockIdx.x + threadIdx.x;
    unsigned long long const stride = (unsigned long long)BLOCK * gridDim.x;
    for (unsigned long long i = idx; i < n; i += stride) {
        output[i] = input[i];
    }
}
