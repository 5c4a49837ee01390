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
here=$(cd "$(dirname "$0")" && pwd)
build=$(mktemp -d)
nvcc -O3 -arch=sm_90 -o "$build/b03" "$snippets/benchmark_03_cudaEvents.cu" -I"$snippets"
nvcc -O2 -o "$build/paths" "$here/first_launch_paths.c" -lcuda -lnvidia-ml
cp "$here/../../kernels/matmul.cu" "$build/m2.cu"
echo 'extern "C" __global__ void runner_lazy_empty() {}' >> "$build/m2.cu"
nvcc -cubin -arch=sm_90 -o "$build/m2.cubin" "$build/m2.cu"
log=$build/log.txt
for r in $(seq "$rounds"); do
    "$build/b03" 512 | sed -n 's/Kernel took: \(.*\)ms/\1/p' | awk -v r="$r" '{print "b03 r=" r " event_us=" $1 * 1000}' >> "$log"
    for before in none trim heap:16 spin:4 nvml:all; do
        BEFORE=$before "$build/paths" runtime "$build/m2.cubin" 512 | sed "s/^runtime/$before r=$r/" >> "$log"
    done
done
python3 - "$log" <<'PY'
import sys, statistics as st, collections
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    name, r, *rest = line.split()
    rows[name][int(r.split("=")[1])] = {k: float(v) for k, v in (kv.split("=") for kv in rest if "=" in kv and not kv.startswith("n="))}
base = rows["none"]
for name, runs in rows.items():
    fields = [f for f in ("event_us", "load_us", "launch_us", "faults") if f in next(iter(runs.values()))]
    medians = "  ".join(f"{f} {st.median(v[f] for v in runs.values()):7.1f}" for f in fields)
    paired = st.median(v["event_us"] - base[r]["event_us"] for r, v in runs.items() if r in base)
    print(f"{name:9s} runs {len(runs):3d}  {medians}  event vs none {paired:+6.1f}")
PY
