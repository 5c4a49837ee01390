// Evicts L2 by writing every word of a buffer larger than L2 (grid-stride loop).
extern "C" __global__ void flush_l2(unsigned int *buf, unsigned long long words, unsigned int value) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) {
        buf[i] = value;
    }
}
