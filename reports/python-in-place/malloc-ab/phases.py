"""Prints each run's Python check phases at n=16777216: python3 phases.py (from this folder)."""
import json
import subprocess
from collections import defaultdict

for run in ["keep1", "glibc1", "keep2", "glibc2"]:
    lines = subprocess.run(["zstd", "-dc", f"{run}/cells.jsonl.zst"], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    for record in map(json.loads, lines):
        if not record["id"].startswith("saxpy/n=16777216/"):
            continue
        phases = defaultdict(list)
        for p in record["phases"]:
            if p["name"].startswith("Python reference: "):
                phases[p["name"][len("Python reference: "):]].append(round(p["ms"], 1))
        audit = record["audit"]
        print(f"| {run} | {record['id'].split('/')[-1]} | {record['wall_s'] * 1e3:.0f} | "
              f"{audit['cost_s'] * 1e3:.0f} | {', '.join(map(str, phases['its answer']))} | "
              f"{', '.join(map(str, phases['buffers read back']))} |")
