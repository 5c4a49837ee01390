// A lookup table read at scattered places while a long array streams past: each element of
// `stream` is scaled by a table entry its index hashes to. The stream and the output (each
// read or written once) evict the table's lines from L2 unless the table persists there.
extern "C" __global__ void lookup_stream(const float *table, unsigned int table_len,
                                         const float *stream, float *out,
                                         unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += stride) {
        unsigned int h = (unsigned int)((i * 2654435761ull) % table_len);
        out[i] = stream[i] * table[h];
    }
}
