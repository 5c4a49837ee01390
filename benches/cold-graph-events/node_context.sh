#!/usr/bin/env bash
# Builds benches/cold-graph-events/node_context.c on a GPU machine and runs it at the sizes of
# experiments/cold-graph.toml up to 64 MiB and n = 1024.
#   benches/cold-graph-events/node_context.sh [N] [REPLAYS]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
kernels=$(cd "$here/../../kernels" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
inc=$(dirname "$(find "$cuda/" -name cupti.h | head -1)")
lib=$(dirname "$(find "$cuda/" -name 'libcupti.so' | head -1)")
b=$(mktemp -d)
printf '#include "%s/%s"\n' "$kernels" copy.cu "$kernels" matmul.cu "$kernels" empty.cu "$kernels" spin.cu > "$b/all.cu"
nvcc -cubin -arch=sm_90 -o "$b/kernels.cubin" "$b/all.cu"
nvcc -O2 -o "$b/probe" "$here/node_context.c" -I"$inc" -L"$lib" -lcupti -lcuda -Xlinker -rpath,"$lib"
for n in 256 384 512 768 1024; do "$b/probe" "$b/kernels.cubin" matmul $n ${1:-100} ${2:-20}; done
for mib in 1 4 16 64; do "$b/probe" "$b/kernels.cubin" copy $mib ${1:-100} ${2:-20}; done
