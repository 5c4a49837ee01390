// Evicts L2 by writing every word of a buffer larger than L2 (grid-stride loop). The lines
// it leaves in L2 are dirty: whatever is timed next pays for writing them back.
extern "C" __global__ void flush_l2(unsigned int *buf, unsigned long long words, unsigned int value) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) {
        buf[i] = value;
    }
}

// Evicts L2 by reading every word of a buffer larger than L2: the lines it leaves are clean.
// The loads feed a value that is stored only if it equals `value`, so none can be dropped.
extern "C" __global__ void flush_l2_read(unsigned int *buf, unsigned long long words, unsigned int value) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long first = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int acc = 0;
    for (unsigned long long i = first; i < words; i += stride) {
        acc ^= buf[i];
    }
    if (acc == value && first < words) {
        buf[first] = acc;
    }
}
