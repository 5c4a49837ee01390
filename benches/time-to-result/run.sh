#!/usr/bin/env bash
# Times the runner beside NVBench on the post's naive matmul at NVBench's five sizes, each
# command whole (its process start, compile, checks, audits and report included), twice,
# one after the other on the same GPU:
#
#     benches/time-to-result/run.sh RUNNER OUT    # then: summary.py OUT
#
# RUNNER is the runner's binary; OUT receives each command's output, the runner's run
# folders and `wall.txt` (one line per command: its name, pass and wall seconds). NVBench
# runs from `nvbench.py` (needs `cuda-bench`, CuPy and NumPy importable by python3).
set -u
here=$(cd "$(dirname "$0")" && pwd)
runner=$1
out=$2
mkdir -p "$out"
: > "$out/wall.txt"

# Runs one named command under a 5-minute timeout and appends its wall time to wall.txt.
timed() {
    local name=$1 pass=$2
    shift 2
    local start end
    start=$(date +%s.%N)
    timeout 300 "$@" > "$out/$name-$pass.log" 2>&1
    local rc=$?
    end=$(date +%s.%N)
    echo "$name $pass $(python3 -c "print(f'{$end - $start:.3f}')") rc=$rc" | tee -a "$out/wall.txt"
}

for pass in 1 2; do
    timed nvbench-cold "$pass" python3 "$here/nvbench.py" cold
    timed runner-cold-nvbench-rule "$pass" "$runner" run "$here/matmul.toml" \
        --only variant=cold-nvbench-rule --out "$out/pass$pass/cold-nvbench-rule"
    timed runner-cold "$pass" "$runner" run "$here/matmul.toml" \
        --only variant=cold --out "$out/pass$pass/cold"
    timed nvbench-both "$pass" python3 "$here/nvbench.py" both
    timed runner-both-nvbench-rule "$pass" "$runner" run "$here/matmul.toml" \
        --only variant=cold-nvbench-rule,batch-nvbench-rule --out "$out/pass$pass/both-nvbench-rule"
    timed runner-both "$pass" "$runner" run "$here/matmul.toml" \
        --only variant=cold,batch --out "$out/pass$pass/both"
done
