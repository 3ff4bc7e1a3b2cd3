#!/usr/bin/env python3
"""Draws the launch-overhead comparison of results.json as a PNG (log-scale grouped bars) and,
when the results have a scale section, the processes reported over time as a second PNG.

    plot.py RESULTS_JSON OUT_PNG [SCALE_PNG]

Uses gnuplot when installed, else matplotlib; exits 1 when neither is available, or when the
results have neither section.
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
    # A tool without a single value (mpirun hung at every N measured) has no bar to draw.
    tools = [t for t in tools if any(median.get((t, n)) is not None for n in ranks)]
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


def scale_curves(results):
    """{tool: sorted ms after start at which each process reported} of the median runs."""
    return {row["tool"]: row["curve_ms_of_median_run"] for row in results["scale"]["rows"]
            if row.get("curve_ms_of_median_run")}


def scale_title(results):
    scale = results["scale"]
    return (f"{scale['servers']} servers + {scale['workers']} workers: "
            "processes started over time (median run)")


def plot_scale_gnuplot(results, out):
    curves = scale_curves(results)
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, (tool, ms) in enumerate(curves.items()):
            files.append((os.path.join(tmp, f"curve{i}.dat"), tool))
            with open(files[-1][0], "w") as f:
                f.write("".join(f"{t} {n + 1}\n" for n, t in enumerate(ms)))
        lines = ", ".join(f"'{path}' using 1:2 with lines lw 2 title '{tool}'"
                          for path, tool in files)
        script = f"""
set terminal pngcairo size 720,420 font ',9' noenhanced
set output '{out}'
set title '{scale_title(results)}'
set xlabel 'ms after start'
set ylabel 'processes that reported'
set key below horizontal
set grid
plot {lines}
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


def plot_scale_matplotlib(results, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.2, 4.0), dpi=100)
    for tool, ms in scale_curves(results).items():
        ax.plot(ms, range(1, len(ms) + 1), label=tool)
    ax.set_xlabel("ms after start")
    ax.set_ylabel("processes that reported")
    ax.set_title(scale_title(results))
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)


def draw(gnuplot, matplotlib_fn, args):
    if shutil.which("gnuplot"):
        gnuplot(*args)
        return
    try:
        matplotlib_fn(*args)
    except ImportError:
        sys.exit("plot.py: neither gnuplot nor matplotlib is installed")


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        results = json.load(f)
    if "overhead" not in results and "scale" not in results:
        sys.exit("plot.py: no overhead or scale section in " + sys.argv[1])
    if "overhead" in results:
        out = os.path.abspath(sys.argv[2])
        draw(plot_gnuplot, plot_matplotlib, (*overhead_table(results), out))
        print(f"wrote {out}")
    if len(sys.argv) == 4 and "scale" in results:
        scale_out = os.path.abspath(sys.argv[3])
        draw(plot_scale_gnuplot, plot_scale_matplotlib, (results, scale_out))
        print(f"wrote {scale_out}")


if __name__ == "__main__":
    main()
