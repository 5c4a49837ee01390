// The post's matmul with 32 x 32 tiles of A and B staged in shared memory: each element of
// A and B is read from global memory n / 32 times instead of n times. Same signature as
// matMulKernel, so it can be checked against it.
#define TILE 32

extern "C" __global__ void matMulTiled(float *A, float *B, float *C, int m, int k, int n) {
    __shared__ float a[TILE][TILE];
    __shared__ float b[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < k; t += TILE) {
        a[threadIdx.y][threadIdx.x] = (row < m && t + threadIdx.x < k) ? A[row * k + t + threadIdx.x] : 0.0f;
        b[threadIdx.y][threadIdx.x] = (t + threadIdx.y < k && col < n) ? B[(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; i++) {
            acc += a[threadIdx.y][i] * b[i][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        C[row * n + col] = acc;
    }
}

// A planted off-by-one: the last tile's products are left out whenever k is a multiple of
// the tile, so its output is wrong; the check must fail this kernel's cells.
extern "C" __global__ void matMulTiledOffByOne(float *A, float *B, float *C, int m, int k, int n) {
    __shared__ float a[TILE][TILE];
    __shared__ float b[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t + TILE < k; t += TILE) {
        a[threadIdx.y][threadIdx.x] = (row < m) ? A[row * k + t + threadIdx.x] : 0.0f;
        b[threadIdx.y][threadIdx.x] = (col < n) ? B[(t + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TILE; i++) {
            acc += a[threadIdx.y][i] * b[i][threadIdx.x];
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        C[row * n + col] = acc;
    }
}
