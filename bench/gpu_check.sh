#!/bin/bash
# What fake nvidia-smi programs cannot prove, on a machine with a real NVIDIA GPU and PyTorch:
# the device probe, <job_id>.gpu.log, --numa_binding, a torch NCCL all-reduce started by launch
# (side by side with torchrun), a failing GPU rank, SIGTERM to the launcher while a rank holds
# GPU memory, and the launcher's start-up with the real nvidia-smi.
#
#   bash bench/gpu_check.sh [LAUNCH] [OUT_DIR]      # defaults: build/launch, /tmp/gpu_check
#
# Each step prints its figures and carries on when one fails; OUT_DIR keeps the log, the GPU
# log and the run report. docs/performance.md ("On a real GPU") holds the figures.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LAUNCH=$(realpath "${1:-$ROOT/build/launch}")
OUT_DIR=$(realpath -m "${2:-/tmp/gpu_check}")
PY=${PYTHON:-python3}
mkdir -p "$OUT_DIR"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export PADDLE_LAUNCH_PYTHON="$PY"
unset CUDA_VISIBLE_DEVICES

step() { printf '\n=== %s\n' "$*"; }

# median_ms N COMMAND...: the median wall time of N runs, in ms (output to /dev/null).
median_ms() {
  "$PY" - "$@" <<'EOF'
import subprocess, sys, time
n, cmd = int(sys.argv[1]), sys.argv[2:]
times = []
for _ in range(n):
    start = time.perf_counter()
    code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    times.append((time.perf_counter() - start) * 1000)
times.sort()
print(f"{times[n // 2]:.2f} ms median of {n} (min {times[0]:.2f}, max {times[-1]:.2f}), "
      f"exit {code}: {' '.join(cmd)}")
EOF
}

# A rank that says where it runs: its GPU, CPUs and memory policy.
cat >"$WORK/where.py" <<'EOF'
import os
fields = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
policy = open("/proc/self/numa_maps").readline().split()[1] if os.path.exists(
    "/proc/self/numa_maps") else "?"
print(f"rank {os.environ.get('PADDLE_TRAINER_ID')}: FLAGS_selected_gpus="
      f"{os.environ.get('FLAGS_selected_gpus')} CUDA_VISIBLE_DEVICES="
      f"{os.environ.get('CUDA_VISIBLE_DEVICES')} Cpus_allowed_list="
      f"{fields['Cpus_allowed_list'].strip()} first mapping's policy={policy}", flush=True)
EOF

# A rank that takes GPU memory, says so, then fails (FAIL=1) or waits to be stopped.
cat >"$WORK/hold.py" <<'EOF'
import os, signal, sys, time
import torch
x = torch.empty(int(os.environ.get("HOLD_MIB", "2048")) * 1024 * 1024, dtype=torch.uint8,
                device="cuda:0")
torch.cuda.synchronize()
print(f"holding {x.numel() >> 20} MiB on {torch.cuda.get_device_name(0)}", flush=True)
open(os.environ["READY_FILE"], "w").close()
if os.environ.get("FAIL") == "1":
    os.kill(os.getpid(), signal.SIGSEGV)
time.sleep(600)
EOF

gpu_pids() { nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr -d ' '; }

step "the machine"
uname -r
grep PRETTY_NAME /etc/os-release
ldd --version | head -1
nodes=(/sys/devices/system/node/node[0-9]*)
echo "CPUs: $(nproc); NUMA nodes: ${#nodes[@]}"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv
nvidia-smi topo -m 2>&1 | head -8
for bus in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader); do
  address=$(echo "${bus#0000}" | tr 'A-F' 'a-f')
  echo "GPU $bus: numa_node $(cat "/sys/bus/pci/devices/${address}/numa_node" 2>&1)"
done
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"GPUs", torch.cuda.device_count()); print("nccl", torch.cuda.nccl.version())'
"$LAUNCH" --version
ldd "$LAUNCH"
median_ms 10 nvidia-smi -L

step "the probe: no device flag, no CUDA_VISIBLE_DEVICES"
(cd "$WORK" && "$LAUNCH" --dry_run where.py) | grep -E '"device_mode"|"world_size"|FLAGS_selected_gpus'
(cd "$WORK" && "$LAUNCH" --log_dir "$WORK/where_log" where.py 2>&1) | grep -E '^rank|ERROR'
(cd "$WORK" && "$LAUNCH" --gpus 0 --log_dir "$WORK/where_legacy" where.py 2>&1) | grep -E '^rank|ERROR'

step "start-up: launch of one trivial rank (/bin/true), torchrun side by side"
median_ms 20 "$LAUNCH" --log_dir "$WORK/t1" /bin/true
CUDA_VISIBLE_DEVICES=0 median_ms 20 "$LAUNCH" --log_dir "$WORK/t2" /bin/true
median_ms 20 "$LAUNCH" --log_dir "$WORK/t3" --enable_gpu_log false /bin/true
median_ms 5 "$PY" -m torch.distributed.run --nproc_per_node 1 --no_python /bin/true

step "NCCL all-reduce through launch (GPU log every 0.2 s, --report)"
mkdir -p "$WORK/nccl"
start=$(date +%s%N)
(cd "$WORK/nccl" && PDLAUNCH_GPU_LOG_PERIOD=0.2 "$LAUNCH" --log_dir log --report report.json \
  "$ROOT/examples/torch_allreduce.py" --backend nccl --mib 256 2>&1) | tail -5
echo "exit ${PIPESTATUS[0]}, wall $((($(date +%s%N) - start) / 1000000)) ms"
cp "$WORK"/nccl/log/*.gpu.log "$WORK/nccl/report.json" "$OUT_DIR/" 2>/dev/null
head -12 "$WORK"/nccl/log/*.gpu.log
"$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print("device_usage", r.get("device_usage"))' \
  "$WORK/nccl/report.json"

step "the same all-reduce through torchrun"
start=$(date +%s%N)
(cd "$WORK/nccl" && "$PY" -m torch.distributed.run --nproc_per_node 1 \
  "$ROOT/examples/torch_allreduce.py" --backend nccl --mib 256 2>&1) | tail -3
echo "exit ${PIPESTATUS[0]}, wall $((($(date +%s%N) - start) / 1000000)) ms"

step "--numa_binding node and exclusive"
for binding in node exclusive; do
  (cd "$WORK" && "$LAUNCH" --numa_binding "$binding" --log_dir "$WORK/numa_$binding" \
    --log_level INFO where.py 2>&1) | grep -iE 'numa|^rank|ERROR'
done

step "a GPU rank dies holding 2 GiB: ABORT, exit code, the GPU freed"
rm -f "$WORK/ready"
(cd "$WORK" && FAIL=1 READY_FILE="$WORK/ready" "$LAUNCH" --log_dir "$WORK/fail" hold.py 2>&1) |
  grep -E 'ABORT|holding|exit|Segmentation|signal' | head -6
echo "exit ${PIPESTATUS[0]}; compute processes left on the GPU: [$(gpu_pids)]"

step "SIGTERM to the launcher while its rank holds 2 GiB: time until the GPU is free"
rm -f "$WORK/ready"
(cd "$WORK" && READY_FILE="$WORK/ready" exec "$LAUNCH" --log_dir "$WORK/term" hold.py \
  >"$WORK/term.out" 2>&1) &
launcher=$!
for _ in $(seq 600); do [ -e "$WORK/ready" ] || ! kill -0 "$launcher" 2>/dev/null && break; sleep 0.1; done
echo "before: compute processes [$(gpu_pids)]"
start=$(date +%s%N)
kill -TERM "$launcher"
wait "$launcher"
code=$?
stopped=$((($(date +%s%N) - start) / 1000000))
for _ in $(seq 300); do [ -z "$(gpu_pids)" ] && break; sleep 0.01; done
echo "launcher exit $code after ${stopped} ms; GPU free after $((($(date +%s%N) - start) / 1000000)) ms; left: [$(gpu_pids)]"
tail -3 "$WORK/term.out"

step "done"
cp "$0" "$OUT_DIR/" 2>/dev/null
true
