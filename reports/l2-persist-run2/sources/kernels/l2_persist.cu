// A lookup table read at scattered places while a long array streams past: each element of
// `stream` is scaled by a table entry its index hashes to. The stream and the output (each
// read or written once) evict the table's lines from L2 unless the table persists there.
// `lookup_stream_ref` is the same work under another name: CUPTI tells the reference's
// launches from the timed ones by name.
__device__ void lookup(const float *table, unsigned int table_len, const float *stream,
                       float *out, unsigned long long n) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < n; i += stride) {
        unsigned int h = (unsigned int)((i * 2654435761ull) % table_len);
        out[i] = stream[i] * table[h];
    }
}

extern "C" __global__ void lookup_stream(const float *table, unsigned int table_len,
                                         const float *stream, float *out,
                                         unsigned long long n) {
    lookup(table, table_len, stream, out, n);
}

extern "C" __global__ void lookup_stream_ref(const float *table, unsigned int table_len,
                                             const float *stream, float *out,
                                             unsigned long long n) {
    lookup(table, table_len, stream, out, n);
}
