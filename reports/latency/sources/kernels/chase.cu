// A pointer chase: one thread follows the chain `steps` times, each load waiting for the one
// before, so the time per step is the latency of wherever the chain's working set lives.
extern "C" __global__ void chase(const unsigned int* next, unsigned int* out, unsigned long long steps) {
    unsigned int at = 0;
    for (unsigned long long s = 0; s < steps; ++s) at = next[at];
    out[0] = at;
}
