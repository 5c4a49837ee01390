"""The runner's own audit kernels (kernels/audit.cu), a candidate against a baseline: the
NVRTC compile of each, the draw (`audit_draw`, written, verified, and a stage's verify of
the held draw and write of another, nine types and distributions of 268 MB) and the check's compare (`out_of_tolerance`, eight cases of 134M
elements). A candidate must read the same as its baseline (the compare's tallies; the draw's
round trip, and its bytes where the generator is the same) and is judged by both its time
and its compile: the worker compiles audit.cu at the first audited cell of every run.

    python benches/audit-kernels/bench.py [--baseline REV|FILE] [--candidate FILE]

REV defaults to HEAD (a machine without the repository's history takes a FILE), FILE to the working tree's kernels/audit.cu. Needs CuPy and a GPU.
"""
import argparse, ctypes, glob, os, statistics, subprocess, time

import numpy as np

ALL_ONES = 2**64 - 1
# The compare's grid as the worker launches it (`GRID` and `BLOCK` in src/method/equal.rs).
COMPARE_GRID = 1024


def load_nvrtc(path):
    """libnvrtc: `path`, else the CUDA toolkit's, else the loader's."""
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    for candidate in [path] if path else glob.glob(f"{home}/lib64/libnvrtc.so*") + ["libnvrtc.so"]:
        try:
            return ctypes.CDLL(candidate)
        except OSError:
            continue
    raise SystemExit("libnvrtc not found: pass --nvrtc PATH")


def compile_ms(lib, source, arch, repeats=3):
    """NVRTC's compile of `source` to a CUBIN for `arch` (sm_90): the median of `repeats`,
    and ptxas's report of each kernel's registers. The worker compiles audit.cu with its
    other built-in kernels (small beside it) and the toolkit's include path."""
    options = [f"--gpu-architecture={arch}".encode(), b"-std=c++17", b"--ptxas-options=-v"]
    argv = (ctypes.c_char_p * len(options))(*options)
    times, log = [], ""
    for _ in range(repeats):
        prog = ctypes.c_void_p()
        assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"audit.cu", 0, None, None) == 0
        start = time.perf_counter()
        rc = lib.nvrtcCompileProgram(prog, len(options), argv)
        times.append((time.perf_counter() - start) * 1e3)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        text = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, text)
        log = text.value.decode()
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        if rc != 0:
            raise SystemExit(f"NVRTC failed ({rc}): {log}")
    lines = log.splitlines()
    entries = [line.split("'")[1] for line in lines if "Compiling entry function" in line]
    used = [line.split("Used")[1].split(",")[0].strip() for line in lines if "Used" in line]
    # A frame of its own: what it keeps on the stack (a struct whose address a call takes).
    frames = {lines[i].split("for ")[-1].strip(): lines[i + 1].split(" bytes stack frame")[0].split()[-1]
              for i in range(len(lines) - 1)
              if "Function properties for" in lines[i] and "stack frame" in lines[i + 1]}
    return statistics.median(times), [f"{e} {u}, {frames.get(e, '?')}-byte stack frame"
                                      for e, u in zip(entries, used)]


def timed_us(launch, repeats=20):
    """A launch's mean time over `repeats` back to back, by events, after one untimed."""
    launch()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeats):
        launch()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / repeats * 1e3


# The draw's table entry: a kernel that verifies in the same pass as it writes (one mode
# argument, `AUDIT_WRITE`) reads a `verified` flag and a word of padding after these.
ENTRY = [("address", "<u8"), ("count", "<u8"), ("salt", "<u8"), ("a", "<f8"), ("b", "<f8"),
         ("dtype", "<u4"), ("normal", "<u4")]
VERIFIED = [("verified", "<u4"), ("unused", "<u4")]
WRITE, VERIFY = 2, 1
# name, the runner's dtype code, element type (None: read as raw bits), normal, a, b
DRAWS = [("f32 uniform", 2, np.float32, 0, -4.0, 4.0), ("f32 normal", 2, np.float32, 1, 0.0, 1.0),
         ("f16 uniform", 0, np.float16, 0, -1.0, 1.0), ("bf16 normal", 1, None, 1, 0.5, 2.0),
         ("f64 uniform", 3, np.float64, 0, 0.0, 1.0), ("f64 normal", 3, np.float64, 1, 0.0, 1.0),
         ("i32 uniform", 8, np.int32, 0, -1000.0, 1000.0), ("u8 uniform", 5, np.uint8, 0, 0.0, 256.0),
         ("i64 uniform", 10, np.int64, 0, -5.0, 5.0)]
SIZES = {0: 2, 1: 2, 2: 4, 3: 8, 5: 1, 8: 4, 10: 8}


class Draw:
    """One module's `audit_draw` over a table of entries (address, count, salt, a, b, dtype,
    normal), every one verified: a write, a verify, and a stage's verify of the held draw and
    write of another (one launch where the kernel takes a mode, else the two)."""

    def __init__(self, module, source, entries):
        self.fn = module.get_function("audit_draw")
        self.one_pass = "AUDIT_WRITE" in source
        table = np.zeros(len(entries), dtype=np.dtype(ENTRY + VERIFIED if self.one_pass else ENTRY))
        for k, e in enumerate(entries):
            table[k] = e + ((1, 0) if self.one_pass else ())
        self.table = cp.asarray(table.view(np.uint8))
        self.count = len(entries)

    def launch(self, grid, mode, seed, held, first):
        if self.one_pass:
            self.fn(grid, (256,), (self.table, np.uint32(self.count), np.uint64(seed),
                                   np.uint64(held), np.uint32(mode), first))
            return
        if mode & VERIFY:
            self.fn(grid, (256,), (self.table, np.uint32(self.count), np.uint64(held), np.uint32(1), first))
        if mode & WRITE:
            self.fn(grid, (256,), (self.table, np.uint32(self.count), np.uint64(seed), np.uint32(0), first))


def neighbours(x, per):
    """The largest correlation of an element with the next one to three, at each place in a
    16-byte group of `per` elements: a group's words share the group's first mix."""
    worst = 0.0
    for lag in (1, 2, 3):
        for k in range(per):
            a, b = x[k::per], x[k + lag::per]
            m = min(len(a), len(b))
            worst = max(worst, abs(float(np.corrcoef(a[:m], b[:m])[0, 1])))
    return worst


def draws(modules, raw):
    first = cp.full(1, ALL_ONES, dtype=cp.uint64)
    grid = (4096, 1)
    for name, code, kind, normal, a, b in DRAWS:
        n = raw.nbytes // SIZES[code]
        entry = (raw.data.ptr, n, 3, a, b, code, normal)
        by = [(label, Draw(module, source, [entry])) for label, module, source in modules]
        row = []
        for label, d in by:
            d.launch(grid, WRITE, 5, 0, first)
            for what, mode, seed in (("", WRITE, 5), ("-verify", VERIFY, 5), ("-stage", VERIFY | WRITE, 5)):
                us = timed_us(lambda: d.launch(grid, mode, seed, 5, first))
                row.append(f"{label}{what} {us:7.1f}")
        (_, baseline), (_, candidate) = by
        baseline.launch(grid, WRITE, 5, 0, first)
        before = raw.copy()
        candidate.launch(grid, WRITE, 5, 0, first)
        row.append("bytes same" if bool((before == raw).all()) else "bytes differ")
        first.fill(ALL_ONES)
        candidate.launch(grid, WRITE, 7, 0, first)
        candidate.launch(grid, VERIFY | WRITE, 8, 7, first)
        candidate.launch(grid, VERIFY, 0, 8, first)
        round_trip = int(first.get()[0]) == ALL_ONES
        first.fill(ALL_ONES)
        candidate.launch(grid, VERIFY, 0, 9, first)
        other = int(first.get()[0])
        row.append(f"verify of its own draws {'finds nothing' if round_trip else 'FINDS A DIFFERENCE'},"
                   f" of another seed's first difference at {other}")
        if kind is not None:
            x = raw.view(kind).get().astype(np.float64)
            row.append(f"min {x.min():.4f} max {x.max():.4f} mean {x.mean():.5f} std {x.std():.5f}"
                       f" NaNs {int(np.isnan(x).sum())} neighbours' largest correlation"
                       f" {neighbours(x[: 1 << 24], 16 // SIZES[code]):.5f}")
        print(f"{name:12s} {raw.nbytes / 1e6:.0f} MB | " + " | ".join(row), flush=True)


def alone_us(launch, repeats=50):
    """A launch's median time from an idle queue, by events around it: as the worker times a
    draw for its stages' pause (`Draws::timed_write`)."""
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeats + 1):
        cp.cuda.Device().synchronize()
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) * 1e3)
    return statistics.median(times[1:])


def small_draws(modules):
    """f32 uniform stages over one to three buffers of 1-16 MiB (the held draw verified and
    another written), each launched alone from an idle queue, an argument per row of blocks of
    256, a thread per 16 bytes (`Entry::threads`), at most 4096 blocks a row: what a cell's
    stage waits for."""
    for mib in (1, 4, 16):
        n = mib * (1 << 20) // 4
        bufs = [cp.empty(n, dtype=cp.float32) for _ in range(3)]
        for count in (1, 2, 3):
            entries = [(bufs[k].data.ptr, n, 3 + k, -4.0, 4.0, 2, 0) for k in range(count)]
            first = cp.full(count, ALL_ONES, dtype=cp.uint64)
            row = []
            for label, module, source in modules:
                d = Draw(module, source, entries)
                d.launch((1, count), WRITE, 9, 0, first)
                grid = (min((n // 4 + 255) // 256, 4096), count)
                us = alone_us(lambda: d.launch(grid, VERIFY | WRITE, 9, 9, first))
                row.append(f"{label} {us:6.1f}")
            print(f"f32 uniform stage {count} x {mib:2d} MiB alone | " + " | ".join(row), flush=True)


def compares(modules, samples):
    n = 32768 * 4096
    rng = cp.random.default_rng(1)
    want64 = rng.uniform(-4, 4, n)
    noise = rng.standard_normal(n)
    want = want64.astype(cp.float32)
    bad = want.copy()
    bad[::1000] = cp.nan
    bad[5::777] += 1
    i32 = (want64 * 1000).astype(cp.int32)
    got32 = i32.copy()
    got32[::333] += 3
    got32[1::999] -= 5
    i8 = (want64 * 30).astype(cp.int8)
    got8 = i8.copy()
    got8[::101] -= 2
    cases = [("f32 equal", want.copy(), want, 2), ("f32 ulp", (want64 * (1 + 3e-7)).astype(cp.float32), want, 2),
             ("f32 noisy", (want64 + noise * 1e-6).astype(cp.float32), want, 2), ("f32 bad", bad, want, 2),
             ("f16 ulp", (want64 * (1 + 1e-3)).astype(cp.float16), want64.astype(cp.float16), 0),
             ("f64 noisy", want64 + noise * 1e-12, want64, 3), ("i32 some", got32, i32, 8), ("i8 some", got8, i8, 4),
             # Views off 16-byte alignment, of counts no group divides: read element by element.
             ("f32 offset", bad[1:-2], want[1:-2], 2), ("i8 offset", got8[3:-5], i8[3:-5], 4)]
    for name, got, want_, code in cases:
        tally = cp.zeros(9, dtype=cp.uint64)
        rows = []
        for label, module, _ in modules:
            fn = module.get_function("out_of_tolerance")
            def compare(worst=ALL_ONES):
                tally.fill(0)
                tally[1] = tally[3] = tally[8] = np.uint64(ALL_ONES)
                sample = (np.uint64(0), np.uint64(0)) if samples[label] else ()
                fn((COMPARE_GRID,), (256,), (got, want_, np.uint64(want_.size), np.uint32(code),
                                     np.uint32(want_.itemsize), np.float64(1e-5), np.float64(1e-6),
                                     np.uint64(worst), *sample, tally))
            us = timed_us(compare, repeats=10)
            compare()
            found = [int(v) for v in tally.get()]
            if found[7]:
                compare(found[7])
                found.append(int(tally.get()[8]))
            rows.append((label, us, found))
        same = "tallies equal" if rows[0][2] == rows[1][2] else f"TALLIES DIFFER {rows[0][2]} {rows[1][2]}"
        print(f"{name:10s} {2 * want_.nbytes / 1e9:.2f} GB | "
              + " | ".join(f"{label} {us:7.1f} us" for label, us, _ in rows) + f" | {same}", flush=True)


def main():
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--baseline", default="HEAD", help="a git revision, or a file of audit.cu")
    args.add_argument("--candidate", default="kernels/audit.cu")
    args.add_argument("--nvrtc", help="libnvrtc to time the compiles with")
    args.add_argument("--compile-only", metavar="ARCH", help="only the compiles, for ARCH (sm_90): no GPU")
    args.add_argument("--small", action="store_true",
                      help="only stages of 1-16 MiB, each alone from an idle queue")
    a = args.parse_args()
    baseline = (open(a.baseline).read() if os.path.isfile(a.baseline) else
                subprocess.run(["git", "show", f"{a.baseline}:kernels/audit.cu"],
                               check=True, capture_output=True, text=True).stdout)
    sources = [("baseline", baseline), ("candidate", open(a.candidate).read())]
    lib = load_nvrtc(a.nvrtc)
    arch = a.compile_only
    if arch is None:
        global cp
        import cupy as cp
        arch = f"sm_{cp.cuda.Device().compute_capability}"  # CuPy gives "90"
        print(f"{cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; ", end="")
    print(f"baseline {a.baseline}, candidate {a.candidate}")
    for label, source in sources:
        ms, used = compile_ms(lib, source, arch)
        print(f"NVRTC {label}: {ms:.0f} ms; {'; '.join(used)}", flush=True)
    if a.compile_only:
        return
    modules = [(label, cp.RawModule(code=source, options=("-std=c++17",)), source)
               for label, source in sources]
    # The compare's sample arguments (an audit's sample of a large output), where the kernel
    # takes them: zeros, every element.
    samples = {label: "sample_key" in source for label, source in sources}
    if a.small:
        small_draws(modules)
        return
    draws(modules, cp.empty(32768 * 2048 * 4, dtype=cp.uint8))
    compares(modules, samples)


if __name__ == "__main__":
    main()
