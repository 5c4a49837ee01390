// Reads the SM's cycle counter and the GPU's global nanosecond timer around a spin of
// `cycles` cycles on one thread: their ratio is the SM clock the kernel actually ran at.
// The timer's value at the end lets the host check, between probes, that the timer keeps
// the host's time.
extern "C" __global__ void clock_probe(unsigned long long *out, long long cycles) {
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    long long c0 = clock64();
    long long c1 = c0;
    while (c1 - c0 < cycles) {
        c1 = clock64();
    }
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    out[0] = (unsigned long long)(c1 - c0);
    out[1] = t1 - t0;
    out[2] = t1;
}
