// out[idx[i]] += val[i] on integers, for experiments/scatter-add.toml: random addresses,
// contended where the bins are few. The bins accumulate, so they are reset to zero before
// every launch (`reset = "zeros"`).

// A grid-stride loop, four elements a thread per iteration by 16-byte loads of idx and val
// (count a multiple of 4; the buffers start 256-byte aligned).
extern "C" __global__ void scatter_add_vec4(const int4 *idx, const int4 *val, int *out,
                                            unsigned long long count) {
    unsigned long long quads = count / 4;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long q = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         q < quads; q += stride) {
        int4 i = idx[q];
        int4 v = val[q];
        atomicAdd(&out[i.x], v.x);
        atomicAdd(&out[i.y], v.y);
        atomicAdd(&out[i.z], v.z);
        atomicAdd(&out[i.w], v.w);
    }
}

// A thread per element, the reference.
extern "C" __global__ void scatter_add_ref(const int *idx, const int *val, int *out,
                                           unsigned long long count) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) {
        atomicAdd(&out[idx[i]], val[i]);
    }
}
