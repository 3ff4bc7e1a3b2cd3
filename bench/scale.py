#!/usr/bin/env python3
"""The master rendezvous at scale (issue #26), N simulated nodes on one machine.

    python3 bench/scale.py [--launch build/launch] [--nodes 64,256,512,1024] [--idle 10]

Each node is a launcher with its own loopback address (--host 127.1.x.y, --rank i) and one rank,
a shell script that stamps its start and then sleeps; rank 0's launcher hosts the master on
127.0.0.1. Per N it reports:
  formed     the last launcher started -> the last rank started (every rank's own stamp);
  host cpu   the hosting launcher's CPU (user+sys) while every rank sleeps, in % of one core;
  on the wire bytes sent on the loopback interface (requests and answers, all nodes) from the
             first launcher's start until the world formed;
  retried    nodes whose log says "master not ready";
  fail-fast  a second run in which rank N-1 exits 7 once every rank started: its ABORT line ->
             the last launcher exited.
The host's launcher runs at nice -20: on a real cluster it has cores of its own, here it shares
two with every other launcher and rank (at 2,048 nodes, niced 0, it gets too little CPU to answer
and the nodes give up on it after --heartbeat_timeout). The nodes' log directories are on tmpfs.
--heartbeat_timeout grows past 640 nodes (heartbeat_timeout() says why).
Limits it raises for the run (the product relies on none of them): this process's RLIMIT_NOFILE
to its hard limit. No sysctl: the launchers need no inotify instance (the console echo uses
dnotify), so fs.inotify.max_user_instances (128 by default) stays as it is. 127.0.0.0/8 is local
on Linux.
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RANK = """#!/bin/sh
date +%s.%N > "$STAMPS/stamp.$PADDLE_TRAINER_ID"
if [ -n "$FAIL_RANK" ] && [ "$PADDLE_TRAINER_ID" = "$FAIL_RANK" ]; then
  while [ "$(ls "$STAMPS" | wc -l)" -lt "$PADDLE_TRAINERS_NUM" ]; do sleep 0.1; done
  date +%s.%N > "$STAMPS/fail"
  exit 7
fi
sleep "$HOLD"
"""


def host_of(i):
    return f"127.1.{i // 250}.{i % 250 + 1}"


def heartbeat_timeout(n):
    """10 s (the default) up to 640 nodes, then n / 64 s.

    Once the world forms, every simulated node starts its rank at the same moment: at 2,048 nodes
    that is some 8,000 processes on the two cores (load average ~240), and a launcher can wait
    more than 10 s for the CPU to send its next heartbeat, so the host rightly declares it lost.
    On a real cluster each node has its own cores; the bench measures the master, not that storm.
    """
    return max(10, n // 64)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loopback_bytes():
    return int(Path("/sys/class/net/lo/statistics/tx_bytes").read_text())


def read_stamp(path):
    """The time in a stamp file, or None while it is empty or cut short (a rank stopped
    mid-write, or not yet done writing): such a rank has not started as far as the run counts."""
    try:
        return float(path.read_text())
    except (OSError, ValueError):
        return None


def stamps_written(stamps):
    return [t for t in (read_stamp(p) for p in stamps.glob("stamp.*")) if t is not None]


def run(launch, n, port, work, hold, fail_rank=None):
    stamps = work / "stamps"
    shutil.rmtree(work, ignore_errors=True)
    stamps.mkdir(parents=True)
    rank = work / "rank.sh"
    rank.write_text(RANK)
    rank.chmod(0o755)
    env = dict(os.environ, STAMPS=str(stamps), HOLD=str(hold))
    if fail_rank is not None:
        env["FAIL_RANK"] = str(fail_rank)
    procs = []
    last_start = 0.0
    lo_before = loopback_bytes()
    for i in range(n):
        last_start = time.time()
        log = open(work / f"node{i}.log", "wb")
        procs.append(subprocess.Popen(
            [launch, "--host", host_of(i), "--rank", str(i), "--master", f"127.0.0.1:{port}",
             "--nnodes", str(n), "--nproc_per_node", "1", "--rendezvous_timeout", "300",
             "--heartbeat_timeout", str(heartbeat_timeout(n)),
             "--log_dir", str(work / f"l{i}"), str(rank)],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        log.close()
        if i == 0:
            # On a real cluster the host has its own cores; here it shares two with every
            # other launcher and rank, so it gets the scheduler weight of about 90 launchers.
            os.setpriority(os.PRIO_PROCESS, procs[0].pid, -20)
            time.sleep(0.3)  # The host serves before the others knock.
    host = procs[0].pid
    deadline = time.time() + 300
    sent = None
    while len(stamps_written(stamps)) < n and time.time() < deadline:
        if any(p.poll() not in (None, 0) for p in procs):
            break
        time.sleep(0.05)
    written = stamps_written(stamps)
    ranks = len(written)
    formed = None
    if ranks == n:
        sent = loopback_bytes() - lo_before
        formed = max(written) - last_start
    cpu = None
    if ranks == n and fail_rank is None:
        time.sleep(1)
        before, t0 = cpu_seconds(host), time.time()
        time.sleep(max(1.0, hold - 3))
        cpu = (cpu_seconds(host) - before) / (time.time() - t0) * 100
    codes = [p.wait(timeout=600) for p in procs]
    exited = time.time()
    retried = sum("master not ready" in (work / f"node{i}.log").read_text(errors="replace")
                  for i in range(n))
    fail_to_exit = None
    failed_at = read_stamp(stamps / "fail") if fail_rank is not None else None
    if failed_at is not None:
        fail_to_exit = exited - failed_at
    return dict(n=n, ranks=ranks, formed=formed, cpu=cpu, sent=sent, retried=retried,
                nonzero=sum(c != 0 for c in codes), fail_to_exit=fail_to_exit,
                codes=sorted(set(codes)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--launch", default="build/launch")
    parser.add_argument("--nodes", default="64,256,1024,2048")
    parser.add_argument("--idle", type=float, default=10, help="seconds the ranks sleep")
    parser.add_argument("--port", type=int, default=29650)
    args = parser.parse_args()
    launch = str(Path(args.launch).resolve())
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit[1], limit[1]))
    print("| N | formed | host CPU, ranks idle | loopback bytes until formed | nodes that retried "
          "| rank fails → every launcher exited |")
    print("|---|---|---|---|---|---|")
    # The nodes' log directories on tmpfs: a thousand simulated nodes creating their logs
    # in one ext4 directory tree measure ext4's inode allocator, not the launcher.
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="pdlaunch-scale-", dir=shm) as tmp:
        for k, n in enumerate(int(x) for x in args.nodes.split(",")):
            ok = run(launch, n, args.port + 2 * k, Path(tmp) / "ok", args.idle)
            bad = run(launch, n, args.port + 2 * k + 1, Path(tmp) / "bad", 60,
                      fail_rank=n - 1)
            formed = f"{ok['formed']:.2f} s" if ok["formed"] is not None else \
                (f"never ({ok['ranks']} of {n} ranks started, {ok['nonzero']} launchers failed; "
                 f"exit codes {ok['codes']}; logs in the run's node*.log)")
            cpu = f"{ok['cpu']:.1f} %" if ok["cpu"] is not None else "–"
            sent = f"{ok['sent'] / 1e6:.1f} MB" if ok["sent"] is not None else "–"
            fail = f"{bad['fail_to_exit']:.2f} s" if bad["fail_to_exit"] is not None else "–"
            print(f"| {n} | {formed} | {cpu} | {sent} | {ok['retried']} | {fail} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
