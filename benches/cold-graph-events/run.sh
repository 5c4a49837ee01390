#!/usr/bin/env bash
# Builds benches/cold-graph-events on a GPU machine and runs it at the copy's sizes.
#   benches/cold-graph-events/run.sh [N] [REPLAYS] [legacy]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
inc=$(dirname "$(find "$cuda/" -name cupti.h | head -1)")
lib=$(dirname "$(find "$cuda/" -name 'libcupti.so' | head -1)")
b=$(mktemp -d)
nvcc -cubin -arch=sm_90 -o "$b/copy.cubin" "$here/../../kernels/copy.cu"
nvcc -O2 -o "$b/probe" "$here/cold_graph_events.c" -I"$inc" -L"$lib" -lcupti -lcuda -Xlinker -rpath,"$lib"
for mib in 1 4 16 64 256; do "$b/probe" "$b/copy.cubin" $mib ${1:-100} ${2:-20} ${3:-}; done
