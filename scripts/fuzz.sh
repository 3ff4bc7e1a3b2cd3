#!/usr/bin/env bash
# Runs the libFuzzer target tests/fuzz/launch_fuzzer (docs/testing.md "Fuzzing").
# Usage: bash scripts/fuzz.sh [--build] [--time SECONDS] [--dir DIR] [-- LIBFUZZER_ARGS...]
#   --build         configure and build DIR first (clang++, ASan+UBSan, -fsanitize=fuzzer)
#   --time SECONDS  total fuzzing time (default 60)
#   --dir DIR       the build tree (default build-fuzz)
# The corpus grows in DIR/fuzz/corpus (seeded from tests/fuzz/corpus, which is never written);
# a crash, leak, timeout or sanitizer report is saved in DIR/fuzz/artifacts/ and fails the run.
# Exit status: 0 no finding, 1 a finding (the reproducer's path is printed), 2 bad usage,
# 3 the build failed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=0
seconds=60
dir="build-fuzz"
extra=()
while (($#)); do
  case "$1" in
    --build) build=1 ;;
    --time) seconds=${2:?--time needs a value}; shift ;;
    --dir) dir=${2:?--dir needs a value}; shift ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fuzz.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
if ! [[ ${seconds} =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: --time: '${seconds}' is not a positive number of seconds" >&2
  exit 2
fi

readonly fuzzer="${dir}/tests/fuzz/launch_fuzzer"
readonly work="${dir}/fuzz"

# -O1 and line tables only: half the build time of -O2 -g, about the same executions per second.
build_fuzzer() {
  cmake -S . -B "${dir}" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -gline-tables-only' \
    -DPDLAUNCH_BUILD_FUZZERS=ON -DPDLAUNCH_SANITIZE=address,undefined -DPDLAUNCH_BUILD_TESTS=OFF \
    -DPDLAUNCH_WARNINGS_AS_ERRORS=ON &&
    cmake --build "${dir}" --target launch_fuzzer -j "$(nproc)"
}

if ((build)) && ! build_fuzzer; then
  echo "fuzz.sh: building ${fuzzer} failed" >&2
  exit 3
fi
if [[ ! -x ${fuzzer} ]]; then
  echo "fuzz.sh: ${fuzzer} not found; run with --build" >&2
  exit 3
fi

mkdir -p "${work}/corpus" "${work}/artifacts"
readonly log="${work}/fuzz.log"
marker=$(mktemp)
trap 'rm -f "${marker}"' EXIT

echo "fuzz.sh: fuzzing for ${seconds} s; log in ${log}"
status=0
# The first corpus directory receives the new inputs; the seeds are only read.
"${fuzzer}" -max_total_time="${seconds}" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
  -print_final_stats=1 -artifact_prefix="${work}/artifacts/" \
  "${extra[@]}" "${work}/corpus" tests/fuzz/corpus >"${log}" 2>&1 || status=$?

grep -E '^#[0-9]+[[:space:]]+DONE|^stat::number_of_executed_units|^stat::average_exec_per_sec' "${log}" || true
if ((status == 0)); then
  echo "fuzz.sh: no finding"
  exit 0
fi
tail -n 60 "${log}" >&2
mapfile -t found < <(find "${work}/artifacts" -type f -newer "${marker}")
if ((${#found[@]} == 0)); then
  echo "fuzz.sh: the fuzzer failed with status ${status} (no reproducer written; see ${log})" >&2
fi
for artifact in "${found[@]}"; do
  echo "fuzz.sh: FINDING, reproducer: ${artifact}" >&2
  echo "fuzz.sh: reproduce with: ${fuzzer} ${artifact}" >&2
done
exit 1
