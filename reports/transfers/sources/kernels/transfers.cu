// Seed 003's kernel, which doubles every element in place, and a reference that computes
// what the whole sequence (copy in, double, copy out) leaves in `out`.

extern "C" __global__ void scale(int* data, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        data[i] *= 2;
    }
}

// The same in a grid-stride loop: the reference `scale` is checked against.
extern "C" __global__ void scale_ref(int* data, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        data[i] *= 2;
    }
}

// Reads the host copy of the inputs directly (page-locked memory is device-addressable).
extern "C" __global__ void sequence_ref(const int* in, int* data, int* out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        data[i] = 2 * in[i];
        out[i] = 2 * in[i];
    }
}
