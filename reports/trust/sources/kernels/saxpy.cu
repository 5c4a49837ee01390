// SAXPY in place, y = a * x + y: a buffer the kernel both reads and writes. `saxpy` takes
// four elements per thread; `saxpy_ref` is the plain one-element version it is checked
// against, run on the same initial data.
extern "C" __global__ void saxpy(float a, float const *x, float *y, unsigned long long n) {
    unsigned long long i = 4ull * ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x);
    if (i + 3 < n) {
        float4 xv = *reinterpret_cast<float4 const *>(x + i);
        float4 yv = *reinterpret_cast<float4 *>(y + i);
        yv.x = a * xv.x + yv.x;
        yv.y = a * xv.y + yv.y;
        yv.z = a * xv.z + yv.z;
        yv.w = a * xv.w + yv.w;
        *reinterpret_cast<float4 *>(y + i) = yv;
    } else {
        for (; i < n; i++) {
            y[i] = a * x[i] + y[i];
        }
    }
}

extern "C" __global__ void saxpy_ref(float a, float const *x, float *y, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
