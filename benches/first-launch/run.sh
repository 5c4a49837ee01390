#!/usr/bin/env bash
# Builds the first-launch probes and the post's benchmark_03 on a GPU machine and times, in
# fresh processes taking turns, the post's first launch against each driver path of
# first_launch_paths.c; also traces the API calls inside each one's timed region.
#   benches/first-launch/run.sh PATH/TO/cuda-snippets OUT_DIR [ROUNDS]
set -eu
snippets=${1:?usage: run.sh PATH/TO/cuda-snippets OUT_DIR [ROUNDS]}
out=${2:?usage: run.sh PATH/TO/cuda-snippets OUT_DIR [ROUNDS]}
rounds=${3:-12}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
build=$(mktemp -d)
mkdir -p "$out"
nvcc -O3 -arch=sm_90 -o "$build/b03" "$snippets/benchmark_03_cudaEvents.cu" -I"$snippets"
nvcc -cubin -arch=sm_90 -o "$build/matmul.cubin" "$root/kernels/matmul.cu"
cp "$root/kernels/prebuilt/matmul.sm_90.fatbin" "$build/matmul.fatbin"
nvcc -O2 -o "$build/paths" "$here/first_launch_paths.c" -lcuda -lnvidia-ml
cupti_inc=$(dirname "$(find "$cuda/" -name cupti.h | head -1)")
cupti_lib=$(dirname "$(find "$cuda/" -name 'libcupti.so' | head -1)")
gcc -O2 -shared -fPIC -o "$build/trace.so" "$here/trace_inject.c" -I"$cuda/include" \
    -I"$cupti_inc" -L"$cupti_lib" -lcupti -Wl,-rpath,"$cupti_lib"

# Which calls run inside each timed region (the tracing itself slows them: no timing here).
CUDA_INJECTION64_PATH=$build/trace.so "$build/b03" 512 > /dev/null 2> "$out/trace-b03.txt"
for mode in module library kernel runtime; do
    CUDA_INJECTION64_PATH=$build/trace.so "$build/paths" $mode "$build/matmul.fatbin" 512 \
        > /dev/null 2> "$out/trace-$mode.txt"
done

# Fresh processes taking turns: every configuration once per round.
log=$out/first-launch-paths.txt
: > "$log"
for r in $(seq "$rounds"); do
    for n in 512 1024; do
        echo "b03 n=$n event_us=$("$build/b03" $n | sed -n 's/Kernel took: \(.*\)ms/\1/p' | awk '{print $1*1000}')" >> "$log"
        echo "b03-eager n=$n event_us=$(CUDA_MODULE_LOADING=EAGER "$build/b03" $n | sed -n 's/Kernel took: \(.*\)ms/\1/p' | awk '{print $1*1000}')" >> "$log"
        for image in cubin fatbin; do
            for mode in module library kernel prepared runtime; do
                "$build/paths" $mode "$build/matmul.$image" $n | sed "s/^$mode/$mode-$image/" >> "$log"
            done
        done
    done
done
python3 - "$log" <<'PY'
import sys, re, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    rows[(line.split()[0], int(f["n"]))].append({k: float(v) for k, v in f.items() if k != "n"})
print(f"{'path':18s} {'n':>5s} {'runs':>4s} {'event median':>12s} {'p25':>7s} {'p75':>7s}  host medians (load / lookup / launch)")
for (path, n), rs in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    ev = sorted(r["event_us"] for r in rs)
    q = statistics.quantiles(ev, n=4)
    host = " / ".join(f"{statistics.median(r[k] for r in rs):.1f}" for k in ("load_us", "lookup_us", "launch_us") if k in rs[0])
    print(f"{path:18s} {n:5d} {len(ev):4d} {statistics.median(ev):10.1f}us {q[0]:7.1f} {q[2]:7.1f}  {host}")
PY
