// A 7-point stencil on an n x n x n grid of floats: out = c0 * in + c1 * (sum of the six
// neighbours) inside, out = in on the boundary. `stencil_march` walks each (x, y) column
// along z keeping three planes in registers; `stencil_ref` is one thread per point.
extern "C" __global__ void stencil_ref(const float* in, float* out, int n, float c0, float c1) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long total = (long long)n * n * n;
    if (i >= total) return;
    int x = i % n, y = (i / n) % n, z = i / ((long long)n * n);
    if (x == 0 || y == 0 || z == 0 || x == n - 1 || y == n - 1 || z == n - 1) {
        out[i] = in[i];
        return;
    }
    long long plane = (long long)n * n;
    out[i] = c0 * in[i] + c1 * (in[i - 1] + in[i + 1] + in[i - n] + in[i + n] + in[i - plane] + in[i + plane]);
}

extern "C" __global__ void stencil_march(const float* in, float* out, int n, float c0, float c1) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= n || y >= n) return;
    long long plane = (long long)n * n;
    long long i = (long long)y * n + x;
    bool edge = x == 0 || y == 0 || x == n - 1 || y == n - 1;
    float below = in[i], here = in[i + plane];
    out[i] = below;
    for (int z = 1; z < n - 1; ++z) {
        long long j = i + z * plane;
        float above = in[j + plane];
        out[j] = edge ? here
                      : c0 * here + c1 * (in[j - 1] + in[j + 1] + in[j - n] + in[j + n] + below + above);
        below = here;
        here = above;
    }
    out[i + (long long)(n - 1) * plane] = here;
}
