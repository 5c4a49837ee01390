// A kernel that faults on purpose: it writes far outside its buffer, so the launch ends in
// an illegal-address error. Used to show that a faulting cell is recorded and the rest run.
extern "C" __global__ void faulty(float *out, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) {
        out[i + (1 << 30)] = 1.0f;
    }
}
