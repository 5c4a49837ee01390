// C (n x n, f32) = A (n x n, f16) * B (n x n, f16), row-major, on the tensor cores through
// WMMA: one warp per 16 x 16 tile of C, the k dimension in steps of 16, the fragments loaded
// straight from global memory (no shared-memory tiling: a first WMMA kernel, not a fast one).
#include <mma.h>
using namespace nvcuda;

extern "C" __global__ void wmma_gemm(const __half *A, const __half *B, float *C, int n) {
    int tile_row = blockIdx.y;
    int tile_col = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    if (tile_row * 16 >= n || tile_col * 16 >= n) {
        return;
    }
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k = 0; k < n; k += 16) {
        wmma::load_matrix_sync(a, A + tile_row * 16 * n + k, n);
        wmma::load_matrix_sync(b, B + k * n + tile_col * 16, n);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + tile_row * 16 * n + tile_col * 16, c, n, wmma::mem_row_major);
}
