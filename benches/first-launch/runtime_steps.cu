// Where does a runtime-API program's first launch spend what the same driver calls do not?
// One fresh process times one first launch of kernels/matmul.cu's naive matmul with CUDA
// events on the legacy default stream, as the post's `benchmark_03_cudaEvents` does, in one
// of these steps from the bare driver toward the post's program:
//   drv         driver set-up (cuInit, primary context, cuMemAlloc, cuMemcpyHtoD, events);
//               in the region cuLibraryLoadData + cuLibraryGetKernel + cuLaunchKernel
//   rt-driver   the runtime's set-up (cudaMalloc, cudaMemcpy, cudaEventCreate), the same
//               driver calls in the region
//   rt-library  the runtime's set-up; in the region cudaLibraryLoadData +
//               cudaLibraryGetKernel + cudaLaunchKernel of that kernel
//   rt-launch   the runtime's set-up; in the region the embedded kernel by <<<>>>, which the
//               runtime loads at this first launch (lazy loading), as the post's program does
// IMAGE (a CUBIN or fatbinary of kernels/matmul.cu) is read in every step, used by the
// first three. Build and run on a GPU machine (steps.sh does both):
//   nvcc -O3 -arch=sm_90 -o runtime_steps runtime_steps.cu -I../../kernels -lcuda
//   ./runtime_steps STEP IMAGE N [NAME]  (NAME: the kernel's name in IMAGE, default matMulKernel)
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <random>

// Built with -DPOST, rt-launch launches the post's own kernel instead (benchmark_common.cuh,
// found by -I the post's snippets), so that the program's image is the post's.
#ifdef POST
#include "benchmark_common.cuh"
using benchmark::matMulKernel;
#else
#include "matmul.cu"
#endif

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { \
    const char *s_; cuGetErrorName(r_, &s_); fprintf(stderr, "%s: %s\n", #x, s_); exit(2); } } while (0)
#define RT(x) do { cudaError_t r_ = (x); if (r_ != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(r_)); exit(2); } } while (0)

static void *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(2); }
  fseek(f, 0, SEEK_END); long len = ftell(f); fseek(f, 0, SEEK_SET);
  char *b = (char *)malloc(len + 1);
  if (fread(b, 1, len, f) != (size_t)len) { perror(path); exit(2); }
  b[len] = 0; fclose(f);
  return b;
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) { fprintf(stderr, "usage: %s drv|rt-driver|rt-library|rt-launch IMAGE N [NAME]\n", argv[0]); return 1; }
  const char *step = argv[1];
  const char *name = argc == 5 ? argv[4] : "matMulKernel";
  void *image = read_file(argv[2]);
  int n = atoi(argv[3]);
  size_t bytes = (size_t)n * n * sizeof(float);
  float *h = (float *)malloc(bytes);
  // DATA=mt draws the inputs as the post's programs do (mt19937, uniform in [0, 100)).
  if (getenv("DATA") && !strcmp(getenv("DATA"), "mt")) {
    std::mt19937 gen(std::random_device{}());
    std::uniform_real_distribution<float> dist(0, 100);
    for (size_t i = 0; i < (size_t)n * n; i++) h[i] = dist(gen);
  } else {
    for (size_t i = 0; i < (size_t)n * n; i++) h[i] = (float)(rand() % 10000) / 100.0f;
  }
  int runtime_setup = strcmp(step, "drv") != 0;

  float *a, *b, *c;
  CUevent start, stop;
  if (runtime_setup) {
    RT(cudaMalloc(&a, bytes)); RT(cudaMalloc(&b, bytes)); RT(cudaMalloc(&c, bytes));
    RT(cudaMemcpy(a, h, bytes, cudaMemcpyHostToDevice));
    RT(cudaMemcpy(b, h, bytes, cudaMemcpyHostToDevice));
    RT(cudaEventCreate((cudaEvent_t *)&start)); RT(cudaEventCreate((cudaEvent_t *)&stop));
  } else {
    CUdevice dev; CUcontext ctx;
    CK(cuInit(0)); CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
    CUdeviceptr da, db, dc;
    CK(cuMemAlloc(&da, bytes)); CK(cuMemAlloc(&db, bytes)); CK(cuMemAlloc(&dc, bytes));
    CK(cuMemcpyHtoD(da, h, bytes)); CK(cuMemcpyHtoD(db, h, bytes));
    CK(cuEventCreate(&start, CU_EVENT_DEFAULT)); CK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    a = (float *)da; b = (float *)db; c = (float *)dc;
  }
  // POISON=1 copies into the output before the region too, as the runner's worker poisons it.
  if (getenv("POISON")) {
    if (runtime_setup) RT(cudaMemcpy(c, h, bytes, cudaMemcpyHostToDevice));
    else CK(cuMemcpyHtoD((CUdeviceptr)c, h, bytes));
  }
  int m_ = n, k_ = n, n_ = n;
  void *params[] = {&a, &b, &c, &m_, &k_, &n_};
  unsigned g = (n + 31) / 32;

  if (runtime_setup) RT(cudaEventRecord((cudaEvent_t)start, 0));
  else CK(cuEventRecord(start, NULL));
  if (!strcmp(step, "rt-launch")) {
    matMulKernel<<<dim3(g, g), dim3(32, 32)>>>(a, b, c, n, n, n);
    RT(cudaGetLastError());
  } else if (!strcmp(step, "rt-library")) {
    cudaLibrary_t library; cudaKernel_t kernel;
    RT(cudaLibraryLoadData(&library, image, NULL, NULL, 0, NULL, NULL, 0));
    RT(cudaLibraryGetKernel(&kernel, library, name));
    RT(cudaLaunchKernel((const void *)kernel, dim3(g, g), dim3(32, 32), params, 0, 0));
  } else {
    CUlibrary library; CUkernel kernel;
    CK(cuLibraryLoadData(&library, image, NULL, NULL, 0, NULL, NULL, 0));
    CK(cuLibraryGetKernel(&kernel, library, name));
    CK(cuLaunchKernel((CUfunction)kernel, g, g, 1, 32, 32, 1, 0, NULL, params, NULL));
  }
  if (runtime_setup) RT(cudaEventRecord((cudaEvent_t)stop, 0));
  else CK(cuEventRecord(stop, NULL));
  CK(cuEventSynchronize(stop));
  float ms; CK(cuEventElapsedTime(&ms, start, stop));
  printf("%s n=%d event_us=%.1f\n", step, n, ms * 1e3);
  return 0;
}
