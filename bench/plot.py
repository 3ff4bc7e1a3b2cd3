#!/usr/bin/env python3
"""Draws the launch-overhead comparison of results.json as a PNG (log-scale grouped bars).

    plot.py RESULTS_JSON OUT_PNG

Uses gnuplot when installed, else matplotlib; exits 1 when neither is available.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile


def overhead_table(results):
    """(tools in order of appearance, ranks, {(tool, ranks): median ms})."""
    tools, ranks, median = [], [], {}
    for row in results["overhead"]:
        if row["tool"] not in tools:
            tools.append(row["tool"])
        if row["ranks"] not in ranks:
            ranks.append(row["ranks"])
        median[(row["tool"], row["ranks"])] = row["median_ms"]
    return tools, ranks, median


def plot_gnuplot(tools, ranks, median, out):
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "overhead.dat")
        with open(data, "w") as f:
            f.write("N " + " ".join(f'"{t}"' for t in tools) + "\n")
            for n in ranks:
                values = [median.get((t, n)) for t in tools]
                f.write(f'"{n}" ' + " ".join("NaN" if v is None else str(v) for v in values) + "\n")
        columns = ", ".join(f"'{data}' using {i + 2}:xtic(1) title columnheader"
                            for i in range(len(tools)))
        script = f"""
set terminal pngcairo size 720,420 font ',9' noenhanced
set output '{out}'
set title 'Launch overhead: N ranks of /bin/true (median wall time)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [0.5:*]
set ylabel 'ms (log scale)'
set xlabel 'ranks (N)'
set key below horizontal
set grid ytics
plot {columns}
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


def plot_matplotlib(tools, ranks, median, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.2, 4.0), dpi=100)
    width = 0.8 / len(tools)
    for i, tool in enumerate(tools):
        xs = [j + i * width for j in range(len(ranks))]
        ax.bar(xs, [median.get((tool, n)) or 0 for n in ranks], width, label=tool)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(ranks))], [str(n) for n in ranks])
    ax.set_yscale("log")
    ax.set_xlabel("ranks (N)")
    ax.set_ylabel("ms (log scale)")
    ax.set_title("Launch overhead: N ranks of /bin/true (median wall time)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        results = json.load(f)
    if "overhead" not in results:
        sys.exit("plot.py: no overhead section in " + sys.argv[1])
    table = overhead_table(results)
    out = os.path.abspath(sys.argv[2])
    if shutil.which("gnuplot"):
        plot_gnuplot(*table, out)
    else:
        try:
            plot_matplotlib(*table, out)
        except ImportError:
            sys.exit("plot.py: neither gnuplot nor matplotlib is installed")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
