#!/usr/bin/env bash
# Whether what the host does just before a first launch moves its reading: the post's
# benchmark_03 against first_launch_paths.c's runtime path (the runtime's calls, with an nvcc
# CUBIN of kernels/matmul.cu) as is, after 30 ms and 300 ms of a busy CPU, and after 30 ms
# idle, at n = 512 in fresh processes taking turns.
#   benches/first-launch/before.sh PATH/TO/cuda-snippets [ROUNDS]
set -eu
snippets=${1:?usage: before.sh PATH/TO/cuda-snippets [ROUNDS]}
rounds=${2:-15}
here=$(cd "$(dirname "$0")" && pwd)
build=$(mktemp -d)
nvcc -O3 -arch=sm_90 -o "$build/b03" "$snippets/benchmark_03_cudaEvents.cu" -I"$snippets"
nvcc -O2 -o "$build/paths" "$here/first_launch_paths.c" -lcuda -lnvidia-ml
image=$build/matmul.cubin
nvcc -cubin -arch=sm_90 -o "$image" "$here/../../kernels/matmul.cu"
log=$build/log.txt
for r in $(seq "$rounds"); do
    echo "b03 $("$build/b03" 512 | sed -n 's/Kernel took: \(.*\)ms/\1/p' | awk '{print $1*1000}')" >> "$log"
    for b in none spin:30 sleep:30 spin:300; do
        echo "runtime-$b $(BEFORE=$b "$build/paths" runtime "$image" 512 | sed 's/.*event_us=\([0-9.]*\).*/\1/')" >> "$log"
    done
done
python3 - "$log" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    k, v = line.split(); rows[k].append(float(v))
for k, v in rows.items():
    q = statistics.quantiles(v, n=4)
    print(f"{k:18s} n=512 runs {len(v):3d} median {statistics.median(v):7.1f} us  p25 {q[0]:7.1f}  p75 {q[2]:7.1f}")
PY
