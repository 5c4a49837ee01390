// Cold spans without CUPTI, three ways, against CUPTI's own spans of the same launches, for
// seed 001's copy (kernels/copy.cu, sm_count * 4 blocks of 1024 threads) at MIB MiB per
// buffer. Every launch follows a memset flush of twice the L2 (as cache = "flush"):
//   pairs-flushes  a graph of N flush + copy pairs less a graph of the N flushes alone, per
//                  launch (the runner's flushed graph)
//   events-node    event-record nodes around each copy inside the pairs graph (recorded with
//                  CU_EVENT_RECORD_EXTERNAL), their elapsed time per launch, less the same
//                  events' excess over the kernel measured hot (a graph of N copies with the
//                  same nodes, against a graph of N copies timed whole)
//   cupti          CUPTI's kernel records of the pairs graph's copies (the reference), and of
//                  the copies between event nodes (whether the nodes change the launch)
// Build and run on a GPU machine (run.sh does):
//   nvcc -O2 -o cold_graph_events cold_graph_events.c -lcuda -lcupti (+ CUPTI's -I/-L)
//   ./cold_graph_events copy.cubin MIB [N] [REPLAYS] [legacy]
#include <cuda.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { \
    const char *s_; cuGetErrorName(r_, &s_); fprintf(stderr, "%s: %s\n", #x, s_); exit(2); } } while (0)
#define CP(x) do { CUptiResult r_ = (x); if (r_ != CUPTI_SUCCESS) { \
    const char *s_; cuptiGetResultString(r_, &s_); fprintf(stderr, "%s: %s\n", #x, s_); exit(2); } } while (0)

static double spans[1 << 16];
static int nspans;

static void CUPTIAPI want(uint8_t **buf, size_t *size, size_t *max) {
  *size = 8 << 20; *buf = aligned_alloc(8, *size); *max = 0;
}
static void CUPTIAPI got(CUcontext c, uint32_t s, uint8_t *buf, size_t size, size_t valid) {
  (void)c; (void)s; (void)size;
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && nspans < (1 << 16)) {
      // The graph's memsets may run as the driver's own kernels: the copy's records only.
      CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
      if (k->name && !strcmp(k->name, "copy")) spans[nspans++] = (double)(k->end - k->start);
    }
  free(buf);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y);
}
static double median(double *v, int n) { qsort(v, n, sizeof *v, cmp); return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2; }

static CUstream st;
static CUdeviceptr flush, src, dst;
static size_t flush_bytes, n_floats;
static CUfunction copy;
static unsigned grid;

static void enqueue_copy(void) {
  void *p[] = {&dst, &src, &n_floats};
  CK(cuLaunchKernel(copy, grid, 1, 1, 1024, 1, 1, 0, st, p, NULL));
}

// A graph of n groups: [flush] [ea[i]] copy [eb[i]], each part present where asked.
static CUgraphExec capture(int n, int with_flush, int with_copy, CUevent *ea, CUevent *eb) {
  CUgraph g; CUgraphExec e;
  CK(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < n; i++) {
    if (with_flush) CK(cuMemsetD8Async(flush, 1, flush_bytes, st));
    if (ea) CK(cuEventRecordWithFlags(ea[i], st, CU_EVENT_RECORD_EXTERNAL));
    if (with_copy) enqueue_copy();
    if (eb) CK(cuEventRecordWithFlags(eb[i], st, CU_EVENT_RECORD_EXTERNAL));
  }
  CK(cuStreamEndCapture(st, &g));
  CK(cuGraphInstantiate(&e, g, 0));
  return e;
}

static CUstream replay_on;

// Replays a graph once between two events; its time in ns.
static double replay(CUgraphExec e, CUevent a, CUevent b) {
  float ms;
  CK(cuEventRecord(a, replay_on)); CK(cuGraphLaunch(e, replay_on)); CK(cuEventRecord(b, replay_on));
  CK(cuEventSynchronize(b)); CK(cuEventElapsedTime(&ms, a, b));
  return ms * 1e6;
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: %s copy.cubin MIB [N] [REPLAYS]\n", argv[0]); return 1; }
  int mib = atoi(argv[2]), n = argc > 3 ? atoi(argv[3]) : 100, reps = argc > 4 ? atoi(argv[4]) : 20;
  CUdevice d; CUcontext c; CUmodule m; int sms, l2;
  CK(cuInit(0)); CK(cuDeviceGet(&d, 0)); CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d));
  CK(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, d));
  CK(cuModuleLoad(&m, argv[1])); CK(cuModuleGetFunction(&copy, m, "copy"));
  grid = sms * 4; n_floats = (size_t)mib << 18; flush_bytes = 2 * (size_t)l2;
  CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  // "legacy": replays on the legacy default stream, as the runner's.
  replay_on = argc > 5 && !strcmp(argv[5], "legacy") ? NULL : st;
  CK(cuMemAlloc(&flush, flush_bytes)); CK(cuMemAlloc(&src, n_floats * 4)); CK(cuMemAlloc(&dst, n_floats * 4));
  CK(cuMemsetD8(src, 7, n_floats * 4));
  CUevent a, b, *ea = malloc(n * sizeof *ea), *eb = malloc(n * sizeof *eb);
  CK(cuEventCreate(&a, 0)); CK(cuEventCreate(&b, 0));
  for (int i = 0; i < n; i++) { CK(cuEventCreate(&ea[i], 0)); CK(cuEventCreate(&eb[i], 0)); }
  CUgraphExec pairs = capture(n, 1, 1, NULL, NULL), flushes = capture(n, 1, 0, NULL, NULL);
  CUgraphExec hot = capture(n, 0, 1, NULL, NULL);
  CUgraphExec pairs_ev = capture(n, 1, 1, ea, eb), hot_ev = capture(n, 0, 1, ea, eb);
  double *v = malloc(sizeof(double) * n * reps), *w = malloc(sizeof(double) * reps);
  double *x = malloc(sizeof(double) * reps);
  for (int i = 0; i < 3; i++) { replay(pairs, a, b); replay(flushes, a, b); replay(hot, a, b); }
  // The runner's flushed graph and the hot graph, per launch.
  for (int r = 0; r < reps; r++) { w[r] = (replay(pairs, a, b) - replay(flushes, a, b)) / n; x[r] = replay(hot, a, b) / n; }
  double pairs_flushes = median(w, reps), hot_graph = median(x, reps);
  // Event nodes around each launch, hot and flushed.
  int k = 0;
  for (int r = 0; r < reps; r++) {
    replay(hot_ev, a, b);
    for (int i = 0; i < n; i++) { float ms; CK(cuEventElapsedTime(&ms, ea[i], eb[i])); v[k++] = ms * 1e6; }
  }
  double hot_nodes = median(v, k);
  k = 0;
  for (int r = 0; r < reps; r++) {
    replay(pairs_ev, a, b);
    for (int i = 0; i < n; i++) { float ms; CK(cuEventElapsedTime(&ms, ea[i], eb[i])); v[k++] = ms * 1e6; }
  }
  double cold_nodes = median(v, k);
  // As the runner reads a sample: the hot graph whole, the hot nodes, the cold nodes.
  for (int r = 0; r < reps; r++) {
    double whole = replay(hot, a, b) / n;
    replay(hot_ev, a, b);
    for (int i = 0; i < n; i++) { float ms; CK(cuEventElapsedTime(&ms, ea[i], eb[i])); v[i] = ms * 1e6; }
    double hn = median(v, n);
    replay(pairs_ev, a, b);
    for (int i = 0; i < n; i++) { float ms; CK(cuEventElapsedTime(&ms, ea[i], eb[i])); v[i] = ms * 1e6; }
    w[r] = median(v, n) - (hn - whole);
  }
  double runner_order = median(w, reps);
  // CUPTI's spans of the pairs graph's copies, and of the hot graph's.
  CP(cuptiActivityRegisterCallbacks(want, got));
  CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  for (int r = 0; r < reps; r++) replay(pairs, a, b);
  CK(cuCtxSynchronize()); CP(cuptiActivityFlushAll(1));
  double cupti_cold = median(spans, nspans);
  int cold_count = nspans; nspans = 0;
  for (int r = 0; r < reps; r++) replay(hot, a, b);
  CK(cuCtxSynchronize()); CP(cuptiActivityFlushAll(1));
  double cupti_hot = median(spans, nspans);
  nspans = 0;
  for (int r = 0; r < reps; r++) replay(pairs_ev, a, b);
  CK(cuCtxSynchronize()); CP(cuptiActivityFlushAll(1));
  double cupti_cold_nodes = median(spans, nspans);
  double excess = hot_nodes - hot_graph;
  printf("copy %d MiB per buffer, %d launches x %d replays (%d CUPTI spans)\n", mib, n, reps, cold_count);
  printf("  cupti cold (reference)      %9.1f ns\n", cupti_cold);
  printf("  pairs - flushes             %9.1f ns  (%+.1f ns, %+.2f%%)\n", pairs_flushes, pairs_flushes - cupti_cold, 100 * (pairs_flushes - cupti_cold) / cupti_cold);
  printf("  event nodes cold - excess   %9.1f ns  (%+.1f ns, %+.2f%%)  [nodes cold %.1f, hot %.1f, hot graph %.1f, cupti hot %.1f]\n",
         cold_nodes - excess, cold_nodes - excess - cupti_cold, 100 * (cold_nodes - excess - cupti_cold) / cupti_cold,
         cold_nodes, hot_nodes, hot_graph, cupti_hot);
  printf("  cupti of the copies between event nodes %.1f ns\n", cupti_cold_nodes);
  printf("  event nodes, read per sample as the runner does %.1f ns (%+.1f ns)\n", runner_order, runner_order - cupti_cold);
  return 0;
}
