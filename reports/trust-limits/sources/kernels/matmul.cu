// The post's naive matrix multiplication: C (m x n) = A (m x k) * B (k x n), row-major,
// one thread per element of C, no tiling, so it is memory-bound. Launched with 32x32 blocks.
extern "C" __global__ void matMulKernel(float *A, float *B, float *C, int m, int k, int n) {
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;

    if (row < m && col < n) {
        float cValue = 0;
        for (int k_i = 0; k_i < k; k_i++) {
            cValue += A[row * k + k_i] * B[k_i * n + col];
        }
        C[row * n + col] = cValue;
    }
}
