#!/usr/bin/env bash
# Where the launcher's time goes, for docs/performance.md: its own CPU per rank count
# (perf stat -i: the launcher process only, not the ranks), wall time with parts of the work
# switched off, an inclusive CPU profile of the launcher process (perf record -i, DWARF call
# graphs, averaged over runs), its timeline under perf trace, and its syscalls (strace -c).
# Needs perf, strace and hyperfine (apt-get install linux-perf strace hyperfine).
#
#   bench/profile.sh [--bin PATH] [--ranks N] [--runs R]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/build-bench/launch"
BARE="$ROOT/build-bench/bare_spawn"
RANKS=8
RUNS=40
while (($#)); do
  case "$1" in
    --bin) BIN="$(realpath "$2")"; shift ;;
    --ranks) RANKS="$2"; shift ;;
    --runs) RUNS="$2"; shift ;;
    *) echo "profile.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
for tool in perf strace hyperfine; do
  command -v "$tool" >/dev/null || { echo "profile.sh: $tool is not installed" >&2; exit 1; }
done
[[ -x "$BARE" ]] || g++ -O2 -std=c++20 -o "$BARE" "$ROOT/bench/bare_spawn.cc"

WORK="$(mktemp -d /tmp/pdlaunch-profile-XXXXXX)"
trap 'rm -rf "$WORK" /dev/shm/pdlaunch-profile-log' EXIT
cd "$WORK"

echo "## Launcher's own CPU (perf stat -i, $RUNS runs each)"
for n in 1 8 64; do
  perf stat -i -x, -e task-clock -r "$RUNS" "$BIN" --nproc_per_node "$n" /bin/true 2>&1 \
    >/dev/null | awk -F, -v n="$n" '/task-clock/ {printf "N=%s: %.2f ms CPU\n", n, $1}'
done

echo
echo "## Wall time with parts switched off (hyperfine -N, medians)"
hyperfine -N --style none --warmup 3 --runs "$RUNS" --export-json ablation.json \
  -n "bare fork/exec, $RANKS ranks" "$BARE $RANKS /bin/true" \
  -n "launch, $RANKS ranks" "$BIN --nproc_per_node $RANKS /bin/true" \
  -n "launch, fixed --start_port (no port locks)" \
  "$BIN --nproc_per_node $RANKS --start_port 41000 /bin/true" \
  -n "launch, log dir on tmpfs" \
  "$BIN --nproc_per_node $RANKS --log_dir /dev/shm/pdlaunch-profile-log /bin/true" \
  -n "launch --version (exec + static init)" "$BIN --version" \
  -n "bare fork/exec, 0 ranks (exec only)" "$BARE 0 /bin/true" >/dev/null
python3 - ablation.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['median'] * 1000:8.3f} ms  {r['command']}")
PY

echo
echo "## Inclusive CPU profile of the launcher process ($RANKS ranks, $RUNS runs)"
for i in $(seq "$RUNS"); do
  perf record -q -i -e cpu-clock -F 49000 --call-graph dwarf,32768 -o "run$i.data" -- \
    "$BIN" --nproc_per_node "$RANKS" /bin/true >/dev/null 2>&1
done
python3 "$ROOT/bench/perf_breakdown.py" run*.data

echo
echo "## Timeline under perf trace, $RANKS ranks (medians of 15 runs; tracing slows everything)"
for i in $(seq 15); do
  perf trace -e arch_prctl,clone,exit_group -o "launch$i.txt" -- \
    "$BIN" --nproc_per_node "$RANKS" /bin/true >/dev/null 2>&1
  perf trace -e arch_prctl,clone,exit_group -o "bare$i.txt" -- "$BARE" "$RANKS" /bin/true
done
echo "launch:"
python3 "$ROOT/bench/trace_timeline.py" launch true 1 launch*.txt
echo "bare fork/exec:"
python3 "$ROOT/bench/trace_timeline.py" bare_spawn true 0 bare*.txt

echo
echo "## Syscalls of the launcher process (strace -c, one run)"
strace -c -o strace.txt "$BIN" --nproc_per_node "$RANKS" /bin/true >/dev/null 2>&1
head -25 strace.txt
