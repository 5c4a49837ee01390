// Out-of-place transpose of an n x n matrix of floats, row-major: out[j][i] = in[i][j].
// `transpose_naive` reads rows and writes columns (each warp's stores hit 32 different
// lines); `transpose_tiled` stages a 32x32 tile in shared memory, padded by one column so
// that the column reads hit 32 different banks, and both reads and writes are coalesced.
// Both are launched with 32x8 blocks, each thread handling 4 rows of its tile.
#define TILE 32
#define ROWS 8

extern "C" __global__ void transpose_naive(const float *in, float *out, int n) {
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < n && y + j < n) {
            out[x * n + (y + j)] = in[(y + j) * n + x];
        }
    }
}

extern "C" __global__ void transpose_tiled(const float *in, float *out, int n) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < n && y + j < n) {
            tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * n + x];
        }
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < n && y + j < n) {
            out[(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
        }
    }
}
