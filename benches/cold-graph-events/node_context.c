// Whether what precedes an event node changes what the node adds to a launch: the runner's
// `flushed_graph = "event_nodes"` reads a flushed launch as the span between two event nodes
// around it, less what the same nodes add to a hot launch. In the flushed graph the first node
// follows a memset; in the hot one it follows the previous launch's closing node. `spacer`
// puts an empty kernel before the first node in both graphs, so that it follows a kernel in
// both. Every reading against CUPTI's spans of the same launches and of a lone flushed launch
// (memset, synchronize, launch: the runner's `cupti-cold`).
//   KIND  copy (SIZE MiB per buffer, sm_count * 4 blocks of 1024) or matmul (SIZE = n,
//         the post's naive matmul, 32 x 32 blocks)
// Build and run on a GPU machine (node_context.sh does):
//   ./node_context kernels.cubin KIND SIZE [N] [REPLAYS]
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
static const char *kernel_name;

static void CUPTIAPI want(uint8_t **buf, size_t *size, size_t *max) {
  *size = 8 << 20; *buf = aligned_alloc(8, *size); *max = 0;
}
static void CUPTIAPI got(CUcontext c, uint32_t s, uint8_t *buf, size_t size, size_t valid) {
  (void)c; (void)s; (void)size;
  CUpti_Activity *r = NULL;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS)
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && nspans < (1 << 16)) {
      CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
      if (k->name && !strcmp(k->name, kernel_name)) spans[nspans++] = (double)(k->end - k->start);
    }
  free(buf);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y);
}
static double median(double *v, int n) { qsort(v, n, sizeof *v, cmp); return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2; }

static CUstream st;
static CUdeviceptr flush;
static size_t flush_bytes;
static CUfunction kernel, empty, spin;
static CUdeviceptr spin_out;
static int wait_first; // a 1 ms wait kernel before each replay: the graph is queued whole
static unsigned grid[2], block[2];
static void *args[6];

static void enqueue(CUfunction f, int own) {
  if (own) CK(cuLaunchKernel(f, grid[0], grid[1], 1, block[0], block[1], 1, 0, st, args, NULL));
  else CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, st, NULL, NULL));
}

// A graph of n groups: [flush] [empty] [ea[i]] kernel [eb[i]], or with `whole` one node
// before the first group and one after the last.
static CUgraphExec capture(int n, int with_flush, int spacer, CUevent *ea, CUevent *eb, int whole) {
  CUgraph g; CUgraphExec e;
  CK(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < n; i++) {
    if (with_flush) CK(cuMemsetD8Async(flush, 0, flush_bytes, st));
    if (spacer) enqueue(empty, 0);
    if (ea && (!whole || i == 0)) CK(cuEventRecordWithFlags(ea[whole ? 0 : i], st, CU_EVENT_RECORD_EXTERNAL));
    enqueue(kernel, 1);
    if (eb && (!whole || i == n - 1)) CK(cuEventRecordWithFlags(eb[whole ? 0 : i], st, CU_EVENT_RECORD_EXTERNAL));
  }
  CK(cuStreamEndCapture(st, &g));
  CK(cuGraphInstantiate(&e, g, 0));
  return e;
}

// Replays a graph and appends the spans between its nodes (ns) to v.
static void replay_nodes(CUgraphExec e, CUevent *ea, CUevent *eb, int pairs, double *v, int *k) {
  if (wait_first) {
    unsigned long long ns = 1000000;
    void *p[] = {&spin_out, &ns};
    CK(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, st, p, NULL));
  }
  CK(cuGraphLaunch(e, st)); CK(cuStreamSynchronize(st));
  for (int i = 0; i < pairs; i++) { float ms; CK(cuEventElapsedTime(&ms, ea[i], eb[i])); v[(*k)++] = ms * 1e6; }
}

static double cupti_median(CUgraphExec e, int reps) {
  nspans = 0;
  for (int r = 0; r < reps; r++) { CK(cuGraphLaunch(e, st)); CK(cuStreamSynchronize(st)); }
  CK(cuCtxSynchronize()); CP(cuptiActivityFlushAll(1));
  return median(spans, nspans);
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: %s kernels.cubin copy|matmul SIZE [N] [REPLAYS]\n", argv[0]); return 1; }
  int size = atoi(argv[3]), n = argc > 4 ? atoi(argv[4]) : 100, reps = argc > 5 ? atoi(argv[5]) : 20;
  int is_copy = !strcmp(argv[2], "copy");
  CUdevice d; CUcontext c; CUmodule m; int sms, l2;
  CK(cuInit(0)); CK(cuDeviceGet(&d, 0)); CK(cuDevicePrimaryCtxRetain(&c, d)); CK(cuCtxSetCurrent(c));
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d));
  CK(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, d));
  CK(cuModuleLoad(&m, argv[1]));
  kernel_name = is_copy ? "copy" : "matMulKernel";
  CK(cuModuleGetFunction(&kernel, m, kernel_name)); CK(cuModuleGetFunction(&empty, m, "empty"));
  CK(cuModuleGetFunction(&spin, m, "spin")); CK(cuMemAlloc(&spin_out, 4));
  CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  flush_bytes = 2 * (size_t)l2;
  CK(cuMemAlloc(&flush, flush_bytes));
  static CUdeviceptr x, y, z; static unsigned long long len; static int dim;
  if (is_copy) {
    len = (size_t)size << 18;
    CK(cuMemAlloc(&x, len * 4)); CK(cuMemAlloc(&y, len * 4)); CK(cuMemsetD8(y, 7, len * 4));
    args[0] = &x; args[1] = &y; args[2] = &len;
    grid[0] = sms * 4; grid[1] = 1; block[0] = 1024; block[1] = 1;
  } else {
    dim = size; size_t bytes = (size_t)dim * dim * 4;
    CK(cuMemAlloc(&x, bytes)); CK(cuMemAlloc(&y, bytes)); CK(cuMemAlloc(&z, bytes));
    CK(cuMemsetD32(x, 0x3f800000, (size_t)dim * dim)); CK(cuMemsetD32(y, 0x40000000, (size_t)dim * dim));
    args[0] = &x; args[1] = &y; args[2] = &z; args[3] = &dim; args[4] = &dim; args[5] = &dim;
    grid[0] = grid[1] = (dim + 31) / 32; block[0] = block[1] = 32;
  }
  CUevent *ea = malloc(n * sizeof *ea), *eb = malloc(n * sizeof *eb);
  for (int i = 0; i < n; i++) { CK(cuEventCreate(&ea[i], 0)); CK(cuEventCreate(&eb[i], 0)); }
  CUgraphExec cold = capture(n, 1, 0, ea, eb, 0), hot = capture(n, 0, 0, ea, eb, 0);
  CUgraphExec cold_sp = capture(n, 1, 1, ea, eb, 0), hot_sp = capture(n, 0, 1, ea, eb, 0);
  CUgraphExec whole = capture(n, 0, 0, ea, eb, 1), pairs = capture(n, 1, 0, NULL, NULL, 0);
  double *v[5]; int k[5] = {0};
  for (int i = 0; i < 5; i++) v[i] = malloc(sizeof(double) * n * reps);
  double *wv = v[4];
  for (int r = 0; r < 3; r++) {
    int none = 0;
    replay_nodes(cold, ea, eb, 0, NULL, &none); replay_nodes(hot, ea, eb, 0, NULL, &none);
  }
  // Each replay as the runner reads a sample: the hot graph whole, the marked hot, the flushed.
  for (int r = 0; r < reps; r++) {
    int one = 0; double w;
    replay_nodes(whole, ea, eb, 1, &w, &one); wv[k[4]++] = w / n;
    replay_nodes(hot, ea, eb, n, v[0], &k[0]);
    replay_nodes(cold, ea, eb, n, v[1], &k[1]);
    replay_nodes(hot_sp, ea, eb, n, v[2], &k[2]);
    replay_nodes(cold_sp, ea, eb, n, v[3], &k[3]);
  }
  double hot_n = median(v[0], k[0]), cold_n = median(v[1], k[1]);
  double hot_sp_n = median(v[2], k[2]), cold_sp_n = median(v[3], k[3]), whole_n = median(wv, k[4]);
  double plain = cold_n - (hot_n - whole_n), spaced = cold_sp_n - (hot_sp_n - whole_n);
  // The plain nodes again: with a wait kernel before each replay; then CUPTI's readings (a lone
  // flushed launch: memset, synchronize, launch; the graphs' launches) and the nodes with its
  // collection stopped, as in a process that ran a CUPTI cell before, without and with the
  // wait kernel. (Detaching CUPTI with cuptiFinalize here made the next graph launch fail
  // with CUDA_ERROR_LAUNCH_FAILED.)
  double again[3][4], solo = 0, c_pairs = 0, c_cold = 0, c_cold_sp = 0, c_hot = 0;
  for (int phase = 0; phase < 3; phase++) {
    if (phase == 1) {
      // CUPTI: a lone flushed launch (memset, synchronize, launch), then the graphs' launches.
      CP(cuptiActivityRegisterCallbacks(want, got));
      CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
      nspans = 0;
      for (int r = 0; r < 200; r++) {
        CK(cuMemsetD8Async(flush, 0, flush_bytes, st)); CK(cuStreamSynchronize(st));
        enqueue(kernel, 1); CK(cuStreamSynchronize(st));
      }
      CK(cuCtxSynchronize()); CP(cuptiActivityFlushAll(1));
      solo = median(spans, nspans);
      c_pairs = cupti_median(pairs, reps); c_cold = cupti_median(cold, reps);
      c_cold_sp = cupti_median(cold_sp, reps); c_hot = cupti_median(whole, reps);
      CP(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)); CP(cuptiActivityFlushAll(1));
    }
    wait_first = phase != 1;
    for (int i = 0; i < 5; i++) k[i] = 0;
    for (int r = 0; r < reps; r++) {
      int one = 0; double w;
      replay_nodes(whole, ea, eb, 1, &w, &one); wv[k[4]++] = w / n;
      replay_nodes(hot, ea, eb, n, v[0], &k[0]);
      replay_nodes(cold, ea, eb, n, v[1], &k[1]);
    }
    double c = median(v[1], k[1]), h = median(v[0], k[0]), w = median(wv, k[4]);
    again[phase][0] = c - (h - w); again[phase][1] = c; again[phase][2] = h; again[phase][3] = w;
  }
  printf("%s %d, %d launches x %d replays: ns per launch\n", argv[2], size, n, reps);
  printf("  cupti lone flushed launch (reference) %9.1f\n", solo);
  printf("  cupti in the graphs: pairs %.1f, between nodes %.1f, between nodes after empty %.1f, hot %.1f\n",
         c_pairs, c_cold, c_cold_sp, c_hot);
  printf("  nodes:              %9.1f (%+7.1f, %+.2f%%)  [cold %.1f, hot %.1f, whole %.1f]\n",
         plain, plain - solo, 100 * (plain - solo) / solo, cold_n, hot_n, whole_n);
  printf("  nodes, empty before %9.1f (%+7.1f, %+.2f%%)  [cold %.1f, hot %.1f]\n",
         spaced, spaced - solo, 100 * (spaced - solo) / solo, cold_sp_n, hot_sp_n);
  static const char *phase_name[] = {"nodes, wait first", "nodes after CUPTI", "after CUPTI, wait"};
  for (int phase = 0; phase < 3; phase++) {
    double *a = again[phase];
    printf("  %-19s %9.1f (%+7.1f, %+.2f%%)  [cold %.1f, hot %.1f, whole %.1f]\n", phase_name[phase],
           a[0], a[0] - solo, 100 * (a[0] - solo) / solo, a[1], a[2], a[3]);
  }
  return 0;
}
