#!/usr/bin/env bash
# What the host does just before a first launch, in fresh processes taking turns with the
# post's benchmark_03 (n = 512): first_launch_paths.c's runtime path with the runner's kind of
# lazy module (kernels/matmul.cu plus an empty kernel, an nvcc CUBIN), as is, after a used heap
# (heap:16), after a trim (trim), after GPU idle (spin:MS) and after an NVML read (nvml:all).
# Prints each path's medians and the median of its differences from `none`, paired by round.
#   benches/first-launch/heap.sh PATH/TO/cuda-snippets [ROUNDS]
set -eu
snippets=${1:?usage: heap.sh PATH/TO/cuda-snippets [ROUNDS]}
rounds=${2:-40}
source "$(dirname "$0")/common.sh"
cp "$kernels/matmul.cu" "$build/m2.cu"
echo 'extern "C" __global__ void runner_lazy_empty() {}' >> "$build/m2.cu"
nvcc -cubin -arch=sm_90 -o "$build/m2.cubin" "$build/m2.cu"
log=$build/log.txt
for r in $(seq "$rounds"); do
    post03 512 "$r" >> "$log"
    for before in none trim heap:16 spin:4 nvml:all; do
        BEFORE=$before paths "$before" "$r" runtime "$build/m2.cubin" 512 >> "$log"
    done
done
python3 "$here/summary.py" "$log" --against none
