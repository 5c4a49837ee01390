#!/usr/bin/env bash
# Builds the post's own programs ("How to Benchmark CUDA Kernels", MIT; not part of this
# repository) so that experiments can run them as peers beside their variants:
#   benches/post-programs.sh PATH/TO/cuda-snippets [OUT_DIR]
# OUT_DIR (default target/peers) receives, for each benchmark_0N_*.cu:
#   <name>-sm_90    nvcc -O3 -arch=sm_<device>      (SASS for this GPU)
#   <name>-default  nvcc -O3, no -arch              (sm_75 SASS and PTX: the driver JITs it here)
# Builds run in parallel; a failed build is reported and the rest go on.
set -u
src=${1:?usage: benches/post-programs.sh PATH/TO/cuda-snippets [OUT_DIR]}
out=${2:-target/peers}
mkdir -p "$out"
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d . )
cc=${cc:-90}
pids=()
for f in "$src"/benchmark_0*.cu; do
    name=$(basename "$f" .cu)
    nvcc -O3 -arch="sm_$cc" -o "$out/$name-sm_90" "$f" -I"$src" &
    pids+=($!)
    nvcc -O3 -o "$out/$name-default" "$f" -I"$src" &
    pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
echo "built $(ls "$out" | wc -l) programs into $out ($failed failed builds)"
