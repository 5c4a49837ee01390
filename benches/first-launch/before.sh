#!/usr/bin/env bash
# Whether what the host does just before a first launch moves its reading: the post's
# benchmark_03 against first_launch_paths.c's runtime path (the runtime's calls, with an nvcc
# CUBIN of kernels/matmul.cu) as is, after 30 ms and 300 ms of a busy CPU, and after 30 ms
# idle, at n = 512 in fresh processes taking turns.
#   benches/first-launch/before.sh PATH/TO/cuda-snippets [ROUNDS]
set -eu
snippets=${1:?usage: before.sh PATH/TO/cuda-snippets [ROUNDS]}
rounds=${2:-15}
source "$(dirname "$0")/common.sh"
image=$build/matmul.cubin
nvcc -cubin -arch=sm_90 -o "$image" "$kernels/matmul.cu"
log=$build/log.txt
for r in $(seq "$rounds"); do
    post03 512 "$r" >> "$log"
    for b in none spin:30 sleep:30 spin:300; do
        BEFORE=$b paths "runtime-$b" "$r" runtime "$image" 512 >> "$log"
    done
done
python3 "$here/summary.py" "$log" --against runtime-none
