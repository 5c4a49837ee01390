#!/usr/bin/env bash
# Times `runner plan` and `runner report` on a run of about 1,000,000 samples, built from the
# stored statistics run by repeating its samples (the cells stay those of its plan).
# Usage: benches/large-result.sh [path/to/runner]   (default: target/release/runner)
set -euo pipefail
cd "$(dirname "$0")/.."
runner="${1:-target/release/runner}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp reports/statistics/{run.json,experiment.toml,cells.jsonl} "$work/"
{
  head -n 1 reports/statistics/samples.csv
  for _ in $(seq 48); do tail -n +2 reports/statistics/samples.csv; done
} > "$work/samples.csv"
echo "samples: $(($(wc -l < "$work/samples.csv") - 1))"
time_it() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" -v what="${*:2}" 'BEGIN { printf "%.3f s: %s\n", b - a, what }'; }
for _ in 1 2 3; do time_it "$runner" report "$work"; done
for _ in 1 2 3; do time_it "$runner" plan experiments/statistics.toml; done
