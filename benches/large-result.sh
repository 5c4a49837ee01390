#!/usr/bin/env bash
# Times `runner report` on runs of about 1 and 10 million samples, built from the stored
# statistics run by repeating its samples (the cells stay those of its plan), against
# decompressing the samples alone; prints wall time and peak memory of each.
# Usage: benches/large-result.sh [path/to/runner] [repeats...]
#   (default: target/release/runner, repeats 48 and 480: 1.0M and 10.1M samples)
set -euo pipefail
cd "$(dirname "$0")/.."
runner="$(realpath "${1:-target/release/runner}")"
shift || true
repeats=("${@:-48 480}")
read -r -a repeats <<< "${repeats[*]}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
src=reports/statistics
zcat "$src/samples.csv.gz" > "$work/all.csv"
head -n 1 "$work/all.csv" > "$work/header.csv"
tail -n +2 "$work/all.csv" > "$work/body.csv"
measure() { /usr/bin/time -f "%e s, peak %M KiB: $1" "${@:2}" > /dev/null; }
for r in "${repeats[@]}"; do
  run="$work/run-$r"
  mkdir -p "$run"
  cp "$src"/{run.json,experiment.toml,cells.jsonl,telemetry.csv.gz} "$run/"
  { cat "$work/header.csv"; for _ in $(seq "$r"); do cat "$work/body.csv"; done; } \
    | gzip -1 > "$run/samples.csv.gz"
  echo "samples: $(( $(wc -l < "$work/body.csv") * r )) ($(du -h "$run/samples.csv.gz" | cut -f1) gzip)"
  for _ in 1 2; do measure "zcat samples.csv.gz" zcat "$run/samples.csv.gz"; done
  for _ in 1 2; do measure "runner report" "$runner" report "$run"; done
done
