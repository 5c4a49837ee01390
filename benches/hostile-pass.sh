#!/usr/bin/env bash
# A hostile pass over run folders and streams, without a GPU: each case builds a folder or a
# stream meant to make the runner touch what is not a run's, panic, flood, echo raw text or
# trust damaged data, and says `ok` or `NOT ok`. Run from the repository root:
#   benches/hostile-pass.sh PATH/TO/runner
# The last line counts the cases not ok. Needs python3, zstd and flock.
set -u
R=$(realpath "${1:?usage: benches/hostile-pass.sh PATH/TO/runner}")
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
notok=0; n=0
say() { n=$((n+1)); if [ "$1" = 0 ]; then echo "ok      $2"; else echo "NOT ok  $2"; notok=$((notok+1)); fi; }
fresh() { rm -rf "$T/$1"; cp -r "reports/$2" "$T/$1"; }
person() { mkdir -p "$1/.mozilla.old-2023/p" "$1/plots"; echo rc > "$1/.bashrc.old-2024"; echo k > "$1/.lock"; echo '<svg/>' > "$1/plots/mine.svg"; }
sum() { find "$1" -type f -exec md5sum {} + | sort -k2 | md5sum; }
# Resources of one command: seconds, peak KiB and stderr lines; ok under 10 s, 1 GiB, 100 lines.
bounded() { /usr/bin/time -f '%e %M' -o "$T/time" "$@" > /dev/null 2> "$T/err"; read -r s kb < <(tail -1 "$T/time");
  lines=$(grep -vc '^[0-9.]* [0-9]*$' "$T/err"); awk -v s="$s" -v kb="$kb" -v l="$lines" 'BEGIN{exit !(s<10 && kb<1048576 && l<100)}'; }

# 1. Folders that are not runs.
mkdir -p "$T/d"; person "$T/d"; before=$(sum "$T/d"); "$R" report "$T/d" >/dev/null 2>&1
[ "$(sum "$T/d")" = "$before" ]; say $? "report on a person's folder (.mozilla.old-2023/, .bashrc.old-2024, .lock) leaves it as it was"
fresh part statistics; mkdir -p "$T/m"; person "$T/m"; "$R" merge "$T/part" --out "$T/m" >/dev/null 2>&1
[ -f "$T/m/plots/mine.svg" ] && [ ! -f "$T/m/run.json" ]; say $? "merge --out into a person's folder without --force is refused, its plots kept"
"$R" merge "$T/part" --out "$T/part/plots/m" >/dev/null 2>&1; [ ! -e "$T/part/plots/m" ]; say $? "merge --out inside another run's plots/ is refused"
mkdir -p "$T/e"; person "$T/e/exp"; cp experiments/kernels.toml "$T/exp.toml"; before=$(sum "$T/e/exp")
"$R" run "$T/exp.toml" --out "$T/e" >/dev/null 2>&1; [ "$(sum "$T/e/exp")" = "$before" ]; say $? "run --out among a person's files leaves them as they were"

# 2. Streams that cannot be written.
# A row of a cell not in the plan appended: every command that reads the run warns.
fresh dup transpose-audited; f=$T/dup/samples.csv.zst
zstd -q -dc "$f" | head -1 | zstd -q -c >> "$f"
for cmd in report compare merge; do
  case $cmd in report) args=(report "$T/dup");; compare) args=(compare "$T/dup" "$T/dup");; merge) args=(merge "$T/dup" --out "$T/dupm" --force);; esac
  "$R" "${args[@]}" > /dev/null 2> /dev/full; rc=$?; [ $rc != 101 ] && [ $rc -lt 128 ]; say $? "$cmd with its warnings into 2>/dev/full ends without a panic (exit $rc)"
done
"$R" report "$T/dup" 2>&1 >/dev/null | head -1 >/dev/null; rc=${PIPESTATUS[0]}; [ "$rc" != 101 ]; say $? "report into 2>&1 | head -1 ends without a panic (exit $rc)"

# 3. Floods.
fresh f1 transpose-audited; python3 -c "import sys; sys.stdout.write('{}\n'*10_000_000)" | zstd -q -c >> "$T/f1/cells.jsonl.zst"
bounded "$R" report "$T/f1"; say $? "10 million {} lines in cells.jsonl.zst: under 10 s, 1 GiB and 100 lines of warnings"
bounded "$R" compare "$T/f1" "$T/f1"; say $? "the same, compared"
fresh f2 transpose-audited; h=$(zstd -q -dc "$T/f2/samples.csv.zst" | head -1 | tr ',' '\n' | wc -l)
python3 -c "import sys; sys.stdout.write(('ghost'+',1'*($h-1)+'\n')*10_000_000)" | zstd -q -c >> "$T/f2/samples.csv.zst"
bounded "$R" report "$T/f2"; say $? "10 million rows of an unknown cell in samples.csv.zst: bounded"
fresh f3 transpose-audited; python3 -c "import sys; sys.stdout.write('x\n'*30_000_000)" | zstd -q -c >> "$T/f3/telemetry.csv.zst"
bounded "$R" report "$T/f3"; say $? "30 million malformed telemetry rows: bounded"

# 4. Text from a folder or another program.
fresh lk transpose-audited; printf 'pid 1 \033]0;owned\007 \033[2J' > "$T/lk/.lock"
( flock "$T/lk/.lock" sleep 2.5 ) & sleep 0.3; "$R" report "$T/lk" > /dev/null 2> "$T/lkerr"; wait
grep -q "waiting for" "$T/lkerr" && ! grep -q $'\033' "$T/lkerr"; say $? "a lock holder's line with escape sequences reaches the terminal escaped"
mkdir -p "$T/bin"; printf '#!/bin/sh\necho '"'"'$(touch x)'"'"'\n' > "$T/bin/sbatch"; chmod +x "$T/bin/sbatch"
PATH="$T/bin:$PATH" "$R" sbatch experiments/kernels.toml --parts 2 --out "$T/sb" --submit > "$T/sbout" 2>&1; rc=$?
[ $rc != 0 ]; say $? "a fake sbatch answering \$(touch x) is refused (exit $rc), not passed on"

fresh html transpose-audited; python3 - "$T/html/cells.jsonl.zst" <<'PY'
import json,subprocess,sys
p=sys.argv[1]; lines=subprocess.run(['zstd','-q','-dc',p],capture_output=True,text=True).stdout.splitlines()
r=json.loads(lines[3]); r['status']='failed'; r['error']='<img src=x onerror=alert(1)> [a](javascript:alert(1))'; r['check']='<script>x</script>'
lines[3]=json.dumps(r); subprocess.run(['zstd','-q','-f','-o',p],input=('\n'.join(lines)+'\n').encode())
PY
"$R" report "$T/html" >/dev/null 2>&1; ! grep -qE '<img|<script|[^\\]\]\(javascript' "$T/html/report.md" "$T/html/cells.md"; say $? "a record's error and check land in report.md and cells.md as text, not HTML or links"
fresh ct transpose-audited; cp -r reports/transpose-audited "$T/x\` <img src=y onerror=z>"; printf '../x` <img src=y onerror=z>' > "$T/ct/compare_to"
"$R" report "$T/ct" >/dev/null 2>&1; grep -qF '``../x` <img src=y onerror=z>``' "$T/ct/report.md"; say $? "a backtick in compare_to closes no code span"

# 5. Damage stays local, and is not trusted.
fresh rec transpose-audited; zstd -q -dc "$T/rec/cells.jsonl.zst" | sed -n 4p | zstd -q -c >> "$T/rec/cells.jsonl.zst"
"$R" report "$T/rec" > /dev/null 2>&1 && cmp -s "$T/rec/summary.csv" reports/transpose-audited/summary.csv; say $? "a record frame stored twice is kept once"
fresh tel transpose-audited; printf 'what,is,this\n1,2,3\n' | zstd -q -c > "$T/tel/telemetry.csv.zst"
"$R" report "$T/tel" > /dev/null 2>&1 && cmp -s "$T/tel/summary.csv" reports/transpose-audited/summary.csv; say $? "telemetry not in its format costs the telemetry, not the cells"
fresh src statistics; rm -rf "$T/src/sources"; mkdir -p "$T/outside"; echo secret > "$T/outside/secret.cu"; ln -s "$T/outside" "$T/src/sources"
"$R" merge "$T/src" --out "$T/srcm" > /dev/null 2>&1; [ ! -e "$T/srcm/sources/secret.cu" ]; say $? "a part's sources/ linking outside the run is not copied by merge"
fresh ph transpose-audited; zstd -q -dc "$T/ph/samples.csv.zst" | awk -F, 'BEGIN{OFS=","} !d && $0 ~ /,steady,/ {sub(/,steady,/,",xyz,"); d=1} {print}' | zstd -q -c > "$T/ph/x" && mv "$T/ph/x" "$T/ph/samples.csv.zst"
"$R" report "$T/ph" 2>&1 >/dev/null | grep -q 'phase of `xyz`'; say $? "a sample row of phase xyz costs its cell"
fresh torn events; python3 - "$T/torn/samples.csv.gz" <<'PY'
import sys,zlib
p=sys.argv[1]; b=open(p,'rb').read(); at=last=0
while at<len(b):
    last=at; d=zlib.decompressobj(16+zlib.MAX_WBITS); d.decompress(b[at:]); at=len(b)-len(d.unused_data)
open(p,'wb').write(b[:last+(len(b)-last)*3//4])
PY
"$R" report "$T/torn" 2>&1 >/dev/null | grep -q 'matmul/n=2048/sync is unreadable'; say $? "a cell whose samples a torn last gzip member cut is not trusted on what stands"
fresh hdr transpose-audited; python3 - "$T/hdr/samples.csv.zst" <<'PY'
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[20]^=0xff; open(p,'wb').write(bytes(b))
PY
"$R" report "$T/hdr" >/dev/null 2>&1; say $? "a damaged header frame of samples costs only what it cannot place"

fresh peer events; sed -n 2p "$T/peer/peers.csv" >> "$T/peer/peers.csv"
"$R" report "$T/peer" 2>&1 >/dev/null | grep -q 'kept once'; say $? "a repeated peers.csv row is kept once, said"
fresh clk transpose-audited; python3 - "$T/clk/run.json" <<'PY'
import json,sys; p=sys.argv[1]; m=json.load(open(p)); m['device']['sm_clock_max_mhz']=0; m['device']['mem_clock_max_mhz']=0; json.dump(m,open(p,'w'))
PY
"$R" report "$T/clk" >/dev/null 2>&1; ! grep -q "peak: \." "$T/clk/report.md"; say $? "zero clocks give no empty list of peaks"
fresh fn transpose-audited; printf 'It read 123.4 µs[^x].\n\n[^x]:\n' > "$T/fn/notes.md"
! "$R" report "$T/fn" --check-notes >/dev/null 2>&1; say $? "a footnote defined with nothing exempts no number from --check-notes"

# 6. Messages.
fresh cmp transpose-audited; zstd -q -dc "$T/cmp/samples.csv.zst" | awk -F, '!d && $0 ~ /,steady,/ {print $1",broken"; d=1; next} {print}' | zstd -q -c > "$T/cmp/x" && mv "$T/cmp/x" "$T/cmp/samples.csv.zst"
"$R" compare reports/transpose-audited "$T/cmp" 2>&1 | grep -q 'damaged in the new one'; say $? "compare calls a damaged new cell damaged, not missing"
mkdir -p "$T/loop"; ln -s "$T/loop/b" "$T/loop/a"; ln -s "$T/loop/a" "$T/loop/b"
"$R" report "$T/loop/a" 2>&1 | grep -q 'loop of symbolic links'; say $? "a symbolic link loop is named a loop"
fresh nocells transpose-audited; rm "$T/nocells/cells.jsonl.zst"
"$R" report "$T/nocells" 2>&1 | grep -q 'cells.jsonl.zst'; say $? "a missing cells.jsonl.zst is named cells.jsonl.zst"

echo "$notok of $n cases not ok"
