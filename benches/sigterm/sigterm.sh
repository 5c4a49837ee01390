#!/bin/bash
# SIGTERM mid-run, as Slurm's time limit or `scancel` sends it: the runner's exit code, any
# runner or worker left, the GPU's memory after, then the same experiment run whole, timed.
# Usage: benches/sigterm/sigterm.sh RUNNER [EXPERIMENT] (on a machine with a GPU).
set -u
runner=${1:?usage: sigterm.sh RUNNER [EXPERIMENT]}
exp=${2:-experiments/transpose.toml}
logs=$(mktemp -d)
start=$(date +%s.%N)
timeout -s TERM 6 "$runner" "$exp" --out "$logs/stopped" > "$logs/stopped.log" 2>&1
echo "stopped run: exit $? after $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
tail -n 3 "$logs/stopped.log"
sleep 2
echo "runner processes left: $(pgrep -fc -- "$runner" || true)"
pgrep -af -- "$runner" || true
echo "GPU memory used: $(nvidia-smi --query-gpu=memory.used --format=csv,noheader)"
start=$(date +%s.%N)
"$runner" "$exp" --out "$logs/whole" > "$logs/whole.log" 2>&1
echo "next run: exit $? in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
grep "ran for" "$logs/whole.log"
echo "logs: $logs"
