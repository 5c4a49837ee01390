// The empty kernel: what a timer reads when the GPU has nothing to do, and a warm-up that
// touches neither memory nor caches.
extern "C" __global__ void empty() {}
