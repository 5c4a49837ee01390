/* A stand-in CUDA driver for tests without a GPU (tests/signals.rs). It describes one
 * H100-like device, so that `runner run` plans and starts its worker, and it never
 * returns from creating a context: the worker hangs there as on a stuck device, until it
 * is killed. Only the calls the runner makes before the context are here.
 * Built by the test: cc -shared -fPIC -o libcuda.so libcuda.c */
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;

CUresult cuInit(unsigned flags) { (void)flags; return 0; }
CUresult cuDriverGetVersion(int *version) { *version = 13000; return 0; }
CUresult cuDeviceGetCount(int *count) { *count = 1; return 0; }
CUresult cuDeviceGet(CUdevice *dev, int ordinal) { *dev = ordinal; return 0; }

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    (void)dev;
    strncpy(name, "Stand-in H100", (size_t)len);
    name[len - 1] = 0;
    return 0;
}

CUresult cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice dev) {
    (void)dev;
    memset(uuid, 0x5a, 16);
    return 0;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    (void)dev;
    *bytes = (size_t)80 << 30;
    return 0;
}

/* The attributes `cuda::query` reads, by their number in cuda.h; 0 for any other. */
CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice dev) {
    (void)dev;
    switch (attribute) {
    case 1: *value = 1024; break;              /* max threads per block */
    case 2: case 3: *value = 1024; break;      /* max block x, y */
    case 4: *value = 64; break;                /* max block z */
    case 5: *value = 2147483647; break;        /* max grid x */
    case 6: case 7: *value = 65535; break;     /* max grid y, z */
    case 13: *value = 1980000; break;          /* SM clock, kHz */
    case 16: *value = 132; break;              /* SMs */
    case 36: *value = 2619000; break;          /* memory clock, kHz */
    case 37: *value = 5120; break;             /* memory bus width, bits */
    case 38: *value = 50 << 20; break;         /* L2 bytes */
    case 75: *value = 9; break;                /* compute capability */
    case 76: *value = 0; break;
    case 97: *value = 232448; break;           /* shared bytes per block, opt-in */
    default: *value = 0;
    }
    return 0;
}

/* A context never comes: the worker waits here until it is killed. */
CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice dev) {
    (void)ctx;
    (void)dev;
    for (;;)
        pause();
}
