#!/usr/bin/env python3
"""NVBench timing the post's naive matmul (kernels/matmul.cu) at one size, as a peer of
experiments/nvbench.toml:

    benches/nvbench/matmul.py N cold    # prints `cold median: T us`
    benches/nvbench/matmul.py N batch   # prints `batch mean: T us`

`cold` is the median of NVBench's cold samples: CUDA events around each launch, with NVBench's
L2 flush and blocking kernel before it. `batch` is NVBench's batch time per launch: launches
back to back on the same data, no flush, its mean. Either stops by NVBench's default rule (the
samples' relative standard deviation under 0.5% or no longer changing, at least 0.5 s of GPU
time, at most 15 s). Needs NVBench's Python package (`pip install cuda-bench`, with
cuda-bindings), CuPy and NumPy.
"""

import json
import os
import sys
import tempfile

import cupy as cp
import numpy as np

import cuda.bench as bench


def median(values):
    ordered = np.sort(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[middle])
    return float(ordered[middle - 1] + ordered[middle]) / 2


def summary(state, tag):
    return next((s for s in state["summaries"] if s["tag"] == tag), None)


def value(found, name):
    return next(v["value"] for v in found["data"] if v["name"] == name)


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("cold", "batch"):
        sys.exit(__doc__)
    n, mode = int(sys.argv[1]), sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "kernels", "matmul.cu")) as f:
        kernel = cp.RawKernel(f.read(), "matMulKernel")
    rng = cp.random.default_rng(1)
    a = rng.random(n * n, dtype=cp.float32)
    b = rng.random(n * n, dtype=cp.float32)
    c = cp.empty(n * n, dtype=cp.float32)
    grid, block = ((n + 31) // 32, (n + 31) // 32), (32, 32)
    args = (a, b, c, np.int32(n), np.int32(n), np.int32(n))

    def matmul(state):
        def launch(launch):
            with cp.cuda.Stream.from_external(launch.get_stream()):
                kernel(grid, block, args)

        state.exec(launch, batched=mode == "batch")

    bench.register(matmul)
    out = tempfile.mkdtemp(prefix="nvbench-")
    path = os.path.join(out, "matmul.json")
    bench.run_all_benchmarks([sys.argv[0], "--devices", "0", "--jsonbin", path])
    with open(path) as f:
        state = json.load(f)["benchmarks"][0]["states"][0]
    if mode == "cold":
        found = summary(state, "nv/json/bin:nv/cold/sample_times")
        samples = np.fromfile(os.path.join(out, value(found, "filename")), "<f4")
        print(f"cold median: {median(samples) * 1e6:.4f} us ({len(samples)} samples)")
    else:
        mean = float(value(summary(state, "nv/batch/time/gpu/mean"), "value"))
        print(f"batch mean: {mean * 1e6:.4f} us")
    print(host_time(state, mode))


def host_time(state, mode):
    """NVBench's wall time over its samples: the host time a sample took, measurement and
    all, as the runner's `cells.md` gives its own."""
    wall = summary(state, f"nv/{mode}/walltime")
    count = summary(state, f"nv/{mode}/sample_size")
    if wall is None or count is None:
        return f"{mode} host time: not reported"
    wall_s = float(value(wall, "value"))
    n = int(value(count, "value"))
    return f"{mode} host time: {wall_s:.3f} s over {n} samples, {wall_s / n * 1e6:.2f} us a sample"


if __name__ == "__main__":
    main()
