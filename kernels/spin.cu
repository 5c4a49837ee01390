// Spins one thread on the GPU's global timer for `ns` nanoseconds, then writes 1 to out[0]:
// a kernel whose duration is set from the host, used as a stand-in for a hung kernel.
extern "C" __global__ void spin(float *out, unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
    out[0] = 1.0f;
}
