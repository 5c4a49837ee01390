#!/usr/bin/env python3
"""Reads what `run.sh` left in OUT and prints the runner's wall time against NVBench's,
command by command, and each size's median, precision and sample count by both:

    benches/time-to-result/summary.py OUT
"""

import csv
import os
import re
import sys
from collections import defaultdict

SIZES = [256, 512, 1024, 2048, 4096]


def walls(out):
    """Each command's wall seconds by pass, from wall.txt; a command that failed is fatal."""
    found = defaultdict(dict)
    with open(os.path.join(out, "wall.txt")) as f:
        for line in f:
            name, run, seconds, rc = line.split()
            if rc != "rc=0":
                sys.exit(f"{name} (pass {run}) ended with {rc}: see {name}-{run}.log")
            found[name][int(run)] = float(seconds)
    return found


def nvbench(out, name, run):
    """Size -> (cold median us, noise %, samples) from one NVBench log."""
    pattern = re.compile(r"n=(\d+): cold median ([\d.]+) us, noise ([\d.]+)%, (\d+) samples")
    found = {}
    with open(os.path.join(out, f"{name}-{run}.log")) as f:
        for line in f:
            m = pattern.search(line)
            if m:
                found[int(m[1])] = (float(m[2]), float(m[3]), int(m[4]))
    return found


def runner(out, folder, run, variant):
    """Size -> (median us, its 95% interval in %, samples) from a run's summary.csv."""
    found = {}
    path = os.path.join(out, f"pass{run}", folder, "matmul", "summary.csv")
    with open(path) as f:
        for row in csv.DictReader(f):
            cell = row["cell"].split("/")
            if row["phase"] == "steady" and cell[2] == variant:
                size = int(cell[1].removeprefix("n="))
                found[size] = (
                    float(row["median_ns"]) / 1e3,
                    float(row["median_ci_pct"]),
                    int(row["count"]),
                )
    return found


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    wall = walls(out)
    passes = sorted(wall["nvbench-cold"])
    for name, times in wall.items():
        print(f"{name}: " + ", ".join(f"{times[p]:.2f} s" for p in passes))
    print()

    def ratio(mine, theirs):
        return sum(wall[mine].values()) / sum(wall[theirs].values())

    print(f"runner / NVBench: {ratio('runner-cold-nvbench-rule', 'nvbench-cold'):.2f}x"
          "  (cold, both by NVBench's rule, every command whole, over both passes)")
    print(f"runner's default / NVBench: {ratio('runner-cold', 'nvbench-cold'):.2f}x"
          "  (cold, the runner's median rule against NVBench's rule)")
    print(f"cold and batch, runner / NVBench: "
          f"{ratio('runner-both-nvbench-rule', 'nvbench-both'):.2f}x by NVBench's rule, "
          f"{ratio('runner-both', 'nvbench-both'):.2f}x by the runner's default")
    print()
    last = passes[-1]
    theirs = nvbench(out, "nvbench-cold", last)
    by_rule = runner(out, "cold-nvbench-rule", last, "cold-nvbench-rule")
    default = runner(out, "cold", last, "cold")
    print(f"pass {last}, cold: NVBench median (noise, samples) | runner by NVBench's rule | "
          "runner's default median (its 95% interval, samples)")
    for n in SIZES:
        t, noise, count = theirs[n]
        r, r_ci, r_count = by_rule[n]
        d, d_ci, d_count = default[n]
        print(
            f"n={n}: {t:.2f} us ({noise:.2f}%, {count}) | {r:.2f} us ({r_count}) | "
            f"{d:.2f} us (±{d_ci:.2f}%, {d_count}), {100 * (d / t - 1):+.2f}% from NVBench's"
        )


if __name__ == "__main__":
    main()
