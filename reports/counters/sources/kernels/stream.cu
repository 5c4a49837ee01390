// Streaming kernels after seed 004's gpu-stream, in double precision, one element per thread:
// init, read, scale, triad and 3- and 5-point stencils. The dynamic shared memory they are
// launched with is a spoiler: at 100 KiB a block, two blocks fit on an SM, so the block size
// sets the occupancy. The `_ref` versions are grid-stride loops with no spoiler that check
// them on the same inputs.

extern "C" __global__ void init(double* A, double c, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) A[i] = c;
}

// Writes its sum only where it equals a value it never takes, so the loads stay.
extern "C" __global__ void read(const double* A, double* sink, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    double sum = i < n ? A[i] : 0.0;
    if (sum == -12.34) sink[0] = sum;
}

extern "C" __global__ void scale(double* A, const double* B, double c, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) A[i] = B[i] * c;
}

extern "C" __global__ void triad(double* A, const double* B, const double* C, double c, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) A[i] = B[i] + c * C[i];
}

extern "C" __global__ void stencil3(double* A, const double* B, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 1 && i + 1 < n) A[i] = B[i - 1] + B[i] + B[i + 1];
    else if (i < n) A[i] = B[i];
}

extern "C" __global__ void stencil5(double* A, const double* B, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 2 && i + 2 < n) A[i] = B[i - 2] + B[i - 1] + B[i] + B[i + 1] + B[i + 2];
    else if (i < n) A[i] = B[i];
}

#define STRIDE(i, n) for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (unsigned long long)blockDim.x * gridDim.x)

extern "C" __global__ void init_ref(double* A, double c, unsigned long long n) { STRIDE(i, n) A[i] = c; }

extern "C" __global__ void scale_ref(double* A, const double* B, double c, unsigned long long n) {
    STRIDE(i, n) A[i] = B[i] * c;
}

extern "C" __global__ void triad_ref(double* A, const double* B, const double* C, double c, unsigned long long n) {
    STRIDE(i, n) A[i] = B[i] + c * C[i];
}

extern "C" __global__ void stencil3_ref(double* A, const double* B, unsigned long long n) {
    STRIDE(i, n) A[i] = (i >= 1 && i + 1 < n) ? B[i - 1] + B[i] + B[i + 1] : B[i];
}

extern "C" __global__ void stencil5_ref(double* A, const double* B, unsigned long long n) {
    STRIDE(i, n) A[i] = (i >= 2 && i + 2 < n) ? B[i - 2] + B[i - 1] + B[i] + B[i + 1] + B[i + 2] : B[i];
}
