// Seed 004's cuda-incore: ILP independent dependency chains of one double-precision
// operation per thread, `iters` steps each, on one block of `warps` warps (one SM).
// Compiled with -DILP=<1..8> and -DOP_FMA, -DOP_DIV or -DOP_SQRT.
#if defined(OP_FMA)
#define STEP(v) v = fma(v, 0.9999, 0.0001)
#elif defined(OP_DIV)
#define STEP(v) v = 1.0001 / v
#elif defined(OP_SQRT)
#define STEP(v) v = sqrt(v)
#else
#error "compile with -DOP_FMA, -DOP_DIV or -DOP_SQRT"
#endif

extern "C" __global__ void incore(double* sink, double seed, int iters) {
    double v[ILP];
#pragma unroll
    for (int k = 0; k < ILP; k++) v[k] = seed + threadIdx.x + k;
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int k = 0; k < ILP; k++) STEP(v[k]);
    }
    double s = 0.0;
#pragma unroll
    for (int k = 0; k < ILP; k++) s += v[k];
    if (s == -1.5) sink[0] = s;
}
