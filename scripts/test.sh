#!/usr/bin/env bash
# The whole check, as CI runs it, on a fresh Debian 12 (as root) or an already prepared machine:
#   1. install the Debian packages that are missing (nothing is downloaded otherwise), then
#      scripts/lint.sh (clang-format, shellcheck, pyflakes, codespell: seconds);
#   2. build/      g++, RelWithDebInfo, warnings as errors; clang-tidy over src/ (scripts/tidy.sh,
#                  at nice 19 beside the tests that follow);
#                  every CTest test (unit, process, e2e, torch,
#                  package: builds, installs and removes the Debian package),
#                  then the process and reliability labels again with PDLAUNCH_NO_CGROUP=1 (the
#                  subreaper path);
#   3. build-asan/ clang++, Debug with AddressSanitizer + UBSan; the unit, process and e2e tests;
#   4. build-fuzz/ clang++ with libFuzzer + ASan + UBSan; 60 s of scripts/fuzz.sh.
# Usage: bash scripts/test.sh [--quick]     (--quick skips steps 3 and 4)
# Exits non-zero if any step failed; the last line is a one-line summary.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

readonly PACKAGES=(build-essential cmake ninja-build libcli11-dev libspdlog-dev libfmt-dev libssl-dev
                   libboost1.81-dev nlohmann-json3-dev libgtest-dev googletest python3
                   python3-torch python3-yaml iproute2 procps clang libclang-rt-14-dev
                   etcd-server slurmctld slurmd slurm-client munge python3-jsonschema
                   help2man zsh bash-completion man-db lintian
                   clang-format clang-tidy shellcheck pyflakes3 codespell
                   python3-build python3-wheel python3-setuptools python3-venv)
readonly TEST_TIMEOUT=600  # seconds, for a test without its own TIMEOUT property
# Tests at once: they mostly wait on events (at -j2 the e2e label kept 21 % of 2 cores busy);
# a class whose latency bound a neighbour would skew is RUN_SERIAL (docs/testing.md). The
# sanitized tree stays at two: at six, an elastic node's record lapsed once mid-restart there
# (docs/testing.md).
readonly TEST_JOBS=6
readonly SANITIZED_TEST_JOBS=2
readonly FUZZ_SECONDS=60

quick=0
for arg in "$@"; do
  case "${arg}" in
    --quick) quick=1 ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument: ${arg}" >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/deps.sh
source scripts/deps.sh

# join <separator> <items...>
join() {
  local sep=$1 out=${2-}
  shift 2 || return 0
  local item
  for item in "$@"; do out+="${sep}${item}"; done
  echo "${out}"
}


# build_tree <dir> <cmake args...>: configure and build everything; returns cmake's status.
build_tree() {
  local dir=$1
  shift
  log "Configuring ${dir}/ ($*)"
  cmake -S . -B "${dir}" -G Ninja "$@" &&
    log "Building ${dir}/" &&
    cmake --build "${dir}" -j "$(nproc)"
}

# run_tests <dir> <jobs> <ctest args...>: returns ctest's status.
run_tests() {
  local dir=$1 jobs=$2
  shift 2
  log "Testing ${dir}/ (-j ${jobs} $*)"
  ctest --test-dir "${dir}" --output-on-failure -j "${jobs}" --timeout "${TEST_TIMEOUT}" "$@"
}

start=${SECONDS}
failed=()
summary=()

install_packages "${PACKAGES[@]}"

if bash scripts/lint.sh; then summary+=("lint ok"); else failed+=("lint"); fi

tidy_pid=
tidy_log=$(mktemp)
# On any way out, clang-tidy's process group (its xargs and clang-tidy children) goes too.
trap 'rm -f "${tidy_log}"; if [[ -n "${tidy_pid}" ]]; then kill -- "-${tidy_pid}" 2>/dev/null; fi' EXIT
if build_tree build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPDLAUNCH_WARNINGS_AS_ERRORS=ON \
  -DPDLAUNCH_SANITIZE= -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${RELEASE_FLAGS}"; then
  # clang-tidy is about 350 s of both cores, most of it parsing headers; the tests mostly wait
  # (the sanitized ones keep a quarter of 2 cores busy). So it runs beside them at the lowest
  # priority: a test's process that wakes takes a core from it at once. Its verdict is
  # collected at the end.
  log "clang-tidy over src/ (.clang-tidy), beside the tests at nice 19"
  # setsid: a process group to kill on the way out. Its own session is also an autogroup of
  # its own where the kernel has them (sched_autogroup_enabled), between which nice does not
  # count: so the autogroup gets nice 19 as well (a build beside it took 434 s instead of 237).
  # shellcheck disable=SC2016 # $$ is the session's shell, expanded there.
  setsid bash -c '{ echo 19 >"/proc/$$/autogroup"; } 2>/dev/null; exec nice -n 19 "$@"' tidy \
    bash scripts/tidy.sh build >"${tidy_log}" 2>&1 &
  tidy_pid=$!
  if run_tests build "${TEST_JOBS}"; then summary+=("build/ ok"); else failed+=("build/ tests"); fi
  # The process and reliability suites again on the other containment path: no cgroup, the
  # launcher as the subreaper of its descendants (docs/design.md, Containment).
  if PDLAUNCH_NO_CGROUP=1 run_tests build "${TEST_JOBS}" -L 'process|reliability'; then
    summary+=("build/ process and reliability without cgroup ok")
  else
    failed+=("build/ process and reliability without cgroup")
  fi
else
  failed+=("build/ build")
fi

if ((quick)); then
  summary+=("build-asan/ skipped (--quick)")
# clang++ here, g++ in build/: two compilers' warnings, and clang's Debug build is a quarter
# faster.
elif build_tree build-asan -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug \
  -DPDLAUNCH_WARNINGS_AS_ERRORS=ON \
  -DPDLAUNCH_SANITIZE=address,undefined -DPDLAUNCH_TEST_EACH_CASE=OFF; then
  # build/'s measured test times, so that ctest starts the longest tests first here too.
  if [[ -f build/Testing/Temporary/CTestCostData.txt ]]; then
    mkdir -p build-asan/Testing/Temporary
    cp build/Testing/Temporary/CTestCostData.txt build-asan/Testing/Temporary/
  fi
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Not the fork.* repeats of the process tests: this tree forks anyway; nor the two-node
  # searches of the auto tuner, 90 s of trials whose exchange code the unit and process
  # suites run here already (docs/testing.md, "The sanitizer build").
  if run_tests build-asan "${SANITIZED_TEST_JOBS}" -L 'unit|process|e2e|etcd|reliability|cgroup' -LE torch \
    -E '^fork[.]|^e2e[.]AutoTuner(Ips|Etcd)?TwoNodeTest$'; then
    summary+=("build-asan/ ok")
  else
    failed+=("build-asan/ tests")
  fi
else
  failed+=("build-asan/ build")
fi

# fuzz.sh prints the reproducer of a finding; status 3 is its build failing.
if ((quick)); then
  summary+=("build-fuzz/ skipped (--quick)")
else
  log "Fuzzing in build-fuzz/ for ${FUZZ_SECONDS} s"
  fuzz_status=0
  bash scripts/fuzz.sh --build --time "${FUZZ_SECONDS}" || fuzz_status=$?
  case "${fuzz_status}" in
    0) summary+=("build-fuzz/ ok") ;;
    3) failed+=("build-fuzz/ build") ;;
    *) failed+=("build-fuzz/ fuzzing") ;;
  esac
fi

if [[ -n "${tidy_pid}" ]]; then
  log "Waiting for clang-tidy"
  tidy_status=0
  wait "${tidy_pid}" || tidy_status=$?
  tidy_pid=
  if ((tidy_status == 0)); then
    summary+=("tidy ok")
    tail -n 1 "${tidy_log}"
  else
    cat "${tidy_log}"
    failed+=("tidy")
  fi
fi

log "Done"
elapsed=$((SECONDS - start))
if ((${#failed[@]})); then
  printf '\ntest.sh: FAIL (%s failed) after %ds\n' "$(join ', ' "${failed[@]}")" "${elapsed}"
  exit 1
fi
printf '\ntest.sh: PASS (%s) in %ds\n' "$(join ', ' "${summary[@]}")" "${elapsed}"
