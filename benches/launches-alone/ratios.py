"""What a launch alone reads against its region's launches, cell by cell: for each cell of a
batch or a graph whose records hold `audit.among.alone_ns` (each single launch checked on an
audited region's draw, on poisoned outputs, by events behind a wait kernel less their reading of
an empty kernel), the launches alone's
median, the timed samples' median (a region's launches' mean), the timed regions' first
launches' median (`audit.among.firsts`), and the differences. A kernel that shares a region's
work out among its launches and does it all where its output is poisoned reads far slower alone
than in its region; this shows what honest kernels read there, which `analysis::alone`'s
allowance was set from.

    python benches/launches-alone/ratios.py RUN_FOLDER...
"""
import json, statistics, subprocess, sys


def cells(folder):
    text = subprocess.run(["zstd", "-dc", f"{folder}/cells.jsonl.zst"], check=True,
                          capture_output=True, text=True).stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def steady(folder):
    """Each cell's steady samples (ns), from samples.csv.zst."""
    text = subprocess.run(["zstd", "-dc", f"{folder}/samples.csv.zst"], check=True,
                          capture_output=True, text=True).stdout.splitlines()
    head = text[0].split(",")
    cell, phase, ns = head.index("cell"), head.index("phase"), head.index("time_ns")
    out = {}
    for line in text[1:]:
        f = line.split(",")
        if f[phase] == "steady":
            out.setdefault(f[cell], []).append(float(f[ns]))
    return out


for folder in sys.argv[1:]:
    samples = steady(folder)
    by_cell = {}
    for record in cells(folder):
        among = (record.get("audit") or {}).get("among") or {}
        alone = among.get("alone_ns") or []
        firsts = among.get("firsts") or {}
        got = by_cell.setdefault(record["id"], {"alone": [], "firsts": []})
        got["alone"] += alone
        if firsts.get("timed_count"):
            got["firsts"].append(firsts["timed_median"])
    print(folder)
    for cell, got in sorted(by_cell.items()):
        if not got["alone"] or cell not in samples:
            continue
        alone = statistics.median(got["alone"])
        launch = statistics.median(samples[cell])
        first = statistics.median(got["firsts"]) if got["firsts"] else float("nan")
        print(f"  {cell:50s} alone {alone / 1e3:9.2f} µs ({len(got['alone'])}), a region's launch"
              f" {launch / 1e3:9.2f} µs, its first {first / 1e3:9.2f} µs: alone - launch"
              f" {(alone - launch) / 1e3:+8.2f} µs ({alone / launch:.2f}x), alone - first"
              f" {(alone - first) / 1e3:+8.2f} µs")
