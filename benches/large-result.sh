#!/usr/bin/env bash
# Times `runner report` on runs of about 1 and 10 million samples, built from the stored
# statistics run by repeating each run's steady samples in place (so cells stay stored in
# their records' order, as the runner writes them, and each cell grows), against
# decompressing the samples alone; prints wall time and peak memory of each. Each size is
# timed as an older run stores it (gzip) and as a new run does (zstd, written by
# `runner merge`, a frame per run).
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
measure() { /usr/bin/time -f "%e s, peak %M KiB: $1" "${@:2}" > /dev/null; }
for r in "${repeats[@]}"; do
  run="$work/run-$r"
  mkdir -p "$run"
  cp "$src"/{run.json,experiment.toml,cells.jsonl,telemetry.csv.gz} "$run/"
  # Each stretch of one run's steady samples, printed `r` times where it stands.
  zcat "$src/samples.csv.gz" | awk -F, -v r="$r" '
    function flush(   j, i) { for (j = 0; j < (phase == "steady" ? r : 1); j++) for (i = 0; i < n; i++) print buf[i]; n = 0 }
    NR == 1 { print; for (i = 1; i <= NF; i++) { if ($i == "process") p = i; if ($i == "phase") h = i }; next }
    { key = $1 FS $p FS $h; if (key != last && n > 0) flush(); last = key; phase = $h; buf[n++] = $0 }
    END { flush() }' | gzip -1 > "$run/samples.csv.gz"
  echo "samples: $(( $(zcat "$run/samples.csv.gz" | wc -l) - 1 )) ($(du -h "$run/samples.csv.gz" | cut -f1) gzip)"
  "$runner" merge "$run" --out "$run-zst" > /dev/null 2>&1
  echo "as zstd: $(du -h "$run-zst/samples.csv.zst" | cut -f1)"
  for _ in 1 2; do
    measure "zcat samples.csv.gz" zcat "$run/samples.csv.gz"
    measure "runner report (gzip)" "$runner" report "$run"
    measure "zstdcat samples.csv.zst" zstdcat "$run-zst/samples.csv.zst"
    measure "runner report (zstd)" "$runner" report "$run-zst"
  done
done
