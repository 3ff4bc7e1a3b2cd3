#!/usr/bin/env python3
"""Master rendezvous figures for docs/performance.md (issue #9 targets), on loopback addresses.

    python3 bench/rendezvous.py [--launch build/launch] [--runs 5]

1. last node: a host waits, then a second launcher starts; its own log says how long after its
   start the world was formed ("all 2 nodes joined in X s"). Target <= 50 ms.
2. 64 launchers on 127.0.0.2-65, one /bin/true rank each, started at once: the slowest node's
   "joined in" time and the wall time until every launcher exited 0. Target <= 2 s.
3. fail-fast: 2 launchers, a rank on node B exits 7 after 1 s; the gap between B's ABORT line and
   A's first SIGTERM, from the two launchers' own log stamps. Target median <= 100 ms.
Ports come from the 29500s; run it on an otherwise idle machine.
"""
import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOINED = re.compile(r"all \d+ nodes joined in ([0-9.]+) s")
STAMP = re.compile(r"^\w+ \S+ (\d+):(\d+):(\d+),(\d+) ")


def stamp_of(text, pattern):
    for line in text.splitlines():
        m = STAMP.match(line)
        if m and re.search(pattern, line):
            h, mi, s, ms = (int(g) for g in m.groups())
            return h * 3600 + mi * 60 + s + ms / 1000
    raise RuntimeError(f"no {pattern!r} in:\n{text}")


def last_node(launch, port, work):
    host = subprocess.Popen([launch, "--master", f"127.0.0.1:{port}", "--nnodes", "2",
                             "--log_dir", work / "h", "/bin/true"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    p = subprocess.run([launch, "--master", f"127.0.0.1:{port}", "--nnodes", "2", "--log_dir",
                        work / "p", "/bin/true"], capture_output=True, text=True)
    host.wait()
    return float(JOINED.search(p.stderr).group(1)) * 1000


def sixty_four(launch, port, work, n=64):
    start = time.monotonic()
    procs = [subprocess.Popen([launch, "--master", f"127.0.0.2:{port}", "--nnodes", str(n),
                               "--host", f"127.0.0.{i + 2}", "--log_dir", work / f"l{i}",
                               "/bin/true"], stdout=subprocess.DEVNULL,
                              stderr=open(work / f"e{i}", "w")) for i in range(n)]
    codes = {p.wait() for p in procs}
    wall = time.monotonic() - start
    joined = max(float(JOINED.search((work / f"e{i}").read_text()).group(1)) for i in range(n))
    assert codes == {0}, codes
    return joined * 1000, wall * 1000


def fail_fast(launch, port, work):
    py = "/usr/bin/python3"
    rank = [py, "-c", "import os,sys,time; time.sleep(1); "
                      "sys.exit(7 if os.environ['PADDLE_TRAINER_ID']=='1' else 0) "
                      "if os.environ['PADDLE_TRAINER_ID']=='1' else time.sleep(30)"]
    a = subprocess.Popen([launch, "--master", f"127.0.0.1:{port}", "--nnodes", "2",
                          "--log_dir", work / "a", *rank], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    b = subprocess.Popen([launch, "--master", f"127.0.0.1:{port}", "--nnodes", "2",
                          "--log_dir", work / "b", *rank], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    ea, eb = a.communicate()[1], b.communicate()[1]
    aborted, stopped = (ea, eb) if "ABORT!!!" in ea else (eb, ea)
    return (stamp_of(stopped, "terminate process group") - stamp_of(aborted, "ABORT!!!")) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--launch", default=str(Path(__file__).resolve().parents[1] / "build/launch"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        last = [last_node(args.launch, 29500 + i, work) for i in range(args.runs)]
        big = [sixty_four(args.launch, 29520 + i, work) for i in range(args.runs)]
        fast = [fail_fast(args.launch, 29540 + i, work) for i in range(args.runs)]
    print(f"last node start -> world formed: median {statistics.median(last):.1f} ms, "
          f"max {max(last):.1f} ms (target <= 50)")
    print(f"64 launchers: slowest node's world formed {statistics.median(b[0] for b in big):.0f} ms "
          f"median, every launcher exited {statistics.median(b[1] for b in big):.0f} ms median "
          f"(target <= 2000)")
    print(f"cross-node fail-fast (B's ABORT -> A's SIGTERM): median "
          f"{statistics.median(fast):.1f} ms, max {max(fast):.1f} ms (target <= 100)")


if __name__ == "__main__":
    sys.exit(main())
