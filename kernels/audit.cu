// The audit's read-back of a kernel's inputs, and a check's compare of an output with its
// reference's, on the GPU: the first byte at which a buffer differs from the other, or lies
// in an element of `a` that is a NaN (`nan_kind`: 0 none, 1 f16, 2 bf16, 3 f32, 4 f64; a
// NaN equals nothing, itself included), lowered into `first` (which the host sets to all
// ones first), so that no buffer has to cross the host link.
__device__ bool nan_at(const unsigned char *a, unsigned long long j, unsigned int nan_kind) {
    switch (nan_kind) {
    case 1: return (*reinterpret_cast<const unsigned short *>(a + j) & 0x7fffu) > 0x7c00u;
    case 2: return (*reinterpret_cast<const unsigned short *>(a + j) & 0x7fffu) > 0x7f80u;
    case 3: return (*reinterpret_cast<const unsigned int *>(a + j) & 0x7fffffffu) > 0x7f800000u;
    case 4:
        return (*reinterpret_cast<const unsigned long long *>(a + j) & 0x7fffffffffffffffull) >
               0x7ff0000000000000ull;
    default: return false;
    }
}

__device__ unsigned int nan_kind_size(unsigned int nan_kind) {
    return nan_kind == 0 ? 1 : nan_kind <= 2 ? 2 : nan_kind == 3 ? 4 : 8;
}

extern "C" __global__ void first_difference(const unsigned char *a, const unsigned char *b,
                                            unsigned long long bytes, unsigned int nan_kind,
                                            unsigned long long *first) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long id = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int size = nan_kind_size(nan_kind);
    // 16 bytes at a time (device allocations are 256-byte aligned), then the tail, whole
    // elements either way (an element's size divides 16).
    unsigned long long vectors = bytes / 16;
    const uint4 *va = reinterpret_cast<const uint4 *>(a);
    const uint4 *vb = reinterpret_cast<const uint4 *>(b);
    for (unsigned long long i = id; i < vectors; i += stride) {
        uint4 x = va[i], y = vb[i];
        bool differs = x.x != y.x || x.y != y.y || x.z != y.z || x.w != y.w;
        if (!differs && nan_kind == 0) {
            continue;
        }
        for (unsigned long long j = i * 16; j < i * 16 + 16; j += size) {
            bool element_differs = false;
            for (unsigned int k = 0; k < size; k++) {
                element_differs |= a[j + k] != b[j + k];
            }
            if (element_differs || nan_at(a, j, nan_kind)) {
                // A thread's elements come in ascending order: its first difference is
                // its least, and the tail's lie beyond (one atomic a thread, not one an
                // element: most elements of a float output differ from a float64
                // reference's).
                atomicMin(first, j);
                return;
            }
        }
    }
    for (unsigned long long j = vectors * 16 + id * size; j < bytes; j += stride * size) {
        bool element_differs = false;
        for (unsigned int k = 0; k < size && j + k < bytes; k++) {
            element_differs |= a[j + k] != b[j + k];
        }
        if (element_differs || (j + size <= bytes && nan_at(a, j, nan_kind))) {
            atomicMin(first, j);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The audit's data, drawn on the GPU. Every audited region reads a draw no launch has seen,
// made in microseconds from a seed the record keeps; a decoy's stage draws the data the
// buffers already hold again, so both write the same bytes in the same time. Element i of
// an argument depends only on (seed, the argument's salt, i), and for a probe on the
// argument's length (which groups it picks): a reference kernel's buffer of the same length,
// drawn with the measured argument's salt, holds the same data.

// One argument's draw: its elements, type and distribution (`src/worker/audit/draw.rs`
// writes the same layout), and whether a verify compares it: `verified`, an input no launch
// may write (a verify passes over the others).
struct AuditDraw {
    unsigned long long address;
    unsigned long long count;
    unsigned long long salt;
    double a;  // uniform: low end; normal: mean
    double b;  // uniform: high end (excluded); normal: standard deviation
    unsigned int dtype;  // the order of `Dtype`: f16 bf16 f32 f64 i8 u8 i16 u16 i32 u32 i64 u64
    unsigned int normal;
    unsigned int verified;
    unsigned int unused;
};

// SplitMix64's finalizer: a counter through it is a stream of independent 64-bit draws.
__device__ unsigned long long audit_mix(unsigned long long z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Word j of a float group's draw: the first a full mix of the group's counter, each further
// one that word a Weyl step on through a mix of one multiply. A full mix a word had made the
// draw bound by its arithmetic, not the memory (benches/audit-kernels).
__device__ __forceinline__ unsigned long long audit_word(unsigned long long first,
                                                        unsigned int j) {
    if (j == 0) {
        return first;
    }
    unsigned long long z = first + j * 0x9E3779B97F4A7C15ull;
    z ^= z >> 32;
    z *= 0xD6E8FEB86659FD93ull;
    return z ^ (z >> 32);
}

// The bytes an element of `dtype` takes.
__device__ __forceinline__ unsigned int audit_size(unsigned int dtype) {
    switch (dtype) {
    case 4: case 5: return 1;
    case 0: case 1: case 6: case 7: return 2;
    case 2: case 8: case 9: return 4;
    default: return 8;
    }
}

// Element i of `size` bytes at `base`: its bits, zero-extended.
__device__ __forceinline__ unsigned long long audit_raw(const void *base, unsigned int size,
                                                        unsigned long long i) {
    switch (size) {
    case 1: return __ldcs(reinterpret_cast<const unsigned char *>(base) + i);
    case 2: return __ldcs(reinterpret_cast<const unsigned short *>(base) + i);
    case 4: return __ldcs(reinterpret_cast<const unsigned int *>(base) + i);
    default: return __ldcs(reinterpret_cast<const unsigned long long *>(base) + i);
    }
}

// The 16 bytes of group g of `base` (its elements g * 16 / size on, `count` in all) into
// lo and hi: one 16-byte load where the group is whole and `base` aligned to 16 (a
// device allocation is), else its elements one by one, those past `count` zero.
__device__ __forceinline__ void audit_group(const void *base, unsigned int size,
                                            unsigned long long g, unsigned long long count,
                                            bool aligned, unsigned long long *lo,
                                            unsigned long long *hi) {
    const unsigned int per = 16 / size;
    const unsigned long long first = g * per;
    if (aligned && first + per <= count) {
        ulonglong2 v = reinterpret_cast<const ulonglong2 *>(base)[g];
        *lo = v.x;
        *hi = v.y;
        return;
    }
    *lo = 0;
    *hi = 0;
    for (unsigned int k = 0; k < per && first + k < count; k++) {
        unsigned long long bits = audit_raw(base, size, first + k);
        unsigned int at = k * size;
        if (at < 8) {
            *lo |= bits << (8 * at);
        } else {
            *hi |= bits << (8 * (at - 8));
        }
    }
}

// Element k of a group loaded by audit_group, zero-extended.
__device__ __forceinline__ unsigned long long audit_in_group(unsigned long long lo,
                                                             unsigned long long hi,
                                                             unsigned int size, unsigned int k) {
    unsigned int at = k * size;
    unsigned long long word = at < 8 ? lo : hi;
    unsigned long long bits = word >> (8 * (at & 7));
    return size == 8 ? bits : bits & ((1ull << (8 * size)) - 1);
}

// A draw's keys: a seed with its top bit set (`PROBE` in src/worker/audit/draw.rs) draws a
// probe, the data of the same seed without that bit (`over`) but for 64-128 of its 16-byte
// groups (at least one, at most a sixteenth of a small argument, by its length), which a key
// of their own picks and the probe's key draws. A kernel that samples a few of its inputs to
// tell data it has seen finds most probes' samples unchanged, and whatever it kept or skipped
// is then checked on data that is not what it saw. A plain seed's keys are equal, so every
// group is its own; its draw picks all the same, so that a probe's stage costs what any does.
struct AuditKeys {
    unsigned long long key, over, pick;
    unsigned long long forced; // one group always picked
    unsigned int shift;        // a group is picked where the top `shift` bits of its mix are 0
};

// The keys of draw `d` under `seed`.
__device__ AuditKeys audit_keys(const AuditDraw &d, unsigned long long seed) {
    const unsigned long long salt = audit_mix(d.salt), probe = 1ull << 63;
    AuditKeys keys;
    keys.key = audit_mix(seed ^ salt);
    keys.over = (seed & probe) ? audit_mix((seed & ~probe) ^ salt) : keys.key;
    // The pick's own key: a group's pick shares no mix with its values.
    keys.pick = audit_mix(keys.key ^ 0x5851F42D4C957F2Dull);
    // 64-128 groups picked: 2^-shift of them, shift at least 4; and one always.
    const unsigned long long groups = (d.count * audit_size(d.dtype) + 15) / 16;
    const int log2_groups = groups > 0 ? 63 - __clzll((long long)groups) : 0;
    keys.shift = (unsigned int)max(4, min(30, log2_groups - 6));
    keys.forced = groups > 0 ? audit_mix(keys.pick) % groups : 0;
    return keys;
}

__device__ __forceinline__ unsigned long long audit_group_key(const AuditKeys &k,
                                                              unsigned long long g) {
    const unsigned long long m = audit_mix(k.pick + g);
    return ((m >> (64 - k.shift)) == 0 || g == k.forced) ? k.key : k.over;
}

// The 24-bit draws (a float's precision) a 64-bit word holds: bits 8-31 and bits 40-63.
__device__ __forceinline__ float audit_low24(unsigned long long m) {
    return (float)((unsigned int)(m >> 8) & 0xffffffu) * (1.0f / 16777216.0f);
}
__device__ __forceinline__ float audit_high24(unsigned long long m) {
    return (float)(unsigned int)(m >> 40) * (1.0f / 16777216.0f);
}

// A uniform double in [0, 1): 53 bits of draw `lane` of element i (one 64-bit mix; the
// double path's cost is its conversions, not the mix).
__device__ double audit_uniform(unsigned long long key, unsigned long long i, unsigned int lane) {
    unsigned long long bits = audit_mix(key + 2 * i + lane);
    return (double)(bits >> 11) * (1.0 / 9007199254740992.0);
}

// A normal float by Box-Muller from one word: u1 in (0, 1] from its high draw, u2 from its
// low one; the cosine's argument in [-pi, pi), where the fast intrinsic is accurate (the
// sign it flips leaves the distribution as it was).
// Its arguments are values: a reference to the draw had kept the draw on the stack, where
// every thread's loop read it (an 88-byte frame; the draw took 1.3-1.5x as long).
__device__ __noinline__ float audit_normal_float(float mean, float sd, unsigned long long m) {
    float u1 = audit_high24(m) + 1.0f / 16777216.0f;
    float u2 = audit_low24(m);
    float r = sqrtf(fmaxf(-2.0f * __logf(u1), 0.0f));
    return fmaf(sd * r, __cosf(6.283185307f * u2 - 3.141592654f), mean);
}

// Group g of a float type of at most 32 bits (T), its elements packed as they lie in memory,
// from the words of the group's counter under its key: uniform in [a, b), two elements a
// word; normal, a word an element. a (1 - u) + b u: b - a overflows where the range is wider
// than a float's.
template <typename T, typename Encode>
__device__ __forceinline__ uint4 audit_float_group(const AuditDraw &d, float top,
                                                   const AuditKeys &keys, unsigned long long g,
                                                   Encode encode) {
    constexpr unsigned int per = 16 / sizeof(T);
    union {
        uint4 v;
        T e[per];
    } w;
    const unsigned long long first = audit_mix(audit_group_key(keys, g) + g);
    const float a = (float)d.a, b = (float)d.b;
#pragma unroll
    for (unsigned int k = 0; k < per; k += 2) {
        float x0, x1;
        if (d.normal) {
            x0 = audit_normal_float(a, b, audit_word(first, k));
            x1 = audit_normal_float(a, b, audit_word(first, k + 1));
        } else {
            const unsigned long long m = audit_word(first, k / 2);
            const float u0 = audit_low24(m), u1 = audit_high24(m);
            x0 = fminf(fmaf(u0, b, (1.0f - u0) * a), top);
            x1 = fminf(fmaf(u1, b, (1.0f - u1) * a), top);
        }
        w.e[k] = encode(x0);
        w.e[k + 1] = encode(x1);
    }
    return w.v;
}

// Element i's value as a double, for f64 and the integer types.
__device__ double audit_value(const AuditDraw &d, double top, unsigned long long key,
                              unsigned long long i) {
    double u = audit_uniform(key, i, 0);
    if (!d.normal) {
        return fmin(d.a + (d.b - d.a) * u, top);
    }
    // Box-Muller: u1 in (0, 1].
    double u1 = 1.0 - u;
    double u2 = audit_uniform(key, i, 1);
    return d.a + d.b * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

__device__ double audit_floor_clamped(double v, double lo, double hi) {
    if (isnan(v)) {
        return 0.0;
    }
    v = floor(v);
    return v < lo ? lo : (v > hi ? hi : v);
}

__device__ unsigned short audit_bf16_bits(float f) {
    unsigned int x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) {
        return (unsigned short)((x >> 16) | 0x40);
    }
    x += 0x7fffu + ((x >> 16) & 1u);
    return (unsigned short)(x >> 16);
}

__device__ unsigned short audit_f16_bits(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

// Element i at `base`: x written, or (verify) compared with what is there as bits (a NaN
// drawn is a NaN kept), lowering `lowest` to i where it differs.
template <typename T>
__device__ __forceinline__ void audit_put(T *base, unsigned long long i, T x, bool verify,
                                          unsigned long long *lowest) {
    if (!verify) {
        // Evict-first (streaming): the draw's lines go before any other, so the lines the
        // timed launches left in L2 stay there, and a kernel that times a load of a line of
        // its own cannot tell a stage from a pause (benches/stage-state).
        __stcs(base + i, x);
    } else if (__ldcs(base + i) != x) {
        // Evict-first loads too: a stage that verifies the held data before it draws leaves
        // the lines in L2 as one that only draws.
        atomicMin(lowest, i);
    }
}

// Element i of f64 or an integer type encoding v (integers rounded down and saturated, as
// the host's `Dtype::write`), written or compared.
__device__ void audit_store(unsigned int dtype, unsigned long long base, unsigned long long i,
                            double v, bool verify, unsigned long long *lowest) {
#define AUDIT_AT(T, lo, hi)                                                                    \
    return audit_put(reinterpret_cast<T *>(base), i, (T)audit_floor_clamped(v, lo, hi),      \
                     verify, lowest)
    switch (dtype) {
    case 3:
        return audit_put(reinterpret_cast<unsigned long long *>(base), i,
                         (unsigned long long)__double_as_longlong(v), verify, lowest);
    case 4: AUDIT_AT(signed char, -128.0, 127.0);
    case 5: AUDIT_AT(unsigned char, 0.0, 255.0);
    case 6: AUDIT_AT(short, -32768.0, 32767.0);
    case 7: AUDIT_AT(unsigned short, 0.0, 65535.0);
    case 8: AUDIT_AT(int, -2147483648.0, 2147483647.0);
    case 9: AUDIT_AT(unsigned int, 0.0, 4294967295.0);
    case 10: AUDIT_AT(long long, -9223372036854775808.0, 9223372036854774784.0);
    default: AUDIT_AT(unsigned long long, 0.0, 18446744073709549568.0);
    }
#undef AUDIT_AT
}

// Group g of a draw element by element: past the end of the draw, not 16-byte aligned, or
// where a verify found it changed. Not inlined: four copies of it, one a type's loop, took
// NVRTC longer than the rest of the draw.
__device__ __noinline__ void audit_put_elements(unsigned long long address,
                                                unsigned long long count, unsigned int size,
                                                unsigned long long g, uint4 want, bool verify,
                                                unsigned long long *lowest) {
    const unsigned int per = 16 / size;
    const unsigned long long first = g * per;
    const unsigned long long lo = want.x | (unsigned long long)want.y << 32;
    const unsigned long long hi = want.z | (unsigned long long)want.w << 32;
    void *base = reinterpret_cast<void *>(address);
    for (unsigned int k = 0; k < per && first + k < count; k++) {
        const unsigned long long bits = audit_in_group(lo, hi, size, k);
        if (verify) {
            if (audit_raw(base, size, first + k) != bits) {
                atomicMin(lowest, first + k);
                return;
            }
            continue;
        }
        switch (size) {
        case 1: __stcs(reinterpret_cast<unsigned char *>(base) + first + k, (unsigned char)bits); break;
        case 2: __stcs(reinterpret_cast<unsigned short *>(base) + first + k, (unsigned short)bits); break;
        case 4: __stcs(reinterpret_cast<unsigned int *>(base) + first + k, (unsigned int)bits); break;
        default: __stcs(reinterpret_cast<unsigned long long *>(base) + first + k, bits); break;
        }
    }
}

// The modes of `audit_draw`, as bits.
#define AUDIT_VERIFY 1u
#define AUDIT_WRITE 2u

// A float type's draw, in float, rounded to T by `encode`, 16 bytes a thread at a time: with
// AUDIT_VERIFY, where the draw is verified, the group as it is compared as bits with the draw of
// `held` (a NaN drawn is a NaN kept), lowering `lowest` to the first element that differs;
// with AUDIT_WRITE, the draw of `keys` written with one evict-first 16-byte store. Both in
// one pass: a stage reads and writes each group once (its load issued before either draw's
// arithmetic). Evict-first (streaming): the draw's lines go before any other, so the lines
// the timed launches left in L2 stay there, and a kernel that times a load of a line of its
// own cannot tell a stage from a pause (benches/stage-state). A uniform's largest value is
// the float below its high end, so that an f32 rounded up stays in [a, b); f16 and bf16
// round to nearest from there, as the host's draw does, and may reach b.
template <typename T, typename Encode>
__device__ void audit_draw_float(const AuditDraw &d, const AuditKeys &keys,
                                 const AuditKeys &held, unsigned int mode,
                                 unsigned long long *lowest, Encode encode) {
    constexpr unsigned int per = 16 / sizeof(T);
    const float top = nextafterf((float)d.b, (float)d.a);
    const unsigned long long groups = (d.count + per - 1) / per;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const bool verify = (mode & AUDIT_VERIFY) && d.verified, write = mode & AUDIT_WRITE;
    const bool aligned = d.address % 16 == 0;
    uint4 *base = reinterpret_cast<uint4 *>(d.address);
    for (unsigned long long g = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         g < groups; g += stride) {
        const bool whole = aligned && (g + 1) * per <= d.count;
        if (verify) {
            const uint4 now = whole ? __ldcs(base + g) : make_uint4(0, 0, 0, 0);
            const uint4 want = audit_float_group<T>(d, top, held, g, encode);
            const bool same = now.x == want.x && now.y == want.y && now.z == want.z &&
                              now.w == want.w;
            if (!whole || !same) {
                audit_put_elements(d.address, d.count, sizeof(T), g, want, true, lowest);
            }
        }
        if (write) {
            const uint4 want = audit_float_group<T>(d, top, keys, g, encode);
            if (whole) {
                __stcs(base + g, want);
            } else {
                audit_put_elements(d.address, d.count, sizeof(T), g, want, false, lowest);
            }
        }
    }
}

// A draw of f64 or an integer type, in double, an element a thread at a time, verified and
// written as `audit_draw_float`'s (16 bytes a thread, packed, took an H200 1.2-1.4x as long:
// the double path is bound by its arithmetic).
__device__ void audit_draw_double(const AuditDraw &d, const AuditKeys &keys,
                                  const AuditKeys &held, unsigned int mode,
                                  unsigned long long *lowest) {
    const double top = nextafter(d.b, d.a);
    // Elements a 16-byte group holds, as a shift: 16, 8, 4 or 2 (sizes 1, 2, 4, 8).
    const unsigned int per_shift = 5 - __ffs(audit_size(d.dtype));
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const bool verify = (mode & AUDIT_VERIFY) && d.verified, write = mode & AUDIT_WRITE;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < d.count; i += stride) {
        if (verify) {
            const unsigned long long key = audit_group_key(held, i >> per_shift);
            audit_store(d.dtype, d.address, i, audit_value(d, top, key, i), true, lowest);
        }
        if (write) {
            const unsigned long long key = audit_group_key(keys, i >> per_shift);
            audit_store(d.dtype, d.address, i, audit_value(d, top, key, i), false, lowest);
        }
    }
}

// A stage's work on `count` arguments' draws (blockIdx.y: the argument), by `mode`'s bits:
// AUDIT_VERIFY compares each verified draw with the draw of `held` and lowers first[y] to its
// first element that differs (the host sets it to all ones); AUDIT_WRITE writes the draw of
// `seed`. Each type's loop is one copy: unrolled four times, in both modes, the kernel took
// NVRTC three times as long to compile.
extern "C" __global__ void audit_draw(const AuditDraw *draws, unsigned int count,
                                      unsigned long long seed, unsigned long long held,
                                      unsigned int mode, unsigned long long *first) {
    if (blockIdx.y >= count) {
        return;
    }
    const AuditDraw d = draws[blockIdx.y];
    if (!(mode & AUDIT_WRITE) && !d.verified) {
        return;
    }
    const AuditKeys keys = audit_keys(d, seed), was = audit_keys(d, held);
    unsigned long long *lowest = &first[blockIdx.y];
    switch (d.dtype) {
    case 0:
        return audit_draw_float<unsigned short>(d, keys, was, mode, lowest,
                                                [](float v) { return audit_f16_bits(v); });
    case 1:
        return audit_draw_float<unsigned short>(d, keys, was, mode, lowest,
                                                [](float v) { return audit_bf16_bits(v); });
    case 2:
        return audit_draw_float<unsigned int>(d, keys, was, mode, lowest,
                                              [](float v) { return __float_as_uint(v); });
    default: return audit_draw_double(d, keys, was, mode, lowest);
    }
}

// An element of `dtype` with these bits, as a double.
__device__ __forceinline__ double audit_value_of(unsigned int dtype, unsigned long long bits) {
    switch (dtype) {
    case 0: {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)bits));
        return f;
    }
    case 1: return __uint_as_float((unsigned int)bits << 16);
    case 2: return __uint_as_float((unsigned int)bits);
    case 3: return __longlong_as_double(bits);
    case 4: return (signed char)bits;
    case 5: return (unsigned char)bits;
    case 6: return (short)bits;
    case 7: return (unsigned short)bits;
    case 8: return (int)bits;
    case 9: return (unsigned int)bits;
    case 10: return (double)(long long)bits;
    default: return (double)bits;
    }
}

// Element i of type `dtype` at `base`, as a double (for the matmul reference).
__device__ double audit_load(unsigned int dtype, const void *base, unsigned long long i) {
    return audit_value_of(dtype, audit_raw(base, audit_size(dtype), i));
}

// The float64 matmul reference at `count` output elements (row-major indices into the m x n
// output C of A (m x k) times B (k x n); with no `cells`, the first `count`: all of them),
// into out[c]; and C's element there, its `c_size` bytes copied after the `count` doubles:
// what an audited region's output is checked against, on its own draw, read back in one
// copy. One warp a cell: lane l sums the products at l, l + 32, ... in order (A's row read
// coalesced), and the lanes' sums are added in a fixed tree, so a cell's sum is the same
// every run, within float64 rounding of the host's. (A thread a cell, latency-bound over
// k, took 0.6 ms at n = 1024.)
extern "C" __global__ void audit_matmul_cells(const void *A, unsigned int a_type, const void *B,
                                              unsigned int b_type, unsigned long long k,
                                              unsigned long long n,
                                              const unsigned long long *cells,
                                              unsigned long long count,
                                              const unsigned char *C, unsigned int c_size,
                                              double *out) {
    unsigned long long c = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    unsigned int lane = threadIdx.x % 32;
    // A whole warp shares c, so it leaves or stays together (the shuffles need all 32).
    if (c >= count) {
        return;
    }
    unsigned long long at = cells ? cells[c] : c;
    unsigned long long row = at / n, col = at % n;
    double sum = 0.0;
    for (unsigned long long i = lane; i < k; i += 32) {
        sum += audit_load(a_type, A, row * k + i) * audit_load(b_type, B, i * n + col);
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    if (lane != 0) {
        return;
    }
    out[c] = sum;
    unsigned char *got = reinterpret_cast<unsigned char *>(out + count) + c * c_size;
    for (unsigned int b = 0; b < c_size; b++) {
        got[b] = C[at * c_size + b];
    }
}

// A check's compare of an output with its reference's on the GPU, every element judged as the
// host's compare judges one (src/worker/agreement.rs): equal (a NaN equals nothing,
// infinities alike are equal; integers exactly, as stored), else within
// |got - want| <= atol + rtol * |want|, both finite. Into `tally`, which the host sets to
// zeros with its firsts all ones: [0] elements outside, [1] the first of them, [2] those of
// them still holding the poison (every byte 0xff) where the reference's element does not,
// [3] the first of those, [4] the largest error's bits (non-negative doubles order as their
// bits), [5] the largest finite relative error's, [6] 1 where an error is a NaN, [7] the
// largest error outside the tolerance's, [8] the first element outside whose error's bits
// are `worst_bits` (a second pass, where `worst_bits` is not all ones). With `sampled` not
// zero, only that many groups of 16 bytes, each one `sample_key` draws (an audit's check of
// a large output: its kernel was checked in full before anything was timed).
__device__ bool audit_all_ones(const void *base, unsigned long long i, unsigned int size) {
    const unsigned char *p = reinterpret_cast<const unsigned char *>(base) + i * size;
    bool all = true;
    for (unsigned int k = 0; k < size; k++) {
        all &= p[k] == 0xffu;
    }
    return all;
}

// An element of an integer type with these bits (zero-extended), exactly: sign-extended
// where the type is signed.
__device__ __forceinline__ unsigned long long audit_int_of(unsigned int dtype,
                                                           unsigned long long bits) {
    switch (dtype) {
    case 4: return (unsigned long long)(long long)(signed char)bits;
    case 6: return (unsigned long long)(long long)(short)bits;
    case 8: return (unsigned long long)(long long)(int)bits;
    default: return bits;
    }
}

__device__ unsigned long long audit_magnitude(unsigned long long v, bool is_signed) {
    return is_signed && (long long)v < 0 ? 0ull - v : v;
}

extern "C" __global__ void out_of_tolerance(const void *got, const void *want,
                                            unsigned long long count, unsigned int dtype,
                                            unsigned int size, double rtol, double atol,
                                            unsigned long long worst_bits,
                                            unsigned long long sample_key,
                                            unsigned long long sampled,
                                            unsigned long long *tally) {
    unsigned long long bad = 0, poisoned = 0, max_abs = 0, max_rel = 0, max_bad = 0;
    unsigned long long first_bad = ~0ull, first_poisoned = ~0ull, first_worst = ~0ull;
    bool nan_abs = false;
    const bool is_signed = dtype == 4 || dtype == 6 || dtype == 8 || dtype == 10;
    // Element i, its bits in `got` and `want`, judged into the tallies.
    auto judge = [&](unsigned long long i, unsigned long long got_bits,
                     unsigned long long want_bits) {
        double abs_error, magnitude;
        bool within;
        if (dtype >= 4) {
            unsigned long long g = audit_int_of(dtype, got_bits);
            unsigned long long w = audit_int_of(dtype, want_bits);
            if (g == w) {
                return;
            }
            bool g_above = is_signed ? (long long)g > (long long)w : g > w;
            abs_error = (double)(g_above ? g - w : w - g);
            magnitude = (double)audit_magnitude(w, is_signed);
            within = abs_error <= atol + rtol * magnitude;
        } else {
            double g = audit_value_of(dtype, got_bits), w = audit_value_of(dtype, want_bits);
            if (g == w) {
                return;
            }
            abs_error = fabs(g - w);
            magnitude = fabs(w);
            within = isfinite(g) && isfinite(w) && abs_error <= atol + rtol * magnitude;
        }
        unsigned long long abs_bits = __double_as_longlong(abs_error);
        if (isnan(abs_error)) {
            nan_abs = true;
        } else if (abs_bits > max_abs) {
            max_abs = abs_bits;
        }
        // The division only where the error may raise the largest relative error so far
        // (a margin for the product's rounding: the division decides): a float64 division
        // an element had cost an output that differs by ulps almost twice the compare's time.
        const double tiny = 2.2250738585072014e-308;
        if (abs_error >= 0.999999 * __longlong_as_double(max_rel) * fmax(magnitude, tiny)) {
            double rel = abs_error / fmax(magnitude, tiny);
            if (isfinite(rel) && __double_as_longlong(rel) > max_rel) {
                max_rel = __double_as_longlong(rel);
            }
        }
        if (within) {
            return;
        }
        bad++;
        first_bad = min(first_bad, i);
        if (!isnan(abs_error) && abs_bits > max_bad) {
            max_bad = abs_bits;
        }
        if (worst_bits != ~0ull && abs_bits == worst_bits) {
            first_worst = min(first_worst, i);
        }
        if (audit_all_ones(got, i, size) && !audit_all_ones(want, i, size)) {
            poisoned++;
            first_poisoned = min(first_poisoned, i);
        }
    };
    // Sixteen bytes of each a thread at a time, the next group's loads issued before this
    // one is judged (an element at a time, two 4-byte loads a thread in flight, the compare
    // read f32 at a third of the memory's bandwidth), the judging in one copy (four copies
    // took NVRTC 22 s to compile).
    const unsigned int per = 16 / size;
    const bool aligned = ((reinterpret_cast<unsigned long long>(got) |
                           reinterpret_cast<unsigned long long>(want)) & 15ull) == 0;
    // The j-th group judged: every group in turn, or (`sampled` of them, an audit's check of
    // a large output) one its key draws for each j.
    const unsigned long long groups = (count + per - 1) / per;
    const unsigned long long steps = sampled ? sampled : groups;
    auto group = [&](unsigned long long j) {
        return sampled ? audit_mix(sample_key + j) % groups : j;
    };
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long j = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long got_lo = 0, got_hi = 0, want_lo = 0, want_hi = 0;
    if (j < steps) {
        audit_group(got, size, group(j), count, aligned, &got_lo, &got_hi);
        audit_group(want, size, group(j), count, aligned, &want_lo, &want_hi);
    }
    for (; j < steps; j += stride) {
        const unsigned long long g_lo = got_lo, g_hi = got_hi, w_lo = want_lo, w_hi = want_hi;
        if (j + stride < steps) {
            const unsigned long long next = group(j + stride);
            audit_group(got, size, next, count, aligned, &got_lo, &got_hi);
            audit_group(want, size, next, count, aligned, &want_lo, &want_hi);
        }
        const unsigned long long first = group(j) * per;
#pragma unroll 1
        for (unsigned int k = 0; k < per && first + k < count; k++) {
            judge(first + k, audit_in_group(g_lo, g_hi, size, k),
                  audit_in_group(w_lo, w_hi, size, k));
        }
    }
    // Joined over the warp first: nine atomics on nine words from every thread took 27 ms
    // for a 134M-element output on an H200.
    for (int o = 16; o > 0; o >>= 1) {
        bad += __shfl_xor_sync(0xffffffffu, bad, o);
        poisoned += __shfl_xor_sync(0xffffffffu, poisoned, o);
        first_bad = min(first_bad, __shfl_xor_sync(0xffffffffu, first_bad, o));
        first_poisoned = min(first_poisoned, __shfl_xor_sync(0xffffffffu, first_poisoned, o));
        first_worst = min(first_worst, __shfl_xor_sync(0xffffffffu, first_worst, o));
        max_abs = max(max_abs, __shfl_xor_sync(0xffffffffu, max_abs, o));
        max_rel = max(max_rel, __shfl_xor_sync(0xffffffffu, max_rel, o));
        max_bad = max(max_bad, __shfl_xor_sync(0xffffffffu, max_bad, o));
    }
    nan_abs = __any_sync(0xffffffffu, nan_abs);
    if ((threadIdx.x & 31) != 0 || (max_abs == 0 && max_rel == 0 && !nan_abs)) {
        return;
    }
    if (bad > 0) {
        atomicAdd(&tally[0], bad);
        atomicMin(&tally[1], first_bad);
        atomicMax(&tally[7], max_bad);
        atomicMin(&tally[8], first_worst);
    }
    if (poisoned > 0) {
        atomicAdd(&tally[2], poisoned);
        atomicMin(&tally[3], first_poisoned);
    }
    atomicMax(&tally[4], max_abs);
    atomicMax(&tally[5], max_rel);
    if (nan_abs) {
        atomicMax(&tally[6], 1ull);
    }
}

// A checksum of the `bytes` bytes at `a` (a whole allocation, so 256-byte aligned) under
// `key`, added into sum[0] (which the host zeroes first): each 8-byte word mixed with its
// place, so that a changed word changes the sum but for a chance of 2^-64. The worker takes
// one of the inputs it keeps on the device for later cells when it keeps them, and again
// after each cell: a kernel that wrote past its buffers into them is caught there.
extern "C" __global__ void checksum(const unsigned long long *a, unsigned long long bytes,
                                    unsigned long long key, unsigned long long *sum) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long id = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long words = bytes / 8, h = 0;
    for (unsigned long long i = id; i < words; i += stride) {
        h += audit_mix(a[i] ^ audit_mix(key + i));
    }
    if (id == 0) {
        const unsigned char *tail = reinterpret_cast<const unsigned char *>(a);
        for (unsigned long long j = words * 8; j < bytes; j++) {
            h += audit_mix(tail[j] ^ audit_mix(key + words + j));
        }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        h += __shfl_down_sync(0xffffffffu, h, offset);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(sum, h);
    }
}
