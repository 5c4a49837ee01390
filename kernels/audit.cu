// The audit's read-back of a kernel's inputs, on the GPU: the first byte at which a buffer
// differs from its copy taken before the audit launch, lowered into `first` (which the
// host sets to all ones first), so that no input has to cross the host link.
extern "C" __global__ void first_difference(const unsigned char *a, const unsigned char *b,
                                            unsigned long long bytes,
                                            unsigned long long *first) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long id = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    // 16 bytes at a time (device allocations are 256-byte aligned), then the tail.
    unsigned long long vectors = bytes / 16;
    const uint4 *va = reinterpret_cast<const uint4 *>(a);
    const uint4 *vb = reinterpret_cast<const uint4 *>(b);
    for (unsigned long long i = id; i < vectors; i += stride) {
        uint4 x = va[i], y = vb[i];
        if (x.x != y.x || x.y != y.y || x.z != y.z || x.w != y.w) {
            for (unsigned long long j = i * 16; j < i * 16 + 16; j++) {
                if (a[j] != b[j]) {
                    atomicMin(first, j);
                    break;
                }
            }
        }
    }
    for (unsigned long long j = vectors * 16 + id; j < bytes; j += stride) {
        if (a[j] != b[j]) {
            atomicMin(first, j);
        }
    }
}
