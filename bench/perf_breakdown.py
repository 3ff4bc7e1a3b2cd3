#!/usr/bin/env python3
"""Averages `perf report --children` over several perf.data files of one program.

    perf_breakdown.py [--match REGEX] [--min PERCENT] FILE.data...

Each file is one run recorded with `perf record -i --call-graph dwarf` (the launcher process
only, not its children). Prints each symbol's inclusive share of the run's samples, averaged
over the runs, for the symbols matching REGEX (default: pdlaunch, CLI, spdlog, the dynamic
loader, fork and exec), largest first.
"""

import argparse
import collections
import re
import subprocess

LINE = re.compile(r"\s+([\d.]+)%\s+([\d.]+)%\s+\[(.)\]\s+(.*)")
DEFAULT_MATCH = r"pdlaunch::|CLI::|spdlog::|_dl_start$|_dl_relocate_object|__libc_fork|execve$"


def inclusive_shares(path):
    report = subprocess.run(["perf", "report", "-i", path, "--children", "--sort", "sym",
                             "--stdio", "-g", "none"], capture_output=True, text=True).stdout
    shares = {}
    for line in report.splitlines():
        m = LINE.match(line)
        if m:
            shares[m.group(4).strip()] = float(m.group(1))
    return shares


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--match", default=DEFAULT_MATCH)
    p.add_argument("--min", type=float, default=1.0)
    p.add_argument("files", nargs="+")
    args = p.parse_args()
    total = collections.defaultdict(float)
    for path in args.files:
        for symbol, share in inclusive_shares(path).items():
            total[symbol] += share / len(args.files)
    match = re.compile(args.match)
    print("| inclusive % of the launcher's own CPU | symbol |\n|---|---|")
    for symbol, share in sorted(total.items(), key=lambda item: -item[1]):
        if share >= args.min and match.search(symbol):
            print(f"| {share:.1f} | `{symbol[:110]}` |")


if __name__ == "__main__":
    main()
