#!/usr/bin/env bash
# Runs an experiment through a real Slurm on this machine: starts munged, a slurmctld and a
# slurmd for localhost (Debian's slurm-wlm), submits `runner sbatch --parts 2 --submit`,
# waits for the array and the merge, requeues one finished part (which resumes), and checks
# the merged run. Needs root (the daemons) and the runner binary ($RUNNER_BIN, default
# target/release/runner), and a GPU: without one a part writes nothing.
# With `stop` as a third argument it stops parts mid-run instead: under the stand-in CUDA
# driver in $STAND_IN_CUDA (a folder holding tests/stand-in-cuda/libcuda.c built as
# libcuda.so; no GPU needed) every part's worker hangs at its first cell; one part is
# cancelled (scancel), the other reaches its time limit, both must stop on the SIGTERM that
# Slurm sends, the cancelled one is requeued and resumes its folder, and no runner process
# may be left.
# Usage: tests/slurm-local.sh EXPERIMENT OUT_DIR [stop]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
experiment=$(realpath --relative-to="$root" "$1")
out=$(realpath -m --relative-to="$root" "$2")
runner=$(realpath "${RUNNER_BIN:-target/release/runner}")
name=$(basename "$experiment" .toml)
state=$(mktemp -d /tmp/runner-slurm.XXXXXX)
host=$(hostname -s)
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
cat > "$state/slurm.conf" <<CONF
ClusterName=runnertest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=$state/ctld.pid
SlurmdPidFile=$state/d.pid
SlurmctldLogFile=$state/ctld.log
SlurmdLogFile=$state/d.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
mkdir -p "$state/ctld" "$state/d"
export SLURM_CONF="$state/slurm.conf"
stop() {
  [ -f "$state/d.pid" ] && kill "$(cat "$state/d.pid")" 2>/dev/null || true
  [ -f "$state/ctld.pid" ] && kill "$(cat "$state/ctld.pid")" 2>/dev/null || true
  [ -n "${munge_pid:-}" ] && kill "$munge_pid" 2>/dev/null || true
}
trap stop EXIT
mkdir -p "$state/munge"
munged --force --socket="$state/munge/socket" --pid-file="$state/munge/pid" --log-file="$state/munge/log" --seed-file="$state/munge/seed" &
sleep 1
munge_pid=$(cat "$state/munge/pid")
# Slurm finds munge's socket through the auth plugin's option.
echo "AuthInfo=socket=$state/munge/socket" >> "$state/slurm.conf"
slurmctld -f "$state/slurm.conf"
slurmd -f "$state/slurm.conf"
for _ in $(seq 30); do
  sinfo -h -o %T 2>/dev/null | grep -qE "idle|mixed" && break
  sleep 1
done
sinfo
wait_for() { # job ids: until none is queued or running
  for _ in $(seq 300); do
    [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
    sleep 1
  done
  echo "timed out waiting for job $1" >&2; return 1
}
# The runner processes still alive (zombies aside), as `pid command`.
runners() {
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/exe" 2>/dev/null)" = "$runner" ] || continue
    grep -q '^State:.*Z' "$p/status" 2>/dev/null && continue
    echo "${p#/proc/} $(tr '\0' ' ' < "$p/cmdline" 2>/dev/null)"
  done
}
until_workers() { # count: until that many workers run
  for _ in $(seq 120); do
    [ "$(runners | grep -c __worker)" -ge "$1" ] && return 0
    sleep 1
  done
  echo "no $1 worker(s) started" >&2; runners >&2; return 1
}
stopped() { # part log: the runner stopped on Slurm's SIGTERM
  grep -q "stopped by SIGTERM: wrote" "$1" || { echo "not stopped by SIGTERM: $1" >&2; cat "$1" >&2; return 1; }
}
cd "$root"
if [ "${3:-}" = stop ]; then
  export LD_LIBRARY_PATH="$STAND_IN_CUDA"
  "$runner" sbatch "$experiment" --parts 2 --gpus-per-task 0 --minutes 1 --out "$out"
  array=$(sbatch --parsable "$out/$name/slurm/array.sbatch" | cut -d';' -f1)
  parts="$out/$name/parts"
  until_workers 2
  scancel "${array}_0"
  wait_for "${array}_0"
  stopped "$out/$name/slurm/part-0.log"
  grep -q '"complete": false' "$parts/part0/$name/run.json"
  began=$(grep started_utc "$parts/part0/$name/run.json")
  # Part 1 runs into its time limit of a minute (Slurm looks every 30 s or so).
  wait_for "${array}_1"
  scontrol show job "${array}_1" | grep -q "JobState=TIMEOUT"
  stopped "$out/$name/slurm/part-1.log"
  # Requeued, the cancelled part resumes its folder, and is cancelled again.
  scontrol requeue "${array}_0"
  sleep 1
  scontrol update JobId="${array}_0" StartTime=now || true
  until_workers 1
  scancel "${array}_0"
  wait_for "${array}_0"
  scontrol show job "${array}_0" | grep -q "Restarts=1"
  [ "$(grep started_utc "$parts/part0/$name/run.json")" = "$began" ]
  stopped "$out/$name/slurm/part-0.log"
  sleep 1
  left=$(runners)
  [ -z "$left" ] || { echo "runner processes left: $left" >&2; exit 1; }
  echo "slurm stop: array $array, parts stopped by scancel and a time limit, part 0 resumed"
  exit 0
fi
submitted=$("$runner" sbatch "$experiment" --parts 2 --gpus-per-task 0 --minutes 10 --out "$out" --submit)
echo "$submitted"
array=$(echo "$submitted" | sed -n 's/.*array job \([0-9]*\).*/\1/p')
merge=$(echo "$submitted" | sed -n 's/.*merge job \([0-9]*\).*/\1/p')
wait_for "$array,$merge"
test -f "$out/$name/run.json" || { echo "no merged run" >&2; cat "$out/$name/slurm/"*.log >&2; exit 1; }
# A requeued part carries on from its folder.
scontrol requeue "${array}_0"
# A requeued job waits (BeginTime) before it may start again: let it start now.
sleep 1
scontrol update JobId="${array}_0" StartTime=now || true
wait_for "$array"
scontrol show job "${array}_0" | grep -q "Restarts=1"
grep -q "wrote" "$out/$name/slurm/part-0.log"
"$runner" merge "$out/$name/parts/part0/$name" "$out/$name/parts/part1/$name" --out "$out/$name-remerged"
echo "slurm: array $array, merge $merge, merged into $out/$name"
