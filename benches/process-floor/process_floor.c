// The floor of a fresh CUDA process: how long a bare driver-API program takes to reach its
// last call, and to be reaped after it, by exit path. Build and run on a GPU machine:
//   nvcc -O2 -o process_floor benches/process-floor/process_floor.c -lcuda
//   python3 benches/process-floor/process_floor.py ./process_floor
// argv[1]: exit | _exit | destroy (release the primary context, then exit)
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
  CUdevice d; CUcontext c; CUdeviceptr p[3];
  if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&c, d) || cuCtxSetCurrent(c)) return 2;
  for (int i = 0; i < 3; i++) { if (cuMemAlloc(&p[i], 64 << 20)) return 3; cuMemsetD8(p[i], 0, 64 << 20); }
  cuCtxSynchronize();
  printf("done\n"); fflush(stdout);
  if (!strcmp(argv[1], "_exit")) _exit(0);
  if (!strcmp(argv[1], "destroy")) { cuDevicePrimaryCtxRelease(d); }
  exit(0);
}
