#!/usr/bin/env python3
"""What <job_id>.gpu.log costs the launcher (issue #27): one GPU-mode job of 2 ranks that sleep,
run twice (--enable_gpu_log true, false) for --seconds each, at PDLAUNCH_GPU_LOG_PERIOD=--period;
reports the launcher's own CPU time (user+sys of its process, from /proc/<pid>/stat just before
it exits, read through a rank that outlives the others) as % of one core, and the samples taken.

    python3 bench/gpu_log_cost.py [--launch build/launch] [--seconds 30] [--period 1]

nvidia-smi is a fake on PATH (a shell script printing recorded rows): the figure is the
launcher's work per sample (spawn, pidfd, read, write), not nvidia-smi's own CPU, which on a GPU
machine is tens of milliseconds a call and is the same under Paddle's watcher.
"""
import argparse
import os
import subprocess
import tempfile
from pathlib import Path

FAKE = """#!/bin/sh
case "$*" in
  *query-gpu=index,uuid*) printf '0, GPU-a, 550, H200, 1, Disabled, Disabled\\n1, GPU-b, 550, H200, 2, Disabled, Disabled\\n' ;;
  *query-compute-apps*) ;;
  *) printf '0, 45, 143771, 2048, 141723, 2026/11/26 20:00:00.000\\n1, 55, 143771, 4096, 139675, 2026/11/26 20:00:00.000\\n' ;;
esac
"""

# Rank 0 samples its launcher's CPU time (the launcher is its parent) just before it exits.
RANK = """#!/bin/sh
sleep "$SECONDS_TO_RUN"
if [ "$PADDLE_TRAINER_ID" = 0 ]; then
  cut -d' ' -f14,15 /proc/$PPID/stat > "$OUT/cpu"
fi
"""


def run(launch, work, seconds, period, enabled):
    env = dict(os.environ, PATH=f"{work}/bin:{os.environ['PATH']}", CUDA_VISIBLE_DEVICES="0,1",
               PDLAUNCH_GPU_LOG_PERIOD=str(period), SECONDS_TO_RUN=str(seconds), OUT=str(work))
    log = work / ("log_on" if enabled else "log_off")
    subprocess.run([launch, "--log_dir", str(log), "--enable_gpu_log", str(enabled).lower(),
                    "--job_id", "bench", str(work / "rank.sh")], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    utime, stime = (int(x) for x in (work / "cpu").read_text().split())
    cpu = (utime + stime) / os.sysconf("SC_CLK_TCK")
    gpu_log = log / "bench.gpu.log"
    samples = 0
    if gpu_log.exists():
        rows = gpu_log.read_text().split("\n\n")[-1].count("\n") - 1
        samples = rows // 2  # Two GPUs, a row each per sample.
    return cpu, samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--launch", default="build/launch")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--period", type=float, default=1)
    args = parser.parse_args()
    launch = str(Path(args.launch).resolve())
    with tempfile.TemporaryDirectory(prefix="pdlaunch-gpulog-") as tmp:
        work = Path(tmp)
        (work / "bin").mkdir()
        (work / "bin" / "nvidia-smi").write_text(FAKE)
        (work / "bin" / "nvidia-smi").chmod(0o755)
        (work / "rank.sh").write_text(RANK)
        (work / "rank.sh").chmod(0o755)
        off, _ = run(launch, work, args.seconds, args.period, False)
        on, samples = run(launch, work, args.seconds, args.period, True)
    print("| gpu log | launcher CPU over the run | % of one core | samples |")
    print("|---|---|---|---|")
    print(f"| off | {off * 1000:.0f} ms | {off / args.seconds * 100:.3f} % | 0 |")
    print(f"| on, every {args.period:g} s | {on * 1000:.0f} ms | {on / args.seconds * 100:.3f} % "
          f"| {samples} |")
    print(f"\nThe sampler: {(on - off) / args.seconds * 100:.3f} % of one core "
          f"({(on - off) * 1000 / max(samples, 1):.2f} ms a sample; clock tick "
          f"{1000 / os.sysconf('SC_CLK_TCK'):.0f} ms)")


if __name__ == "__main__":
    main()
