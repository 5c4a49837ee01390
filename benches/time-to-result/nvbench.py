#!/usr/bin/env python3
"""NVBench timing the post's naive matmul (kernels/matmul.cu) at its five sizes in one
process, as an NVBench user runs it, for `run.sh` to time beside the runner:

    benches/time-to-result/nvbench.py cold    # cold samples only (`batched=False`)
    benches/time-to-result/nvbench.py both    # NVBench's default: cold samples, then a batch

Each size stops by NVBench's default rule (the samples' relative standard deviation under
0.5% or no longer changing, at least 0.5 s of GPU time, at most 15 s). Prints, per size, the
cold median, NVBench's noise (the samples' relative standard deviation), the sample count and
NVBench's own wall time, and the batch mean where there is one. Needs NVBench's Python
package (`pip install cuda-bench`, with cuda-bindings), CuPy and NumPy.
"""

import json
import os
import sys
import tempfile

import cupy as cp
import numpy as np

import cuda.bench as bench

SIZES = [256, 512, 1024, 2048, 4096]


def summary(state, tag):
    return next((s for s in state["summaries"] if s["tag"] == tag), None)


def value(state, tag, name="value"):
    found = summary(state, tag)
    if found is None:
        return None
    return next(v["value"] for v in found["data"] if v["name"] == name)


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("cold", "both"):
        sys.exit(__doc__)
    batched = sys.argv[1] == "both"
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "kernels", "matmul.cu")) as f:
        kernel = cp.RawKernel(f.read(), "matMulKernel")

    def matmul(state):
        n = state.get_int64("n")
        rng = cp.random.default_rng(1)
        a = rng.random(n * n, dtype=cp.float32)
        b = rng.random(n * n, dtype=cp.float32)
        c = cp.empty(n * n, dtype=cp.float32)
        grid, block = ((n + 31) // 32, (n + 31) // 32), (32, 32)
        args = (a, b, c, np.int32(n), np.int32(n), np.int32(n))

        def launch(launch):
            with cp.cuda.Stream.from_external(launch.get_stream()):
                kernel(grid, block, args)

        state.exec(launch, batched=None if batched else False)

    bench.register(matmul).add_int64_axis("n", SIZES)
    out = tempfile.mkdtemp(prefix="nvbench-")
    path = os.path.join(out, "matmul.json")
    bench.run_all_benchmarks([sys.argv[0], "--devices", "0", "--jsonbin", path])
    with open(path) as f:
        states = json.load(f)["benchmarks"][0]["states"]
    for state, n in zip(states, SIZES):
        samples = np.fromfile(
            os.path.join(out, value(state, "nv/json/bin:nv/cold/sample_times", "filename")), "<f4"
        )
        noise = float(value(state, "nv/cold/time/gpu/stdev/relative")) * 100
        wall = float(value(state, "nv/cold/walltime"))
        line = (
            f"n={n}: cold median {float(np.median(samples)) * 1e6:.4f} us, "
            f"noise {noise:.2f}%, {len(samples)} samples, {wall:.3f} s"
        )
        batch = value(state, "nv/batch/time/gpu/mean")
        if batch is not None:
            line += f"; batch mean {float(batch) * 1e6:.4f} us"
        print(line)


if __name__ == "__main__":
    main()
