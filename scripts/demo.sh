#!/usr/bin/env bash
# A two-minute tour: install what is missing, build build/launch, run a 2-process CPU job and
# show its logs, then (when /usr/bin/python3 has PyTorch) a real 2-rank gloo all-reduce.
# Usage: bash scripts/demo.sh        (logs go to build/demo/, the checkout stays clean)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# What building needs (PyTorch is optional here; scripts/test.sh installs it).
readonly PACKAGES=(build-essential cmake ninja-build libcli11-dev libspdlog-dev libfmt-dev libssl-dev
                   libboost1.81-dev nlohmann-json3-dev libgtest-dev googletest python3
                   iproute2 procps)
readonly SYSTEM_PYTHON=/usr/bin/python3
readonly DEMO=build/demo

# shellcheck source=scripts/deps.sh
source scripts/deps.sh

# Prints and runs a command.
show() {
  printf '\n$ %s\n' "$*"
  "$@"
}

show_logs() {
  local dir=$1 file
  show ls -l "${dir}"
  for file in "${dir}"/*; do
    printf '\n--- %s ---\n' "${file}"
    cat "${file}"
    echo
  done
}

install_packages "${PACKAGES[@]}"

log "Building build/launch"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPDLAUNCH_WARNINGS_AS_ERRORS=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${RELEASE_FLAGS}" >/dev/null
cmake --build build --target launch -j "$(nproc)"
mkdir -p "${DEMO}"

log "A 2-process CPU job: each rank prints its environment (rank 0's lines are echoed live)"
show build/launch --log_overwrite --log_dir "${DEMO}/log" --nproc_per_node 2 examples/print_env.py
log "The log directory: one workerlog per rank, and the endpoint list"
show_logs "${DEMO}/log"

if "${SYSTEM_PYTHON}" -c 'import torch.distributed' 2>/dev/null; then
  log "A real PyTorch gloo all-reduce over 2 ranks"
  show env PADDLE_LAUNCH_PYTHON="${SYSTEM_PYTHON}" build/launch --log_overwrite \
    --log_dir "${DEMO}/log-torch" --nproc_per_node 2 examples/torch_allreduce.py
  show_logs "${DEMO}/log-torch"
else
  log "Skipping the PyTorch example: ${SYSTEM_PYTHON} cannot import torch" \
    "(apt-get install python3-torch)"
fi

log "Done. More: build/launch --help, examples/README.md, docs/"
