#!/usr/bin/env python3
"""Are a run's detection limits what they say? For each cheat cell of a run of
`experiments/trust-limits.toml`: the share of its work it saved where timed (its steady
median against the median of the honest `matmul`'s cells of its variant, `summary.csv`),
its detection limit and whether it was suspect (`cells.md`'s Audits table). A limit says a
cheat that saves at least that much is caught at least 19 times in 20.

A cell that failed a check has no Audits row: it is caught whatever it saved, and counted
apart, by kernel and variant (`report.md`'s verdicts). The limits are the table's, rounded to
a tenth of a point, so a saving within 0.05 points of one may fall in either band.

Usage: python3 calibrate.py reports/trust-limits
"""
import collections
import csv
import re
import statistics
import sys
from pathlib import Path


def audits(run):
    """Each cell's detection limit (None where the table shows none) and whether it is suspect."""
    out, inside = {}, False
    for line in (run / "cells.md").read_text().splitlines():
        if line.startswith("| cell | audit |"):
            inside = True
            continue
        if inside and line.startswith("|---"):
            continue
        if inside and line.startswith("|"):
            c = [x.strip() for x in line.strip().strip("|").split("|")]
            limit = float(c[6].rstrip("%")) / 100 if c[6].endswith("%") else None
            out[c[0]] = (limit, "suspect" in c[1])
        elif inside:
            break
    return out


def main(run):
    run = Path(run)
    medians = {r["cell"]: float(r["median_ns"]) for r in csv.DictReader(open(run / "summary.csv"))
               if r["phase"] == "steady"}
    table = audits(run)
    honest = collections.defaultdict(list)
    for cell, m in medians.items():
        if cell.startswith("matmul/"):
            honest[cell.split("/")[-1]].append(m)
    honest = {v: statistics.median(ms) for v, ms in honest.items()}
    suspect_honest = [c for c, (_, s) in table.items() if c.startswith("matmul/") and s]
    print(f"honest matmul: {sum(c.startswith('matmul/') for c in table)} cells, "
          f"{len(suspect_honest)} suspect; medians " +
          ", ".join(f"{v} {m / 1e3:.1f} us" for v, m in sorted(honest.items())))
    groups = collections.defaultdict(list)
    bands = collections.Counter()
    for cell, (limit, suspect) in table.items():
        if cell.startswith("matmul/") or limit is None:
            continue
        variant = cell.split("/")[-1]
        saved = 1 - medians[cell] / honest[variant]
        skip = int(re.search(r"skip=(\d+)", cell).group(1))
        groups[(cell.split("/")[0], variant, skip)].append((saved, limit, suspect))
        band = ("at or over its limit" if saved >= limit else
                "within a point below it" if saved >= limit - 0.01 else "further below it")
        bands[(band, "cells")] += 1
        bands[(band, "caught")] += suspect
    print(f"{'kernel':22} {'variant':10} {'skip':>4} {'cells':>5} {'caught':>6} "
          f"{'saved':>11} {'limits':>11} {'at/over':>7} {'caught':>6}")
    for (kernel, variant, skip), cells in sorted(groups.items()):
        saved = [s for s, _, _ in cells]
        limits = [l for _, l, _ in cells]
        over = [c for c in cells if c[0] >= c[1]]
        print(f"{kernel:22} {variant:10} {skip:>4} {len(cells):>5} {sum(c[2] for c in cells):>6} "
              f"{100 * min(saved):4.1f}-{100 * max(saved):4.1f}% {100 * min(limits):4.1f}-{100 * max(limits):4.1f}% "
              f"{len(over):>7} {sum(c[2] for c in over):>6}")
    for band in ("at or over its limit", "within a point below it", "further below it"):
        print(f"saved {band}: {bands[(band, 'cells')]} cells, {bands[(band, 'caught')]} caught")
    failed = collections.Counter()
    for line in (run / "report.md").read_text().splitlines():
        m = re.match(r"^\| ([^|/]+)/[^|]+/([^|/]+) \| failed \|", line)
        if m and m.group(1) != "matmul":
            failed[(m.group(1), m.group(2))] += 1
    for (kernel, variant), n in sorted(failed.items()):
        print(f"failed a check (caught whatever it saved): {kernel} {variant}, {n} cells")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "reports/trust-limits")
