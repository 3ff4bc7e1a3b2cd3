#!/usr/bin/env python3
"""--ips figures for docs/performance.md (issue #37 targets), on loopback addresses.

    python3 bench/ips_meet.py [--launch build/launch] [--runs 10]

1. plan: `launch --dry_run --ips <N addresses>` (N = 1 000 and 9 000; this node the first),
   wall time. Target: 9 000 in <= 0.5 s.
2. meeting: two legacy --ips launchers (127.0.0.1 and 127.0.0.2, one /bin/true rank each)
   started together; each logs "all 2 nodes joined in X s" from its own start: the larger X of
   the two is the cost of the meeting, handshake included, until the ranks may start.
   Target <= 50 ms.
3. fail as one: the same two nodes, two ranks each; rank 3 (node B) exits 7 after 1 s, the
   others sleep 60 s. The gap between B's ABORT line and A's first "terminate process group"
   (SIGTERM to its ranks), from the two launchers' own log stamps; and A's exit after B's
   ABORT. Target <= heartbeat + 1 s (10 s + 1 s by default).
The handshake port 6768 of 127.0.0.1 and the fixed ports 6070-6072 of both addresses must be
free: run it on an otherwise idle machine, not beside the test suite.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rendezvous import JOINED, stamp_of  # The launchers' log stamps, read the same way.

RANK_SH = """#!/bin/sh
if [ "$PADDLE_TRAINER_ID" = 3 ]; then sleep 1; exit 7; fi
exec sleep 60
"""


def plan(launch, work, nodes, runs):
    ips = ["127.0.0.1"] + [f"10.{i // 250}.{i % 250}.1" for i in range(nodes - 1)]
    times = []
    for _ in range(runs):
        start = time.monotonic()
        p = subprocess.run([launch, "--dry_run", "--ips", ",".join(ips), "--host", "127.0.0.1",
                            "/bin/true"], cwd=work, capture_output=True, text=True)
        times.append((time.monotonic() - start) * 1000)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
    return times


def start_pair(launch, work, args):
    procs = []
    for node in (0, 1):
        out = open(work / f"n{node}.err", "w")
        procs.append(subprocess.Popen(
            [launch, "--ips", "127.0.0.1,127.0.0.2", "--host", f"127.0.0.{node + 1}",
             "--log_dir", work / f"log{node}"] + args,
            cwd=work, stdout=subprocess.DEVNULL, stderr=out))
        out.close()
    return procs


def meeting(launch, work):
    procs = start_pair(launch, work, ["--nproc_per_node", "1", "/bin/true"])
    codes = [p.wait(timeout=60) for p in procs]
    if codes != [0, 0]:
        raise RuntimeError(f"exit codes {codes}: {(work / 'n1.err').read_text()}")
    return max(float(JOINED.search((work / f"n{n}.err").read_text()).group(1)) * 1000
               for n in (0, 1))


def fail_as_one(launch, work):
    script = work / "rank.sh"
    script.write_text(RANK_SH)
    script.chmod(0o755)
    procs = start_pair(launch, work, ["--nproc_per_node", "2", script])
    codes = [p.wait(timeout=120) for p in procs]
    a, b = ((work / f"n{n}.err").read_text() for n in (0, 1))
    if codes != [7, 7]:
        raise RuntimeError(f"exit codes {codes}")
    abort = stamp_of(b, r"ABORT!!! Out of all")
    stopped = stamp_of(a, r"terminate process group")
    exited = stamp_of(a, r"job failed")
    return (stopped - abort) * 1000, (exited - abort) * 1000


def summary(name, values, unit="ms"):
    return (f"| {name} | {statistics.median(values):.1f} {unit} | {max(values):.1f} {unit} | "
            f"{len(values)} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launch", default=str(Path(__file__).resolve().parents[1] / "build"
                                                / "launch"))
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for nodes in (1000, 9000):
            rows.append(summary(f"--ips plan, {nodes} addresses (dry run, wall)",
                                plan(args.launch, work, nodes, args.runs)))
        rows.append(summary("meeting, 2 nodes started together (slower node's join)",
                            [meeting(args.launch, work) for _ in range(args.runs)]))
        gaps = [fail_as_one(args.launch, work) for _ in range(max(3, args.runs // 2))]
        rows.append(summary("rank fails on B -> A's ranks get SIGTERM", [g[0] for g in gaps]))
        rows.append(summary("rank fails on B -> A's launcher done", [g[1] for g in gaps]))
    print("| figure | median | max | runs |\n|---|---|---|---|")
    print("\n".join(rows))
    print(f"\n{os.uname().nodename}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
