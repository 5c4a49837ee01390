// A CUPTI injection library that prints every runtime and driver API call a program makes,
// with its host time, to stderr: which driver calls a runtime-API program's first launch
// makes inside its timed region. Build and use on a GPU machine (run.sh does):
//   gcc -O2 -shared -fPIC -o trace_inject.so trace_inject.c -I$CUDA/include \
//       -I$CUDA/extras/CUPTI/include -L$CUDA/extras/CUPTI/lib64 -lcupti
//   CUDA_INJECTION64_PATH=./trace_inject.so ./program ...
// TRACE_DIR=DIR writes each process's calls to DIR/trace-PID.txt instead (for a program whose
// stderr is not its own, such as a worker process).
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>

static double now_us(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double entered[2][64];
static FILE *out;
static int depth[2];

static void CUPTIAPI on_call(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                             const void *data) {
  (void)user; (void)id;
  const CUpti_CallbackData *d = data;
  int rt = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (d->callbackSite == CUPTI_API_ENTER) {
    if (depth[rt] < 64) entered[rt][depth[rt]] = now_us();
    depth[rt]++;
    fprintf(out, "%*s> %s %s %.1f\n", 2 * depth[!rt] * rt, "", rt ? "rt " : "drv", d->functionName, now_us());
  } else {
    depth[rt]--;
    double took = depth[rt] < 64 ? now_us() - entered[rt][depth[rt]] : -1;
    fprintf(out, "%*s< %s %s %.1f us\n", 2 * depth[!rt] * rt, "", rt ? "rt " : "drv", d->functionName, took);
  }
}

int InitializeInjection(void) {
  out = stderr;
  const char *dir = getenv("TRACE_DIR");
  if (dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/trace-%d.txt", dir, (int)getpid());
    out = fopen(path, "w");
    if (!out) out = stderr;
  }
  CUpti_SubscriberHandle s;
  if (cuptiSubscribe(&s, on_call, NULL) != CUPTI_SUCCESS) return 0;
  cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_DRIVER_API);
  return 1;
}
