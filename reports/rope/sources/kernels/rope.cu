// Rotary position embedding of a tokens x heads x dim float tensor, for
// experiments/rope.toml: each pair (2i, 2i + 1) of a head is rotated by the angle
// token * theta^(-2i / dim), with theta = 10000.

// The angle of pair `i` at `token`, in float32 the same way in both kernels, so that they
// differ only in their sines and cosines.
__device__ float rope_angle(int token, int i, int dim) {
    float inv_freq = powf(10000.0f, -2.0f * i / dim);
    return (float)token * inv_freq;
}

// A thread per pair, by 8-byte loads and stores; the angle's sine and cosine by sincosf.
extern "C" __global__ void rope_pairs(const float2 *x, float2 *out, int tokens, int heads,
                                      int dim) {
    long long pairs = (long long)tokens * heads * (dim / 2);
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= pairs) {
        return;
    }
    int i = (int)(p % (dim / 2));
    int token = (int)(p / ((long long)heads * (dim / 2)));
    float s, c;
    sincosf(rope_angle(token, i, dim), &s, &c);
    float2 v = x[p];
    out[p] = make_float2(v.x * c - v.y * s, v.x * s + v.y * c);
}

// A thread per token and head, the pairs in turn, sines and cosines in double: the
// reference.
extern "C" __global__ void rope_ref(const float *x, float *out, int tokens, int heads, int dim) {
    long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= (long long)tokens * heads) {
        return;
    }
    int token = (int)(row / heads);
    const float *v = x + row * dim;
    float *o = out + row * dim;
    for (int i = 0; i < dim / 2; ++i) {
        double a = rope_angle(token, i, dim);
        double s = sin(a), c = cos(a);
        o[2 * i] = (float)(v[2 * i] * c - v[2 * i + 1] * s);
        o[2 * i + 1] = (float)(v[2 * i] * s + v[2 * i + 1] * c);
    }
}
