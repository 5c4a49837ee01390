#!/usr/bin/env bash
# Times runtime_steps.cu's steps from the bare driver toward a runtime-API program's first
# launch, beside the post's benchmark_03, in fresh processes taking turns (n = 512 and 1024).
#   benches/first-launch/steps.sh PATH/TO/cuda-snippets [ROUNDS]
set -eu
snippets=${1:?usage: steps.sh PATH/TO/cuda-snippets [ROUNDS]}
rounds=${2:-25}
source "$(dirname "$0")/common.sh"
nvcc -O3 -arch=sm_90 -o "$build/steps" "$here/runtime_steps.cu" -I"$kernels" -lcuda
nvcc -fatbin -arch=sm_90 -o "$build/matmul.fatbin" "$kernels/matmul.cu"
log=$build/log.txt
for r in $(seq "$rounds"); do
    for n in 512 1024; do
        post03 $n "$r" >> "$log"
        for step in drv rt-driver rt-library rt-launch; do
            "$build/steps" $step "$build/matmul.fatbin" $n | sed "s/^$step /$step r=$r /" >> "$log"
        done
    done
done
python3 "$here/summary.py" "$log"
