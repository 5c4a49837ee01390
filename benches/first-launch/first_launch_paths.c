// Which driver path reproduces a runtime-API program's first launch? One fresh process times
// one first launch of the post's naive matmul with CUDA events on the legacy default stream,
// as `benchmark_03_cudaEvents` does, loading the kernel one of these ways:
//   module    cuModuleLoadData + cuModuleGetFunction + cuLaunchKernel, all inside the region
//   library   cuLibraryLoadData before it; cuLibraryGetKernel + cuKernelGetFunction +
//             cuLaunchKernel inside
//   kernel    cuLibraryLoadData + cuLibraryGetKernel before it; cuLaunchKernel of the
//             CUkernel itself inside (the kernel loads into the context at that launch)
//   prepared  everything before it; only cuLaunchKernel inside
//   runtime   cuLibraryLoadData + cuLibraryGetKernel + cuLaunchKernel of the CUkernel, all
//             inside: what the CUDA 13 runtime does at a program's first kernel<<<>>> under
//             lazy loading (trace-b03.txt from run.sh shows the calls)
// Prints the event reading and the host time of each call inside the region. Build and run
// on a GPU machine (benches/first-launch/run.sh does both):
//   nvcc -O2 -o first_launch_paths first_launch_paths.c -lcuda -lnvidia-ml
//   ./first_launch_paths MODE IMAGE N [NAME]  (IMAGE: a CUBIN or fatbinary of the matmul, whose
//                                            entry is NAME, default matMulKernel)
// BEFORE=spin:MS keeps the CPU busy for MS ms just before the timed region (as a worker that
// has just compiled its kernel with NVRTC); BEFORE=sleep:MS leaves it idle that long;
// BEFORE=sync waits for the GPU (cuCtxSynchronize: a pageable copy may still be moving).
// BEFORE=heap:MB leaves MB of touched, freed memory in the C heap (as a long-running process
// has), so the driver's allocations in the region need not fault fresh pages in.
// BEFORE=trim returns the free heap to the system (malloc_trim), as the runner's worker does
// before a lazy first launch.
// BEFORE=nvml:WHAT reads the GPU's state through NVML just before the region, as a runner
// worker reads telemetry (NVML opened at the start): WHAT is all, sm, mem, power, temp,
// pstate or throttle. Link with -lnvidia-ml.
#include <cuda.h>
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <malloc.h>
#include <sys/resource.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { \
    const char *s_; cuGetErrorName(r_, &s_); fprintf(stderr, "%s: %s\n", #x, s_); exit(2); } } while (0)

static double now_us(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(2); }
  fseek(f, 0, SEEK_END); long len = ftell(f); fseek(f, 0, SEEK_SET);
  char *b = malloc(len + 1);
  if (fread(b, 1, len, f) != (size_t)len) { perror(path); exit(2); }
  b[len] = 0; fclose(f);
  return b;
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) { fprintf(stderr, "usage: %s module|library|kernel|prepared|runtime IMAGE N [NAME]\n", argv[0]); return 1; }
  const char *mode = argv[1];
  int n = atoi(argv[3]);
  void *image = read_file(argv[2]);
  size_t bytes = (size_t)n * n * sizeof(float);
  float *h = malloc(bytes);
  for (size_t i = 0; i < (size_t)n * n; i++) h[i] = (float)(rand() % 10000) / 100.0f;

  const char *before = getenv("BEFORE");
  nvmlDevice_t gpu;
  int nvml = before && !strncmp(before, "nvml:", 5);
  if (nvml && (nvmlInit_v2() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex_v2(0, &gpu) != NVML_SUCCESS)) {
    fprintf(stderr, "NVML failed\n"); exit(2);
  }
  CUdevice dev; CUcontext ctx;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev)); CK(cuCtxSetCurrent(ctx));
  CUdeviceptr a, b, c;
  CK(cuMemAlloc(&a, bytes)); CK(cuMemAlloc(&b, bytes)); CK(cuMemAlloc(&c, bytes));
  CK(cuMemcpyHtoD(a, h, bytes)); CK(cuMemcpyHtoD(b, h, bytes));
  CUevent start, stop;
  CK(cuEventCreate(&start, CU_EVENT_DEFAULT)); CK(cuEventCreate(&stop, CU_EVENT_DEFAULT));

  CUmodule module = NULL; CUlibrary library = NULL; CUkernel kernel = NULL; CUfunction func = NULL;
  int m_ = n, k_ = n, n_ = n;
  void *params[] = {&a, &b, &c, &m_, &k_, &n_};
  unsigned g = (n + 31) / 32;
  const char *name = argc == 5 ? argv[4] : "matMulKernel";
  if (!strcmp(mode, "library") || !strcmp(mode, "kernel"))
    CK(cuLibraryLoadData(&library, image, NULL, NULL, 0, NULL, NULL, 0));
  if (!strcmp(mode, "kernel")) CK(cuLibraryGetKernel(&kernel, library, name));
  if (!strcmp(mode, "prepared")) {
    CK(cuModuleLoadData(&module, image)); CK(cuModuleGetFunction(&func, module, name));
  }

  if (nvml) {
    const char *what = before + 5;
    int all = !strcmp(what, "all");
    unsigned v; unsigned long long r; nvmlPstates_t p;
    if (all || !strcmp(what, "sm")) nvmlDeviceGetClockInfo(gpu, NVML_CLOCK_SM, &v);
    if (all || !strcmp(what, "mem")) nvmlDeviceGetClockInfo(gpu, NVML_CLOCK_MEM, &v);
    if (all || !strcmp(what, "power")) nvmlDeviceGetPowerUsage(gpu, &v);
    if (all || !strcmp(what, "temp")) nvmlDeviceGetTemperature(gpu, NVML_TEMPERATURE_GPU, &v);
    if (all || !strcmp(what, "pstate")) nvmlDeviceGetPerformanceState(gpu, &p);
    if (all || !strcmp(what, "throttle")) nvmlDeviceGetCurrentClocksEventReasons(gpu, &r);
  } else if (before && !strncmp(before, "heap:", 5)) {
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    size_t chunks = (size_t)atof(before + 5) * 16;  // 64 KiB each
    char **p = malloc(chunks * sizeof *p);
    for (size_t i = 0; i < chunks; i++) { p[i] = malloc(65536 - 64); memset(p[i], 1, 65536 - 64); }
    for (size_t i = 0; i < chunks; i++) free(p[i]);
    free(p);
  } else if (before && !strcmp(before, "trim")) {
    malloc_trim(0);
  } else if (before && !strcmp(before, "sync")) CK(cuCtxSynchronize());
  else if (before) {
    double ms = atof(strchr(before, ':') ? strchr(before, ':') + 1 : "0"), end = now_us() + ms * 1e3;
    if (!strncmp(before, "spin", 4)) while (now_us() < end) {}
    else { struct timespec d = {(time_t)(ms / 1e3), (long)(ms * 1e6) % 1000000000L}; nanosleep(&d, NULL); }
  }
  double t[4];
  struct rusage ru0, ru1;
  getrusage(RUSAGE_SELF, &ru0);
  CK(cuEventRecord(start, NULL));
  t[0] = now_us();
  if (!strcmp(mode, "module")) {
    CK(cuModuleLoadData(&module, image)); t[1] = now_us();
    CK(cuModuleGetFunction(&func, module, name));
  } else if (!strcmp(mode, "library")) {
    CK(cuLibraryGetKernel(&kernel, library, name)); t[1] = now_us();
    CK(cuKernelGetFunction(&func, kernel));
  } else if (!strcmp(mode, "runtime")) {
    CK(cuLibraryLoadData(&library, image, NULL, NULL, 0, NULL, NULL, 0)); t[1] = now_us();
    CK(cuLibraryGetKernel(&kernel, library, name));
    func = (CUfunction)kernel;
  } else if (!strcmp(mode, "kernel")) {
    func = (CUfunction)kernel; t[1] = now_us();
  } else {
    t[1] = now_us();
  }
  t[2] = now_us();
  CK(cuLaunchKernel(func, g, g, 1, 32, 32, 1, 0, NULL, params, NULL));
  t[3] = now_us();
  CK(cuEventRecord(stop, NULL));
  getrusage(RUSAGE_SELF, &ru1);
  CK(cuEventSynchronize(stop));
  float ms; CK(cuEventElapsedTime(&ms, start, stop));
  printf("%s n=%d event_us=%.1f load_us=%.1f lookup_us=%.1f launch_us=%.1f faults=%ld\n", mode, n,
         ms * 1e3, t[1] - t[0], t[2] - t[1], t[3] - t[2], ru1.ru_minflt - ru0.ru_minflt);
  return 0;
}
