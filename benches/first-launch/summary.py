"""Summarizes first-launch readings, one line per fresh process: `NAME r=ROUND n=N
event_us=US [FIELD=VALUE ...]`. Per NAME and n: the processes, the events reading's median
(p25, p75), the medians of the other fields, and with --against BASE the median of the
differences from BASE's events reading in the same round.
    python3 summary.py LOG [--against BASE]"""
import argparse
import collections
import statistics as st

args = argparse.ArgumentParser()
args.add_argument("log")
args.add_argument("--against")
a = args.parse_args()
runs = collections.defaultdict(dict)  # (name, n) -> round -> fields
for line in open(a.log):
    name, *pairs = line.split()
    fields = dict(kv.split("=", 1) for kv in pairs)
    n, r = int(fields.pop("n")), int(fields.pop("r"))
    runs[(name, n)][r] = {k: float(v) for k, v in fields.items()}
for (name, n), by_round in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    events = [f["event_us"] for f in by_round.values()]
    q = st.quantiles(events, n=4) if len(events) > 1 else events * 3
    line = f"{name:18s} n={n:5d} runs {len(events):3d} median {st.median(events):7.1f} us  p25 {q[0]:7.1f}  p75 {q[2]:7.1f}"
    others = sorted({k for f in by_round.values() for k in f} - {"event_us"})
    line += "".join(f"  {k} {st.median(f[k] for f in by_round.values() if k in f):.1f}" for k in others)
    base = runs.get((a.against, n)) if a.against else None
    if base:
        diffs = [f["event_us"] - base[r]["event_us"] for r, f in by_round.items() if r in base]
        line += f"  vs {a.against} {st.median(diffs):+.1f}"
    print(line)
