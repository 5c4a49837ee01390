// Row softmax, y = exp(x - max) / sum(exp(x - max)) per row of a rows x cols matrix, in
// f16 or bf16 with f32 arithmetic. Two versions and a plain reference to check them with.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// The reference: one thread per row, three plain loops.
template <typename T>
__global__ void softmax_ref(const T* x, T* y, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const T* in = x + (size_t)row * cols;
    float m = NEG_INF;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, to_float(in[c]));
    float sum = 0.f;
    for (int c = 0; c < cols; ++c) sum += expf(to_float(in[c]) - m);
    for (int c = 0; c < cols; ++c) y[(size_t)row * cols + c] = from_float<T>(expf(to_float(in[c]) - m) / sum);
}

// Version 1: one block of 256 threads per row; the max and the sum reduced through shared
// memory; the row read three times from global memory.
template <typename T>
__global__ void softmax_block(const T* x, T* y, int rows, int cols) {
    __shared__ float part[256];
    const T* in = x + (size_t)blockIdx.x * cols;
    float m = NEG_INF;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, to_float(in[c]));
    part[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + s]);
        __syncthreads();
    }
    m = part[0];
    __syncthreads();
    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(to_float(in[c]) - m);
    part[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    sum = part[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[(size_t)blockIdx.x * cols + c] = from_float<T>(expf(to_float(in[c]) - m) / sum);
}

// Version 2: one warp per row, an online max and sum in one pass (rescaling the sum when
// the max grows), reduced with shuffles; the row read twice.
template <typename T>
__global__ void softmax_warp(const T* x, T* y, int rows, int cols) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T* in = x + (size_t)row * cols;
    float m = NEG_INF, sum = 0.f;
    for (int c = lane; c < cols; c += 32) {
        float v = to_float(in[c]);
        float nm = fmaxf(m, v);
        sum = sum * expf(m - nm) + expf(v - nm);
        m = nm;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float om = __shfl_xor_sync(0xffffffff, m, o);
        float os = __shfl_xor_sync(0xffffffff, sum, o);
        float nm = fmaxf(m, om);
        sum = (m == NEG_INF ? 0.f : sum * expf(m - nm)) + (om == NEG_INF ? 0.f : os * expf(om - nm));
        m = nm;
    }
    for (int c = lane; c < cols; c += 32)
        y[(size_t)row * cols + c] = from_float<T>(expf(to_float(in[c]) - m) / sum);
}
