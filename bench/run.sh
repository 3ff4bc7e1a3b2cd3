#!/usr/bin/env bash
# Benchmarks pdlaunch's `launch` against a bare fork/exec loop, mpirun and torchrun: launch
# overhead, abort latency, teardown, the launcher's own RSS/CPU, console echo throughput and a
# 512-server + 512-worker parameter-server job.
# Prints Markdown tables, writes bench/results.json and a PNG of the overhead comparison.
# See bench/README.md and docs/performance.md.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/run.sh [--bin PATH] [--no-install] [--quick] [--sections LIST] [--ranks LIST]
                    [--merge] [--new] [--out JSON] [--plot PNG] [--scale-plot PNG]
                    [--no-mpirun] [--no-torchrun]

  --bin PATH       measure this launch binary instead of building build-bench/launch (Release)
  --no-install     do not apt-get install missing tools; the missing ones are skipped
  --quick          fewer runs (a smoke test; the numbers are not for docs/performance.md)
  --sections LIST  comma-separated subset of overhead,abort,teardown,resources,echo,scale
  --ranks LIST     rank counts of the overhead section (default 1,8,64,256)
  --merge          keep what JSON holds; replace only the sections and overhead rows measured
  --new            only what issue #6 added: --sections overhead,scale --ranks 256 --merge
  --out JSON       where to write the results (default bench/results.json)
  --plot PNG       where to draw the overhead plot (default bench/overhead.png)
  --scale-plot PNG where to draw the scale section's plot (default bench/scale.png)
  --no-mpirun, --no-torchrun   leave that launcher out
EOF
}

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build-bench"
BIN=""
INSTALL=1
OUT="$ROOT/bench/results.json"
PLOT="$ROOT/bench/overhead.png"
SCALE_PLOT="$ROOT/bench/scale.png"
BENCH_ARGS=()

while (($#)); do
  case "$1" in
    --bin) BIN="$(realpath "$2")"; shift ;;
    --no-install) INSTALL=0 ;;
    --quick | --no-mpirun | --no-torchrun) BENCH_ARGS+=("$1") ;;
    --sections | --ranks) BENCH_ARGS+=("$1" "$2"); shift ;;
    --merge) BENCH_ARGS+=("--merge") ;;
    --new) BENCH_ARGS+=("--sections" "overhead,scale" "--ranks" "256" "--merge") ;;
    --out) OUT="$(realpath -m "$2")"; shift ;;
    --plot) PLOT="$(realpath -m "$2")"; shift ;;
    --scale-plot) SCALE_PLOT="$(realpath -m "$2")"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

log() { echo "[run.sh] $*" >&2; }

# The Python that has torch (Debian's python3-torch lives in /usr/bin/python3's dist-packages).
SYSTEM_PYTHON=/usr/bin/python3
[[ -x "$SYSTEM_PYTHON" ]] || SYSTEM_PYTHON="$(command -v python3)"

have_torch() { "$SYSTEM_PYTHON" -c 'import torch.distributed.run' >/dev/null 2>&1; }
have_plotter() {
  command -v gnuplot >/dev/null || "$SYSTEM_PYTHON" -c 'import matplotlib' >/dev/null 2>&1
}

install_missing() {
  local packages=()
  command -v hyperfine >/dev/null || packages+=(hyperfine)
  command -v mpirun >/dev/null || packages+=(openmpi-bin)
  have_torch || packages+=(python3-torch)
  have_plotter || packages+=(gnuplot-nox)
  command -v g++ >/dev/null || packages+=(g++)
  ((${#packages[@]})) || return 0
  if ((!INSTALL)); then
    log "not installing (--no-install): ${packages[*]}; what they provide is skipped"
    return 0
  fi
  log "installing ${packages[*]}"
  local sudo=()
  ((EUID == 0)) || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${packages[@]}" >/dev/null
}

build() {
  mkdir -p "$BUILD"
  if [[ -z "$BIN" ]]; then
    log "building $BUILD/launch (Release)"
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DPDLAUNCH_BUILD_TESTS=OFF >/dev/null
    ninja -C "$BUILD" launch >/dev/null
    BIN="$BUILD/launch"
  fi
  local helper
  for helper in bare_spawn bench_rank ab_blocks; do
    g++ -O2 -std=c++20 -Wall -Wextra -o "$BUILD/$helper" "$ROOT/bench/$helper.cc"
  done
}

install_missing
build
log "launch binary: $BIN"
"$SYSTEM_PYTHON" "$ROOT/bench/bench.py" --launch "$BIN" --bare "$BUILD/bare_spawn" \
  --rank "$BUILD/bench_rank" --out "$OUT" "${BENCH_ARGS[@]}"
log "results: $OUT"
has_plots() {
  "$SYSTEM_PYTHON" -c 'import json, sys; r = json.load(open(sys.argv[1]))
sys.exit("overhead" not in r and "scale" not in r)' "$1"
}
if have_plotter && has_plots "$OUT"; then
  "$SYSTEM_PYTHON" "$ROOT/bench/plot.py" "$OUT" "$PLOT" "$SCALE_PLOT" >&2
fi
