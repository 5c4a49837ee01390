// A module of many kernels, for measuring how module loading scales: `copy` (seed 001's
// grid-stride copy, the one that is launched) and 64 arithmetic kernels that are loaded
// with it but never launched. Eager loading pays for all 65 at module load; lazy loading
// pays for a kernel when it is first looked up or launched.
extern "C" __global__ void copy(float *output, float const *input, unsigned long long n) {
    unsigned long long const idx = (unsigned long long)blockDim.x * blockIdx.x + threadIdx.x;
    unsigned long long const stride = (unsigned long long)blockDim.x * gridDim.x;
    for (unsigned long long i = idx; i < n; i += stride) {
        output[i] = input[i];
    }
}

#define WORK(i)                                                                     \
    extern "C" __global__ void work_##i(float *x, int n) {                          \
        int t = blockIdx.x * blockDim.x + threadIdx.x;                              \
        if (t < n) {                                                                \
            float v = x[t];                                                         \
            for (int k = 0; k < 32; ++k) {                                          \
                v = __sinf(v * (float)(i + 1) + k) * __expf(-v) + sqrtf(v * v + k); \
            }                                                                       \
            x[t] = v;                                                               \
        }                                                                           \
    }
#define WORK8(a) WORK(a##0) WORK(a##1) WORK(a##2) WORK(a##3) WORK(a##4) WORK(a##5) WORK(a##6) WORK(a##7)
WORK8(1) WORK8(2) WORK8(3) WORK8(4) WORK8(5) WORK8(6) WORK8(7) WORK8(8)
