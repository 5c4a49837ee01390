#!/usr/bin/env bash
# Builds the first-launch probes and the post's benchmark_03 on a GPU machine and times, in
# fresh processes taking turns, the post's first launch against each driver path of
# first_launch_paths.c; also traces the API calls inside each one's timed region.
#   benches/first-launch/run.sh PATH/TO/cuda-snippets OUT_DIR [ROUNDS]
set -eu
snippets=${1:?usage: run.sh PATH/TO/cuda-snippets OUT_DIR [ROUNDS]}
out=${2:?usage: run.sh PATH/TO/cuda-snippets OUT_DIR [ROUNDS]}
rounds=${3:-12}
source "$(dirname "$0")/common.sh"
cuda=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$out"
nvcc -cubin -arch=sm_90 -o "$build/matmul.cubin" "$kernels/matmul.cu"
cp "$kernels/prebuilt/matmul.sm_90.fatbin" "$build/matmul.fatbin"
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
        post03 $n "$r" >> "$log"
        post03 $n "$r" CUDA_MODULE_LOADING=EAGER | sed 's/^b03 /b03-eager /' >> "$log"
        for image in cubin fatbin; do
            for mode in module library kernel prepared runtime; do
                paths "$mode-$image" "$r" $mode "$build/matmul.$image" $n >> "$log"
            done
        done
    done
done
python3 "$here/summary.py" "$log"
