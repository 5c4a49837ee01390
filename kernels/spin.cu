// Spins the calling thread on the GPU's global timer for `ns` nanoseconds.
__device__ void spin_ns(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

// Spins one thread for `ns` nanoseconds, then writes 1 to out[0]: a kernel whose duration is
// set from the host, used as a stand-in for a hung kernel.
extern "C" __global__ void spin(float *out, unsigned long long ns) {
    spin_ns(ns);
    out[0] = 1.0f;
}

// A pause's stage on the GPU: one thread spins `ns` and writes nothing, as long as a staged
// region's verify and draw take, so that the GPU idles as long before a pause's region as
// before a staged one's (a pause that ran nothing left it idle through its whole wait), on one
// SM, touching no memory.
extern "C" __global__ void audit_hold(unsigned long long ns) { spin_ns(ns); }

// Spins one thread until the host has written `ticket` or more into `flag` (page-locked host
// memory mapped for the device), or `timeout_ns` have passed, which it counts in
// `timed_out[0]`: NVBench's blocking kernel. The timed region queues behind it, and the host
// releases it once the region is enqueued, so the region starts on a full queue without a
// wait sized in advance.
extern "C" __global__ void wait_for_host(const volatile unsigned long long *flag,
                                         unsigned long long ticket,
                                         unsigned long long timeout_ns,
                                         unsigned int *timed_out) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (*flag < ticket) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start >= timeout_ns) {
            atomicAdd(timed_out, 1u);
            return;
        }
    }
}
