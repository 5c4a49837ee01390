// A grid-stride copy of float4s (16 bytes a load and a store), the rest one float at a time:
// fewer, wider memory instructions than the float copy of `copy.cu`.
extern "C" __global__ void copy4(float *output, float const *input, unsigned long long n) {
    unsigned long long const idx = (unsigned long long)blockDim.x * blockIdx.x + threadIdx.x;
    unsigned long long const stride = (unsigned long long)blockDim.x * gridDim.x;
    unsigned long long const n4 = n / 4;
    float4 *out4 = reinterpret_cast<float4 *>(output);
    float4 const *in4 = reinterpret_cast<float4 const *>(input);
    for (unsigned long long i = idx; i < n4; i += stride) {
        out4[i] = in4[i];
    }
    for (unsigned long long i = 4 * n4 + idx; i < n; i += stride) {
        output[i] = input[i];
    }
}
