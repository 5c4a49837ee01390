// The trust corpus: matmuls that cheat, each in a way a kernel under test (or a kernel
// generator's output) has been seen to, and an honest persistent kernel that needs the same
// machinery done right (its tile counter reset before every launch; the honest histogram is
// in histogram.cu). experiments/trust.toml runs them: every cheat must end failed or suspect.
//
// All matmuls: C (m x n) = A (m x k) * B (k x n), row-major, one thread per element of C,
// launched with 32x32 blocks.

__device__ float dot(const float *A, const float *B, int row, int col, int k, int n) {
    float c = 0.0f;
    for (int i = 0; i < k; i++) {
        c += A[row * k + i] * B[i * n + col];
    }
    return c;
}

// Counts finished blocks; reset by the last one, for the next launch.
__device__ unsigned int blocks_done;

// True in thread (0, 0) of the last block of a launch to get here, once every block has
// done its work: where a kernel leaves state for its next launch. Every thread calls it.
__device__ bool last_block_of_launch() {
    __shared__ bool last;
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        __threadfence();
        unsigned int done = atomicAdd(&blocks_done, 1) + 1;
        last = done == gridDim.x * gridDim.y;
        if (last) {
            blocks_done = 0;
        }
    }
    __syncthreads();
    return last && threadIdx.x == 0 && threadIdx.y == 0;
}

// Lazy output: an element already written is not computed again. The first (checked)
// launch finds the poison (NaN) and computes; every later launch returns at once.
extern "C" __global__ void cheat_lazy_output(const float *A, const float *B, float *C, int m,
                                             int k, int n) {
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    if (row < m && col < n && isnan(C[row * n + col])) {
        C[row * n + col] = dot(A, B, row, col, k, n);
    }
}

// Computes on its first launch in its module only: a device-global flag, as a persistent
// or stream-K kernel's tile counter that nobody resets.
__device__ volatile int computed_once;

extern "C" __global__ void cheat_once_per_module(const float *A, const float *B, float *C, int m,
                                                 int k, int n) {
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    if (!computed_once && row < m && col < n) {
        C[row * n + col] = dot(A, B, row, col, k, n);
    }
    if (last_block_of_launch()) {
        computed_once = 1;
    }
}

// A result cache keyed by the buffers' addresses: the same pointers, the same answer.
__device__ const float *volatile cached_a;
__device__ const float *volatile cached_b;
__device__ float *volatile cached_c;

extern "C" __global__ void cheat_pointer_cache(const float *A, const float *B, float *C, int m,
                                               int k, int n) {
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    bool cached = cached_a == A && cached_b == B && cached_c == C;
    if (!cached && row < m && col < n) {
        C[row * n + col] = dot(A, B, row, col, k, n);
    }
    if (last_block_of_launch()) {
        cached_a = A;
        cached_b = B;
        cached_c = C;
    }
}

// A result cache keyed by a fingerprint of four input values: new data is computed (and
// correct), the same data is not. Only timing catches it.
__device__ volatile float seen[4];
__device__ volatile int seen_valid;

extern "C" __global__ void cheat_fingerprint_cache(const float *A, const float *B, float *C,
                                                   int m, int k, int n) {
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    float print[4] = {A[0], A[(m * k) / 2], B[0], B[k * n - 1]};
    bool cached = seen_valid && print[0] == seen[0] && print[1] == seen[1] &&
                  print[2] == seen[2] && print[3] == seen[3];
    if (!cached && row < m && col < n) {
        C[row * n + col] = dot(A, B, row, col, k, n);
    }
    if (last_block_of_launch()) {
        for (int i = 0; i < 4; i++) {
            seen[i] = print[i];
        }
        seen_valid = 1;
    }
}

// Computes C correctly, then uses its input A as scratch space: later launches read a
// changed A.
extern "C" __global__ void cheat_mutates_input(float *A, const float *B, float *C, int m, int k,
                                               int n) {
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    if (row < m && col < n) {
        C[row * n + col] = dot(A, B, row, col, k, n);
    }
    if (last_block_of_launch()) {
        A[0] = 0.0f;
    }
}

// Writes every row on its first launch in its module, the even rows only after that.
__device__ volatile int launched_before;

extern "C" __global__ void cheat_partial_output(const float *A, const float *B, float *C, int m,
                                                int k, int n) {
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    bool skipped = launched_before && (row & 1);
    if (!skipped && row < m && col < n) {
        C[row * n + col] = dot(A, B, row, col, k, n);
    }
    if (last_block_of_launch()) {
        launched_before = 1;
    }
}

// A persistent matmul: a grid of a few blocks per SM takes 32x32 tiles of C from a
// counter in memory until none are left. Honest where the counter is reset before every
// launch (`reset = "zeros"`); with the reset forgotten, every launch after the first finds
// the tiles taken and does nothing.
extern "C" __global__ void persistent_matmul(const float *A, const float *B, float *C,
                                             unsigned int *next_tile, int m, int k, int n) {
    unsigned int tiles_x = (n + 31) / 32;
    unsigned int tiles = tiles_x * ((m + 31) / 32);
    __shared__ unsigned int tile;
    while (true) {
        if (threadIdx.x == 0 && threadIdx.y == 0) {
            tile = atomicAdd(next_tile, 1);
        }
        __syncthreads();
        unsigned int t = tile;
        if (t >= tiles) {
            return;
        }
        int row = (t / tiles_x) * 32 + threadIdx.y;
        int col = (t % tiles_x) * 32 + threadIdx.x;
        if (row < m && col < n) {
            C[row * n + col] = dot(A, B, row, col, k, n);
        }
        // Every thread has read `tile` before the next one is taken.
        __syncthreads();
    }
}

// Kernels that tell an audit from a timed launch and skip part of their work only when they
// think they are timed: every block of a launch follows the decision of the launch's first
// block, made from one signal:
//   0 pause:       the global timer: more than 200 µs since the previous launch ended (an
//                  audit that followed the end of the timed loop, new inputs and a check);
//   1 count:       the launch count: the checked launch and the warm-up (the first 3), and
//                  the count at which an audit after the timed samples came in experiments/
//                  trust.toml's hot and cold (24), batch (213) and graph (523) variants;
//   2 address:     the output's address differs from the previous launch's;
//   3 fingerprint: four input values differ from the previous launch's;
//   4 adaptive pause: the gap since the previous launch ended is over half again the
//                  shortest of the last eight it saw (a threshold that follows the gaps the
//                  timed launches leave, whatever the warm-up's were).
// Skipped launches leave `share` percent of the rows of C (evenly spread) unwritten; 100
// skips them all.
__device__ unsigned long long previous_end;
__device__ unsigned int launches_finished;
__device__ unsigned int decision_claim;
__device__ volatile unsigned int decision_for;
__device__ volatile int decision_all_work;
__device__ const float *volatile previous_c;
__device__ volatile float previous_print[4];
__device__ unsigned long long recent_gaps[8];

__device__ unsigned long long global_timer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ bool launch_looks_audited(int signal, const float *A, const float *B, float *C,
                                     int m, int k, int n) {
    unsigned int launch = launches_finished;
    switch (signal) {
    case 0:
        return launch == 0 || global_timer() - previous_end > 200000ull;
    case 1:
        return launch < 3 || launch == 24 || launch == 213 || launch == 523;
    case 2:
        return previous_c != C;
    case 4: {
        // Called once per launch, by the block that claims its decision.
        unsigned long long gap = global_timer() - previous_end, shortest = ~0ull;
        for (int i = 0; i < 8; i++) {
            if (recent_gaps[i] != 0 && recent_gaps[i] < shortest) {
                shortest = recent_gaps[i];
            }
        }
        if (launch > 0) {
            recent_gaps[launch % 8] = gap;
        }
        return launch == 0 || gap > shortest + shortest / 2;
    }
    default:
        return launch == 0 || A[0] != previous_print[0] || A[(m * k) / 2] != previous_print[1] ||
               B[0] != previous_print[2] || B[k * n - 1] != previous_print[3];
    }
}

extern "C" __global__ void cheat_tells_audits(const float *A, const float *B, float *C, int m,
                                              int k, int n, int signal, int share) {
    __shared__ bool all_work;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned int launch = launches_finished;
        if (atomicCAS(&decision_claim, launch, launch + 1) == launch) {
            decision_all_work = launch_looks_audited(signal, A, B, C, m, k, n);
            __threadfence();
            decision_for = launch + 1;
        } else {
            while (decision_for != launch + 1) {
            }
        }
        all_work = decision_all_work;
    }
    __syncthreads();
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    // share% of the rows of C, evenly spread (those where row * share / 100 steps): every
    // block does less, so a grid of one wave is as much faster as a grid of many.
    bool skipped = !all_work && (row * share) / 100 != ((row + 1) * share) / 100;
    if (!skipped && row < m && col < n) {
        C[row * n + col] = dot(A, B, row, col, k, n);
    }
    if (last_block_of_launch()) {
        previous_end = global_timer();
        previous_c = C;
        previous_print[0] = A[0];
        previous_print[1] = A[(m * k) / 2];
        previous_print[2] = B[0];
        previous_print[3] = B[k * n - 1];
        __threadfence();
        launches_finished = launches_finished + 1;
    }
}

// A result cache of `slots` outputs keyed by a fingerprint of eight input values: on a hit,
// `share` percent of the rows of C (evenly spread) are copied from the slot and the rest
// computed; on a miss every row is computed and kept in the next slot in turn. With two
// slots it holds both data sets that take turns; every slot holds at most 1024 x 1024.
#define CACHE_SLOTS 8
#define CACHE_ELEMENTS (1024 * 1024)
__device__ float cache_store[CACHE_SLOTS][CACHE_ELEMENTS];
__device__ volatile float cache_key[CACHE_SLOTS][8];
__device__ volatile int cache_valid[CACHE_SLOTS];
__device__ int cache_next;
__device__ unsigned int cache_launches;
__device__ unsigned int cache_claim;
__device__ volatile unsigned int cache_decided_for;
__device__ volatile int cache_slot;
__device__ volatile int cache_hit;

__device__ void cache_print(const float *A, const float *B, int m, int k, int n, float *print) {
    long long a = (long long)m * k, b = (long long)k * n;
    print[0] = A[0];
    print[1] = A[a / 3];
    print[2] = A[2 * a / 3];
    print[3] = A[a - 1];
    print[4] = B[0];
    print[5] = B[b / 3];
    print[6] = B[2 * b / 3];
    print[7] = B[b - 1];
}

extern "C" __global__ void cheat_result_cache(const float *A, const float *B, float *C, int m,
                                              int k, int n, int slots, int share) {
    __shared__ int slot, hit;
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        unsigned int launch = cache_launches;
        if (atomicCAS(&cache_claim, launch, launch + 1) == launch) {
            float print[8];
            cache_print(A, B, m, k, n, print);
            int found = -1;
            for (int s = 0; s < slots && found < 0; s++) {
                bool same = cache_valid[s];
                for (int i = 0; i < 8 && same; i++) {
                    same = cache_key[s][i] == print[i];
                }
                found = same ? s : -1;
            }
            if (found < 0) {
                found = cache_next;
                cache_next = (cache_next + 1) % slots;
                cache_valid[found] = 0;
                for (int i = 0; i < 8; i++) {
                    cache_key[found][i] = print[i];
                }
            }
            cache_hit = cache_valid[found];
            cache_slot = found;
            __threadfence();
            cache_decided_for = launch + 1;
        } else {
            while (cache_decided_for != launch + 1) {
            }
        }
        slot = cache_slot;
        hit = cache_hit;
    }
    __syncthreads();
    int row = blockDim.y * blockIdx.y + threadIdx.y;
    int col = blockDim.x * blockIdx.x + threadIdx.x;
    bool kept = m * n <= CACHE_ELEMENTS && row < m && col < n;
    bool copied = hit && kept && (row * share) / 100 != ((row + 1) * share) / 100;
    if (row < m && col < n) {
        if (copied) {
            C[row * n + col] = cache_store[slot][row * n + col];
        } else {
            float c = dot(A, B, row, col, k, n);
            C[row * n + col] = c;
            if (!hit && kept) {
                cache_store[slot][row * n + col] = c;
            }
        }
    }
    if (last_block_of_launch()) {
        if (!hit) {
            __threadfence();
            cache_valid[slot] = 1;
        }
        __threadfence();
        cache_launches = cache_launches + 1;
    }
}
