// Seed 004's cuda-roofline: each element is loaded, put through `its` dependent fused
// multiply-adds (2 FLOP each) and stored: 16 bytes and 2 * its FLOP per element.
__device__ double roof_op(double v, int its) {
    for (int k = 0; k < its; k++) v = fma(v, 0.999, 0.001);
    return v;
}

extern "C" __global__ void roof(double* A, const double* B, int its, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) A[i] = roof_op(B[i], its);
}

extern "C" __global__ void roof_ref(double* A, const double* B, int its, unsigned long long n) {
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        A[i] = roof_op(B[i], its);
}
