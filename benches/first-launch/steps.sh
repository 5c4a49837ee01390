#!/usr/bin/env bash
# Times runtime_steps.cu's steps from the bare driver toward a runtime-API program's first
# launch, beside the post's benchmark_03, in fresh processes taking turns (n = 512 and 1024).
#   benches/first-launch/steps.sh PATH/TO/cuda-snippets [ROUNDS]
set -eu
snippets=${1:?usage: steps.sh PATH/TO/cuda-snippets [ROUNDS]}
rounds=${2:-25}
here=$(cd "$(dirname "$0")" && pwd)
kernels=$here/../../kernels
build=$(mktemp -d)
nvcc -O3 -arch=sm_90 -o "$build/b03" "$snippets/benchmark_03_cudaEvents.cu" -I"$snippets"
nvcc -O3 -arch=sm_90 -o "$build/steps" "$here/runtime_steps.cu" -I"$kernels" -lcuda
nvcc -fatbin -arch=sm_90 -o "$build/matmul.fatbin" "$kernels/matmul.cu"
log=$build/log.txt
for r in $(seq "$rounds"); do
    for n in 512 1024; do
        echo "b03 n=$n event_us=$("$build/b03" $n | sed -n 's/Kernel took: \(.*\)ms/\1/p' | awk '{print $1*1000}')" >> "$log"
        for step in drv rt-driver rt-library rt-launch; do
            "$build/steps" $step "$build/matmul.fatbin" $n >> "$log"
        done
    done
done
python3 - "$log" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = dict(kv.split("=") for kv in line.split()[1:])
    rows[(line.split()[0], int(f["n"]))].append(float(f["event_us"]))
for (step, n), v in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    q = statistics.quantiles(v, n=4)
    print(f"{step:12s} n={n:5d} runs {len(v):3d} median {statistics.median(v):7.1f} us  p25 {q[0]:7.1f}  p75 {q[2]:7.1f}")
PY
