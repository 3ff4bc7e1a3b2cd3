#!/usr/bin/env python3
"""Medians of a launcher's timeline from `perf trace -e arch_prctl,clone,exit_group` files.

    trace_timeline.py LAUNCHER_COMM RANK_COMM SKIP FILE.txt...

SKIP is the number of forks before the first rank's (1 for launch: its watchdog).

Times are in ms from the launcher's first arch_prctl (the dynamic loader setting up TLS, just
after exec). perf trace slows every traced process, children included: compare the phases of
two programs traced alike, not these times with untraced wall times.
"""

import re
import statistics
import sys

EVENT = re.compile(r"\s*([\d.]+) \(.*?\): (\S+)/(\d+) (\S+?)\(")


def timeline(path, launcher_comm, rank_comm, skip):
    main = start = exited = None
    clones, rank_exits = [], []
    with open(path) as f:
        for line in f:
            m = EVENT.match(line)
            if not m:
                continue
            t, comm, pid, call = float(m.group(1)), m.group(2), int(m.group(3)), m.group(4)
            if main is None and comm == launcher_comm:
                main = pid
            if pid == main and call == "arch_prctl" and start is None:
                start = t
            elif pid == main and call == "clone":
                clones.append(t)
            elif call == "exit_group":
                if pid == main:
                    exited = t
                elif comm == rank_comm:
                    rank_exits.append(t)
    return {"first rank fork": clones[skip] - start, "last fork": clones[-1] - start,
            "last rank exit": max(rank_exits) - start, "exit": exited - start}


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    skip = int(sys.argv[3])
    runs = [timeline(path, sys.argv[1], sys.argv[2], skip) for path in sys.argv[4:]]
    for key in runs[0]:
        print(f"{key:16s} {statistics.median(r[key] for r in runs):6.2f} ms")


if __name__ == "__main__":
    main()
