#!/usr/bin/env python3
"""A hostile-input pass over `runner` without a GPU: experiment files, run folders, merges,
runs and Slurm scripts, tried as an attacker and as a careless user would.

Each case runs the runner once (in a scratch folder, under a time and memory limit) and is
judged against what it must do. Outcomes counted:

  crash             a panic, an abort or a signal
  unbounded         over the time limit, over the memory limit, or slower than SLOW_S; or
                    a process the runner started that outlives it
  accepted-invalid  exit 0 (or the "slower" code 2) where the input must be refused
  write-outside     a file outside the run folder created, changed or removed
  data-lost         a stored run changed or destroyed, or a readable run refused whole;
                    more cells lost than were damaged; a report beside another that fails
                    or leaves its .plots.tmp-* behind
  unclear           refused, but the message lacks the file, the line or the point; a
                    lost cell not named

Usage: benches/hostile/hostile.py [--runner PATH] [--verbose] [--only SUBSTRING]
(default runner: $CARGO_TARGET_DIR/debug/runner, else target/debug/runner). Exit 0 always;
the counts are the result.
"""

import argparse
import gzip
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIME_LIMIT_S = 20
SLOW_S = 5.0
MEMORY_LIMIT = 3 << 30
CLASSES = ["crash", "unbounded", "accepted-invalid", "write-outside", "data-lost", "unclear"]
SLOWER = 2


def base_experiment(kernels: Path) -> str:
    """The CLI tests' matmul experiment (tests/matmul-experiment.toml)."""
    text = (ROOT / "tests" / "matmul-experiment.toml").read_text()
    return text.replace('"../kernels/matmul.cu"', f'"{kernels / "matmul.cu"}"')


def zstd_frame(data: bytes) -> bytes:
    """`data` as one zstd frame of raw blocks: valid zstd, made without a zstd library."""
    block = 1 << 17
    # Magic, no flags, a window of 128 KiB (exponent 7): a raw block's most.
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")
    chunks = [data[i:i + block] for i in range(0, len(data), block)] or [b""]
    for i, chunk in enumerate(chunks):
        last = int(i == len(chunks) - 1)
        out += ((len(chunk) << 3) | last).to_bytes(3, "little") + chunk
    return bytes(out)


def zstd_bomb(byte: bytes, count: int) -> bytes:
    """A zstd frame of `count` copies of `byte` in RLE blocks: 4 bytes per 128 KiB."""
    block = 1 << 17
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")
    full, rest = divmod(count, block)
    sizes = [block] * full + ([rest] if rest else [])
    for i, size in enumerate(sizes):
        out += ((size << 3) | (1 << 1) | int(i == len(sizes) - 1)).to_bytes(3, "little") + byte
    return bytes(out)


def to_zstd(d: Path):
    """The run folder `d` stored as runs are written now: zstd CSVs and records."""
    for name in ["samples.csv", "telemetry.csv"]:
        text = gzip.decompress((d / f"{name}.gz").read_bytes())
        (d / f"{name}.zst").write_bytes(zstd_frame(text))
        (d / f"{name}.gz").unlink()
    (d / "cells.jsonl.zst").write_bytes(zstd_frame((d / "cells.jsonl").read_bytes()))
    (d / "cells.jsonl").unlink()


def zstd_frames(data: bytes) -> list:
    """Where each zstd frame (or skippable frame) of `data` starts and ends, read from the
    frames' headers and blocks' sizes: no zstd library needed."""
    spans, at = [], 0
    while at < len(data):
        start = at
        magic = int.from_bytes(data[at:at + 4], "little")
        if 0x184D2A50 <= magic <= 0x184D2A5F:
            at += 8 + int.from_bytes(data[at + 4:at + 8], "little")
            spans.append((start, at))
            continue
        if magic != 0xFD2FB528:
            raise ValueError(f"no zstd frame at byte {at}")
        fhd = data[at + 4]
        single = (fhd >> 5) & 1
        at += 5 + (0 if single else 1) + [0, 1, 2, 4][fhd & 3] + [single, 2, 4, 8][fhd >> 6]
        while True:
            header = int.from_bytes(data[at:at + 3], "little")
            at += 3 + (1 if (header >> 1) & 3 == 1 else header >> 3)
            if header & 1:
                break
        at += 4 if (fhd >> 2) & 1 else 0
        spans.append((start, at))
    return spans


def gzip_members(data: bytes) -> list:
    """Each gzip member of `data`: where it starts and ends, and what it decodes to."""
    members, at = [], 0
    while at < len(data):
        d = zlib.decompressobj(31)
        text = d.decompress(data[at:])
        end = len(data) - len(d.unused_data)
        members.append((at, end, text))
        at = end
    return members


def unzstd(data: bytes) -> bytes:
    """`data` decoded by the zstd command (`zstd_frame` writes zstd, but reading a run's
    frames needs a decoder): None where there is no such command."""
    if not shutil.which("zstd"):
        return None
    p = subprocess.run(["zstd", "-dcq"], input=data, capture_output=True)
    return p.stdout if p.returncode == 0 else None


def row_cells(text: bytes) -> set:
    """The cells (first fields) of a stored CSV's rows, its header left out."""
    return {line.split(b",")[0].decode() for line in text.split(b"\n")
            if line and not line.startswith(b"cell,")}


def summary_cells(d: Path) -> set:
    """The cells a rendered run's summary.csv holds."""
    path = d / "summary.csv"
    if not path.exists():
        return set()
    return {line.split(",")[0] for line in path.read_text().splitlines()[1:] if line}


def records_of(d: Path) -> list:
    """The ids of the records of the run in `d`, in either format (None where unreadable)."""
    if (d / "cells.jsonl").exists():
        text = (d / "cells.jsonl").read_bytes()
    elif (d / "cells.jsonl.zst").exists():
        text = unzstd((d / "cells.jsonl.zst").read_bytes())
    else:
        return None
    if text is None:
        return None
    ids = []
    for line in text.split(b"\n"):
        try:
            ids.append(json.loads(line)["id"])
        except (ValueError, KeyError, TypeError):
            pass
    return ids


def leftover_processes(marker: str) -> list:
    """Processes whose environment holds `marker` (every process a case's runner started
    inherits it): (pid, command line)."""
    left = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                left.append((int(entry.name), cmd.strip()))
        except OSError:
            pass
    return left


def limit_child():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    os.setsid()


def snapshot(folder: Path) -> dict:
    """Every entry under `folder` with its kind and content hash (links not followed)."""
    out = {}
    if not folder.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                out[str(p)] = "link:" + os.readlink(p)
            elif p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            elif p.is_dir():
                out[str(p)] = "dir"
            else:
                out[str(p)] = "special"
    return out


class Case:
    """One input and what the runner must do with it.

    expect: "refuse" (a non-zero exit other than the "slower" code), "ok" (exit 0),
    "any" (only crashes, hangs and writes count). says: substrings (regexes) a refusal's
    message must hold. keep: folders that must be unchanged. outside: folders nothing may
    touch (the case's own `outside/` always)."""

    def __init__(self, name, argv, expect="refuse", says=(), keep=(), outside=(), after=None,
                 cwd=None, prefix=(), env=None, stdout="pipe", stderr="pipe", clean_rcs=(),
                 processes=False):
        self.name, self.argv, self.expect = name, argv, expect
        self.says, self.keep, self.outside = list(says), list(keep), list(outside)
        self.after, self.cwd = after, cwd
        # Issue 39's cases: a command before the runner (`timeout`), more environment, an
        # stdout that is "full" (/dev/full) or "head" (a pipe closed after one line, as
        # `| head -1`) or "closed" (closed before a byte is read), an stderr that is
        # "full", exit codes that are no crash (141 and -13, SIGPIPE), and whether a
        # process the runner started may outlive it (none may: "unbounded").
        self.prefix, self.env, self.stdout, self.stderr = list(prefix), env, stdout, stderr
        self.clean_rcs, self.processes = set(clean_rcs), processes


class Pass:
    def __init__(self, runner: Path, verbose: bool, only: str):
        self.runner, self.verbose, self.only = runner, verbose, only
        self.counts = {c: 0 for c in CLASSES}
        self.cases = 0
        self.failures = []
        self.kernels = ROOT / "kernels"

    # --- running and judging -------------------------------------------------------------

    def run(self, name, build):
        """`build(tmp)` makes the case's files under tmp and returns a Case."""
        if self.only and self.only not in name:
            return
        tmp = Path(tempfile.mkdtemp(prefix="hostile-"))
        try:
            (tmp / "outside").mkdir()
            (tmp / "outside" / "canary.txt").write_text("canary\n")
            case = build(tmp)
            self.judge(name, case, tmp)
        finally:
            subprocess.run(["chmod", "-R", "u+rwX", str(tmp)], capture_output=True)
            shutil.rmtree(tmp, ignore_errors=True)

    def judge(self, name, case: Case, tmp: Path):
        self.cases += 1
        watched = [tmp / "outside"] + case.outside
        before = {str(w): snapshot(w) for w in watched}
        kept = {str(k): snapshot(k) for k in case.keep}
        start = time.monotonic()
        problems = []
        marker = f"HOSTILE_CASE={tmp}"
        if case.prefix or case.env or case.stdout != "pipe" or case.stderr != "pipe" or case.processes:
            rc, err = self.spawn_special(case, tmp, marker)
        else:
            child = subprocess.Popen([str(self.runner)] + case.argv, cwd=case.cwd or tmp,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     preexec_fn=limit_child, stdin=subprocess.DEVNULL)
            try:
                _, err = child.communicate(timeout=TIME_LIMIT_S)
                rc, err = child.returncode, err.decode("utf-8", "replace")
            except subprocess.TimeoutExpired:
                # The runner leads its own process group: end it and whatever it started.
                os.killpg(child.pid, signal.SIGKILL)
                child.communicate()
                rc, err = None, ""
        elapsed = time.monotonic() - start
        if case.processes:
            left = []
            for _ in range(30):
                left = leftover_processes(marker)
                if not left:
                    break
                time.sleep(0.1)
            if left:
                problems.append(("unbounded", f"{len(left)} process(es) outlived the run: "
                                 + "; ".join(cmd[:120] for _, cmd in left)))
                for pid, _ in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
        if rc is None:
            problems.append(("unbounded", f"over {TIME_LIMIT_S} s"))
        elif "memory allocation of" in err or "Cannot allocate memory" in err:
            problems.append(("unbounded", "over the memory limit"))
        elif rc in case.clean_rcs and "panicked" not in err:
            pass
        elif rc < 0 or rc in (101, 134) or "panicked" in err or "overflowed its stack" in err:
            problems.append(("crash", f"rc {rc}: {err.strip()[-300:]}"))
        elif elapsed > SLOW_S:
            problems.append(("unbounded", f"{elapsed:.1f} s"))
        if rc is not None and not problems:
            refused = rc not in (0, SLOWER)
            if case.expect == "refuse" and not refused:
                problems.append(("accepted-invalid", f"rc {rc}"))
            elif case.expect == "ok" and rc != 0:
                problems.append(("data-lost", f"rc {rc}: {err.strip()[-300:]}"))
            elif case.expect == "refuse":
                missing = [s for s in case.says if not re.search(s, err)]
                if missing:
                    problems.append(("unclear", f"lacks {missing}: {err.strip()[-300:]}"))
        for w in watched:
            if snapshot(w) != before[str(w)]:
                problems.append(("write-outside", f"{w} changed"))
        for k in case.keep:
            if snapshot(k) != kept[str(k)]:
                problems.append(("data-lost", f"{k} changed"))
        if case.after and rc is not None:
            problems.extend(case.after(tmp, rc, err))
        for cls in sorted({c for c, _ in problems}):
            self.counts[cls] += 1
        if problems:
            self.failures.append((name, problems))
            if self.verbose:
                for cls, why in problems:
                    print(f"  {cls:17} {name}: {why}", flush=True)

    def spawn_special(self, case: Case, tmp: Path, marker: str):
        """Runs a case whose stdout or stderr is not a plain pipe, whose runner runs under
        another command, or whose processes are counted: its exit code (None past the time
        limit) and its stderr."""
        env = dict(os.environ, **(case.env or {}))
        name, value = marker.split("=", 1)
        env[name] = value
        err_file = tempfile.TemporaryFile()
        full = open("/dev/full", "wb")
        out = {"pipe": subprocess.DEVNULL, "full": full}.get(case.stdout, subprocess.PIPE)
        err = full if case.stderr == "full" else err_file
        try:
            child = subprocess.Popen(case.prefix + [str(self.runner)] + case.argv,
                                     cwd=case.cwd or tmp, stdout=out, stderr=err, env=env,
                                     preexec_fn=limit_child, stdin=subprocess.DEVNULL)
            if case.stdout == "closed":
                child.stdout.close()
            elif case.stdout == "head":
                # As `| head -1`: one line read, then the pipe closed.
                reader = threading.Thread(target=child.stdout.readline, daemon=True)
                reader.start()
                reader.join(TIME_LIMIT_S)
                child.stdout.close()
            try:
                rc = child.wait(timeout=TIME_LIMIT_S)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                rc = None
            err_file.seek(0)
            return rc, err_file.read().decode("utf-8", "replace")
        finally:
            full.close()
            err_file.close()

    # --- helpers ---------------------------------------------------------------------------

    def experiment(self, tmp, text, name="bad.toml"):
        path = tmp / name
        path.write_text(text)
        return path

    def plan(self, name, text, expect="refuse", says=("bad\\.toml",), file="bad.toml"):
        def build(tmp):
            path = self.experiment(tmp, text, file)
            return Case(name, ["plan", str(path)], expect, says)
        self.run(name, build)

    def copy_run(self, tmp, name="events", to=None):
        dest = to or (tmp / "runs" / name)
        shutil.copytree(ROOT / "reports" / name, dest, symlinks=True)
        # What the report renders is not the stored data.
        return dest

    # --- the cases ---------------------------------------------------------------------

    def experiments(self):
        base = base_experiment(self.kernels)
        defaults = "[defaults]\nsamples = 20\nwarmup = 5\n"

        def with_defaults(lines):
            return base.replace(defaults, defaults + lines + "\n")

        # Counts and sizes beyond any real use.
        huge = {
            "samples": ["100000000", "1000000000000000000", "\"2 ** 62\""],
            "warmup": ["4611686018427387904", "100000000"],
            "batch": ["100000000", "1000000000000"],
            "graph": ["100000000", "1000000000000"],
            "rotate": ["100000000"],
            "queue_wait_us": ["1000000000000"],
            "rounds": ["100000000"],
        }
        for key, values in huge.items():
            for v in values:
                extra = f"{key} = {v}"
                if key == "rounds":
                    extra += '\norder = "interleaved"'
                if key == "queue_wait_us":
                    extra += '\nqueue = "saturate"'
                self.plan(f"huge {key} = {v}", with_defaults(extra), says=["bad\\.toml:\\d+"])
        for v in ["100000000", "1000000000"]:
            self.plan(f"huge processes = {v}",
                      with_defaults(f"fresh_process = true\nprocesses = {v}"),
                      says=["bad\\.toml:\\d+"])
        for key, v in [("timeout", "1000000 h"), ("timeout", "1e300s"), ("timeout", "1e20s")]:
            self.plan(f"duration {key} = {v}", with_defaults(f'{key} = "{v}"'))
        for v in ["1000000h", "1e300s", "1e19s"]:
            self.plan(f"gpu_warmup = {v}", base + f'\n[environment]\ngpu_warmup = "{v}"\n')
        for stop in ['{ timeout = "1e300s" }', '{ min_gpu_time = "1e300s" }',
                     "{ min_samples = 1000000000000 }", '{ timeout = "100000h" }',
                     "{ rsd_pct = nan }", "{ rsd_pct = inf }"]:
            self.plan(f"stop = {stop}", with_defaults(f"stop = {stop}"))
        for v in ["1000000000000", "100000000"]:
            self.plan(f"floor_samples = {v}",
                      base + f"floor_samples = {v}\n", says=["bad\\.toml"])
        self.plan("interval_ms huge", base + "\n[telemetry]\ninterval_ms = 100000000000\n")
        # Floats that are not numbers.
        for key in ["clock_tolerance_pct", "probe_tolerance_pct"]:
            for v in ["nan", "inf", "-1.0", "-inf"]:
                self.plan(f"{key} = {v}", base + f"\n[telemetry]\n{key} = {v}\n")
        for init in ["uniform(0, 1e309)", "uniform(nan, 1)", "uniform(-inf, 1)",
                     "normal(0, inf)", "normal(nan, 1)", "constant(1e39)", "constant(nan)",
                     "constant(inf)", "iota(1e39, 1)", "iota(0, nan)", "normal(1e308, 1e308)"]:
            self.plan(f"init {init}", base.replace("uniform(0, 100)", init, 1),
                      says=["bad\\.toml:\\d+"])
        for tol in ["tolerance = nan", "tolerance = -1.0", "tolerance = inf"]:
            self.plan(f"check {tol}",
                      base.replace('dims = ["n", "n", "n"] }', f'dims = ["n", "n", "n"], {tol} }}'))
        for pub in ["nan", "inf", "-inf"]:
            self.plan(f"published {pub}", base + f"""
[[report.published]]
variant = "events"
source = "x"
unit = "ms"
values = {{ 64 = {pub} }}
""")
        self.plan("published at no point", base + """
[[report.published]]
variant = "events"
source = "x"
unit = "ms"
values = { 12345 = 1.0 }
""")
        # Strings without end.
        long = "x" * 100_000
        self.plan("title of 100 kB", base.replace('title = "test"', f'title = "{long}"'))
        self.plan("description of 1 MB",
                  base.replace('title = "test"', f'title = "t"\ndescription = "{"d" * 1_000_000}"'))
        self.plan("option of 100 kB", with_defaults(f'options = ["-D{long}"]'))
        self.plan("option of 20 MB", with_defaults(f'options = ["-D{"y" * 20_000_000}"]'))
        self.plan("100000 options", with_defaults("options = [" + ", ".join(['"-DX"'] * 100_000) + "]"))
        self.plan("env value of 100 kB", with_defaults(f'env = {{ CUDA_CACHE_PATH = "{long}" }}'))
        self.plan("variant description of 100 kB",
                  base.replace('name = "sync"', f'name = "sync"\ndescription = "{long}"'))
        self.plan("metric unit of 100 kB", base + f"""
[[report.metric]]
name = "m"
value = "time_ns"
unit = "{long}"
""")
        # Names.
        for what, old in [("kernel", 'name = "matmul"'), ("variant", 'name = "sync"')]:
            for n in ["k" * 300, "k" * 101, "", ".", "..", "a/b", "a\\nb", "-x"]:
                new = old.split("=")[0] + f'= "{n}"'
                text = base.replace(old, new)
                if what == "kernel":
                    text = text.replace('reference = "matmul"', 'reference = "matmul"')
                self.plan(f"{what} name {n[:20]!r} ({len(n)} chars)", text)
        self.plan("sweep parameter of 300 chars",
                  base.replace("n = [64, 96]", "n = [64, 96]\n" + "p" * 300 + " = [1]"))
        for fname in ["...toml", "..toml", ".toml", "x$(touch PWNED).toml", "a b.toml",
                      "a\nb.toml", "-x.toml", "k" * 200 + ".toml", "x'y.toml", 'x"y.toml']:
            self.plan(f"experiment file named {fname[:30]!r}", base, file=fname, says=[])
        # Duplicates.
        for sweep in ["n = [64, 64]", 'n = ["2^6", 64]', "n = [64, 96, 64]",
                      "shape = { n = [64, 64], m = [1, 1] }"]:
            self.plan(f"duplicate sweep values {sweep}", base.replace("n = [64, 96]", sweep))
        self.plan("duplicate metric names", base + """
[[report.metric]]
name = "m"
value = "time_ns"
unit = "ns"

[[report.metric]]
name = "m"
value = "time_ns * 2"
unit = "ns"
""")
        self.plan("empty metric name", base + '\n[[report.metric]]\nname = ""\nvalue = "time_ns"\nunit = "ns"\n')
        peer = """
[[peer]]
name = "p"
variant = "events"
command = ["/bin/true", "{{ n }}"]
reads = "took {ms}ms"
"""
        self.plan("duplicate peer names", base + peer + peer)
        self.plan("peer with an empty program", base + peer.replace('"/bin/true", ', '"", '))
        self.plan("peer with a NUL program", base + peer.replace('"/bin/true"', '"/bin/tr\\u0000ue"'))
        self.plan("peer argument with a NUL", base + peer.replace('"{{ n }}"', '"a\\u0000b"'))
        self.plan("peer processes = 1e9", base + peer + "processes = 1000000000\n")
        self.plan("peer env with a NUL", base + peer + 'env = { A = "x\\u0000y" }\n')
        self.plan("peer env name with =", base + peer + 'env = { "A=B" = "x" }\n')
        self.plan("peer label of 100 kB", base + peer + f'label = "{long}"\n')

        # `plan` must show the peer's command: judged on stdout below.
        self.peer_in_plan(base + peer)
        for pair_key in ["differences", "bias"]:
            self.plan(f"{pair_key} of a variant with itself",
                      base.replace('baseline = "events"', f'{pair_key} = [["events", "events"]]'))
        self.plan("kernels pair of a kernel with itself",
                  base.replace('baseline = "events"', 'kernels = [["matmul", "matmul"]]'))
        self.plan("duplicate differences pair",
                  base.replace('baseline = "events"',
                               'differences = [["sync", "events"], ["sync", "events"]]'))
        # Expressions and templates without end.
        self.plan("expression of 30000 terms",
                  base.replace('"(n + 31) // 32", "(n + 31) // 32"',
                               '"' + "+".join(["1"] * 30000) + '", "1"'))
        self.plan("expression nested 5000 deep",
                  base.replace('"(n + 31) // 32", "(n + 31) // 32"',
                               '"' + "(" * 5000 + "1" + ")" * 5000 + '", "1"'))
        self.plan("metric of 4000 terms", base + f"""
[[report.metric]]
name = "m"
value = "{'+'.join(['time_ns'] * 4000)}"
unit = "ns"
""")
        self.plan("expression of 1 MB", base.replace('"(n + 31) // 32", "(n + 31) // 32"',
                                                     '"' + " " * 1_000_000 + '1", "1"'))
        loops = "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}"
        self.plan("nested loops in options", with_defaults(f'options = ["-D{loops}"]'))
        self.plan("nested loops in an entry", base.replace('entry = "matMulKernel"',
                                                           f'entry = "matMulKernel{loops}"'))
        self.plan("nested loops in a buffer type", base.replace('buffer = "f32", len = "n * n", init = "output"',
                                                                f'buffer = "{loops}", len = "n * n", init = "output"'))
        self.plan("nested loops in a peer argument", base + peer.replace("{{ n }}", loops))
        self.plan("string repeated in options", with_defaults('options = ["{{ \\"x\\" * 1000000000 }}"]'))
        self.plan("recursive macro in options",
                  with_defaults('options = ["{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}"]'))
        self.plan("expression range of 1e9", base.replace('"(n + 31) // 32", "(n + 31) // 32"',
                                                          '"range(1000000000) | length", "1"'))
        self.plan("when of 30000 terms", base + peer + 'when = "' + " and ".join(["n > 0"] * 30000) + '"\n')
        # TOML shapes.
        self.plan("dotted key 1000 deep", base + "\n[x]\n" + ".".join(["a"] * 1000) + " = 1\n",
                  says=["bad\\.toml:\\d+"])
        self.plan("array nested 10000 deep", base + "\nq = " + "[" * 10000 + "]" * 10000 + "\n",
                  says=["bad\\.toml:\\d+"])
        self.plan("inline table nested 10000 deep",
                  base + "\nq = " + "{a=" * 10000 + "1" + "}" * 10000 + "\n", says=["bad\\.toml"])
        self.plan("NUL in the file", base + "\n# \u0000\n")

        def invalid_utf8(tmp):
            path = tmp / "bad.toml"
            path.write_bytes(base.encode() + b"\n# \xff\xfe\n")
            return Case("not UTF-8", ["plan", str(path)], "refuse", ["bad\\.toml"])
        self.run("not UTF-8", invalid_utf8)

    def peer_in_plan(self, text):
        name = "plan lists the peer's command"
        if self.only and self.only not in name:
            return
        tmp = Path(tempfile.mkdtemp(prefix="hostile-"))
        try:
            path = self.experiment(tmp, text, "ok.toml")
            self.cases += 1
            p = subprocess.run([str(self.runner), "plan", str(path)], capture_output=True,
                               timeout=TIME_LIMIT_S, preexec_fn=limit_child)
            if b"/bin/true 64" not in p.stdout:
                self.counts["accepted-invalid"] += 1
                self.failures.append((name, [("accepted-invalid", "the command is not shown")]))
                if self.verbose:
                    print(f"  accepted-invalid  {name}: the command is not shown")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def files(self):
        """Special files where the experiment names a file."""
        base = base_experiment(self.kernels)

        def special(name, make, where):
            def build(tmp):
                target = tmp / "special"
                make(target)
                if where == "source":
                    text = base.replace(str(self.kernels / "matmul.cu"), str(target))
                elif where == "npy":
                    text = base.replace("uniform(0, 100)", f"npy({target})", 1)
                elif where == "template":
                    text = base + f'template = "{target}"\n'
                else:
                    raise ValueError(where)
                path = self.experiment(tmp, text)
                return Case(name, ["plan", str(path)], "refuse", ["special"])
            self.run(name, build)

        for where in ["source", "npy", "template"]:
            special(f"{where}: a FIFO", lambda t: os.mkfifo(t), where)
            special(f"{where}: /dev/zero", lambda t: t.symlink_to("/dev/zero"), where)
            special(f"{where}: a directory", lambda t: t.mkdir(), where)
            special(f"{where}: a link to /etc/passwd", lambda t: t.symlink_to("/etc/passwd"), where)
        special("source: a 100 MB file", lambda t: t.write_bytes(b"// x\n" * 20_000_000), "source")

        def fifo_experiment(tmp):
            os.mkfifo(tmp / "bad.toml")
            return Case("experiment file is a FIFO", ["plan", str(tmp / "bad.toml")], "refuse")
        self.run("experiment file is a FIFO", fifo_experiment)

        def zero_experiment(tmp):
            (tmp / "bad.toml").symlink_to("/dev/zero")
            return Case("experiment file is /dev/zero", ["plan", str(tmp / "bad.toml")])
        self.run("experiment file is /dev/zero", zero_experiment)

    def run_folders(self):
        """`runner report` on run folders that were tampered with or damaged."""

        def report(name, tamper, expect="refuse", says=(), run="events", outside_check=None):
            def build(tmp):
                d = self.copy_run(tmp, run)
                tamper(tmp, d)
                case = Case(name, ["report", str(d)], expect, says)
                case.after = outside_check
                return case
            self.run(name, build)

        def link(fname, target_of):
            def t(tmp, d):
                target = target_of(tmp)
                if (d / fname).is_dir() and not (d / fname).is_symlink():
                    shutil.rmtree(d / fname)
                (d / fname).unlink(missing_ok=True)
                (d / fname).symlink_to(target)
            return t

        outside_file = lambda tmp: tmp / "outside" / "canary.txt"
        for fname in ["report.md", "summary.csv"]:
            report(f"{fname} is a link outside", link(fname, outside_file))
        report("plots/ is a link outside", link("plots", lambda tmp: tmp / "outside"))

        def leaked(tmp, rc, err):
            for f in (tmp / "runs").rglob("report.md"):
                if not f.is_symlink() and "root:" in f.read_text(errors="replace"):
                    return [("write-outside", "/etc/passwd read into report.md")]
            return []
        for fname in ["findings.md", "notes.md", "template.md.j2"]:
            report(f"{fname} is a link to /etc/passwd", link(fname, lambda tmp: Path("/etc/passwd")),
                   expect="any", outside_check=leaked)
        for fname in ["cells.jsonl", "run.json", "experiment.toml", "samples.csv.gz"]:
            report(f"{fname} is a link outside", link(fname, lambda tmp: tmp / "outside" / "canary.txt"))
        report("cells.jsonl is a link to /dev/zero", link("cells.jsonl", lambda tmp: Path("/dev/zero")))

        def fifo(fname):
            def t(tmp, d):
                (d / fname).unlink(missing_ok=True)
                os.mkfifo(d / fname)
            return t
        for fname in ["cells.jsonl", "samples.csv.gz", "findings.md", "telemetry.csv.gz"]:
            report(f"{fname} is a FIFO", fifo(fname))

        # Damage that must lose only what it damages.
        def truncate(fname, keep):
            def t(tmp, d):
                b = (d / fname).read_bytes()
                (d / fname).write_bytes(b[: int(len(b) * keep)])
            return t
        report("samples.csv.gz cut at 60%", truncate("samples.csv.gz", 0.6), expect="ok")
        report("telemetry.csv.gz cut at 60%", truncate("telemetry.csv.gz", 0.6), expect="ok")

        def bad_row(fname, row):
            def t(tmp, d):
                lines = gzip.decompress((d / fname).read_bytes()).decode().split("\n")
                lines.insert(len(lines) // 2, row)
                (d / fname).write_bytes(gzip.compress("\n".join(lines).encode()))
            return t
        report("telemetry with a bad row in the middle", bad_row("telemetry.csv.gz", "x,y"), expect="ok")
        report("samples with a bad row in the middle", bad_row("samples.csv.gz", "x,y"), expect="ok")

        def compare_absent(tmp, d):
            (d / "compare_to").write_text("../events-run1\n")
        report("compare_to names an absent run", compare_absent, expect="ok")

        # Edits that must not go unnoticed: refused, or rendered with a warning.
        def noticed(tmp, rc, err):
            if rc == 0 and "warning" not in err:
                return [("accepted-invalid", "rendered without a word")]
            return []

        def edit_experiment(tmp, d):
            t = (d / "experiment.toml").read_text()
            (d / "experiment.toml").write_text(re.sub(r"samples = \d+", "samples = 999", t, 1))
        report("experiment.toml edited", edit_experiment, expect="any", outside_check=noticed)

        def dup_line(tmp, d):
            lines = (d / "cells.jsonl").read_text().splitlines()
            (d / "cells.jsonl").write_text("\n".join(lines + [lines[-1], lines[-1]][:len(lines) + 1]) + "\n")

        def dup_first(tmp, d):
            lines = (d / "cells.jsonl").read_text().splitlines()
            (d / "cells.jsonl").write_text("\n".join([lines[0]] + lines) + "\n")
        report("cells.jsonl line duplicated", dup_first, expect="any", outside_check=noticed)

        def sample_value(v):
            def t(tmp, d):
                text = gzip.decompress((d / "samples.csv.gz").read_bytes()).decode()
                lines = text.split("\n")
                header = lines[0].split(",")
                col = header.index("time_ns")
                for i in range(1, len(lines)):
                    f = lines[i].split(",")
                    if len(f) == len(header) and f[header.index("phase")] == "steady":
                        f[col] = v
                        lines[i] = ",".join(f)
                        break
                (d / "samples.csv.gz").write_bytes(gzip.compress("\n".join(lines).encode()))
            return t
        for v in ["NaN", "-5", "inf", "0", "1e400"]:
            report(f"a sample of {v}", sample_value(v), expect="any", outside_check=noticed)

        def not_gzip(tmp, d):
            (d / "samples.csv.gz").write_text("cell,kernel\nx,y\n")
        report("samples.csv.gz is not gzip", not_gzip, says=["gzip"])

        def bomb(tmp, d):
            # About 3 MB of gzip that decompresses to about 3 GB of newlines.
            with gzip.open(d / "samples.csv.gz", "wb", compresslevel=9) as f:
                header = gzip.decompress((ROOT / "reports/events/samples.csv.gz").read_bytes()).split(b"\n")[0]
                f.write(header + b"\n")
                chunk = b"\n" * (1 << 24)
                for _ in range(192):
                    f.write(chunk)
        report("a gzip bomb of newlines", bomb, expect="any")

        # The same damage to a run stored as runs are written now.
        def zstd(tamper):
            def t(tmp, d):
                to_zstd(d)
                tamper(tmp, d)
            return t
        report("zstd: the run reads", zstd(lambda tmp, d: None), expect="ok")
        for fname in ["samples.csv.zst", "telemetry.csv.zst", "cells.jsonl.zst"]:
            report(f"zstd: {fname} cut at 60%", zstd(truncate(fname, 0.6)), expect="ok")
            report(f"zstd: {fname} is a FIFO", zstd(fifo(fname)))
            report(f"zstd: {fname} is a link outside",
                   zstd(link(fname, lambda tmp: tmp / "outside" / "canary.txt")))

        def zstd_bad_row(tmp, d):
            lines = gzip.decompress((d / "samples.csv.gz").read_bytes()).split(b"\n")
            lines.insert(len(lines) // 2, b"x,y")
            to_zstd(d)
            (d / "samples.csv.zst").write_bytes(zstd_frame(b"\n".join(lines)))
        report("zstd: samples with a bad row in the middle", zstd_bad_row, expect="ok")

        def not_zstd(tmp, d):
            (d / "samples.csv.zst").write_text("cell,kernel\nx,y\n")
        report("zstd: samples.csv.zst is not zstd", zstd(not_zstd), says=["zstd"])

        def both(tmp, d):
            shutil.copy(ROOT / "reports/events/samples.csv.gz", d / "samples.csv.gz")
        report("zstd: samples.csv.zst and samples.csv.gz both there", zstd(both),
               says=["samples\\.csv\\.zst", "samples\\.csv\\.gz"])

        def zstd_bombs(fname, first):
            def t(tmp, d):
                # About 100 KB that decompresses to about 3 GB of newlines.
                (d / fname).write_bytes(zstd_frame(first + b"\n") + zstd_bomb(b"\n", 3 << 30))
            return zstd(t)
        header = gzip.decompress((ROOT / "reports/events/samples.csv.gz").read_bytes()).split(b"\n")[0]
        report("a zstd bomb of newlines", zstd_bombs("samples.csv.zst", header), expect="any")
        first_record = (ROOT / "reports/events/cells.jsonl").read_bytes().split(b"\n")[0]
        report("a zstd bomb of newlines in cells.jsonl.zst", zstd_bombs("cells.jsonl.zst", first_record),
               expect="any")

        def stored_error(tmp, d):
            t = (d / "experiment.toml").read_text()
            (d / "experiment.toml").write_text(t.replace("[defaults]", "[defaults\n", 1))
            meta = json.loads((d / "run.json").read_text())
            meta["experiment_sha256"] = hashlib.sha256((d / "experiment.toml").read_bytes()).hexdigest()
            (d / "run.json").write_text(json.dumps(meta))
        report("an error in a stored experiment names DIR/experiment.toml", stored_error,
               says=["runs/events/experiment\\.toml:\\d+"])

        def deep_stored(tmp, d):
            t = (d / "experiment.toml").read_text() + "\n[x]\n" + ".".join(["a"] * 1000) + " = 1\n"
            (d / "experiment.toml").write_text(t)
            meta = json.loads((d / "run.json").read_text())
            meta["experiment_sha256"] = hashlib.sha256(t.encode()).hexdigest()
            (d / "run.json").write_text(json.dumps(meta))
        report("a stored experiment nested too deep", deep_stored, says=["experiment\\.toml:\\d+"])

        def big_template(tmp, d):
            (d / "template.md.j2").write_text(
                "{% for a in range(100000) %}{% for b in range(100000) %}x{% endfor %}{% endfor %}")
        report("template.md.j2 with nested loops", big_template)

        # A 300-character kernel name that passed `plan` fails the report after deleting plots/.
        def long_name_run(tmp):
            d = self.copy_run(tmp, "events")
            long = "m" * 300
            t = (d / "experiment.toml").read_text()
            (d / "experiment.toml").write_text(t.replace('name = "matmul"', f'name = "{long}"'))
            t = (d / "cells.jsonl").read_text()
            (d / "cells.jsonl").write_text(t.replace('"id":"matmul/', f'"id":"{long}/'))
            text = gzip.decompress((d / "samples.csv.gz").read_bytes()).decode()
            text = "\n".join(l.replace("matmul/", f"{long}/", 1).replace(",matmul,", f",{long},", 1)
                             for l in text.split("\n"))
            (d / "samples.csv.gz").write_bytes(gzip.compress(text.encode()))
            text = gzip.decompress((d / "telemetry.csv.gz").read_bytes()).decode()
            text = "\n".join(l.replace("matmul/", f"{long}/", 1) for l in text.split("\n"))
            (d / "telemetry.csv.gz").write_bytes(gzip.compress(text.encode()))
            meta = json.loads((d / "run.json").read_text())
            meta["experiment_sha256"] = hashlib.sha256((d / "experiment.toml").read_bytes()).hexdigest()
            (d / "run.json").write_text(json.dumps(meta))
            plots = snapshot(d / "plots")

            def after(tmp, rc, err):
                if rc != 0 and snapshot(d / "plots") != plots:
                    return [("data-lost", "plots/ deleted by a report that failed")]
                return []
            case = Case("a kernel named with 300 characters", ["report", str(d)], "refuse")
            case.after = after
            return case
        self.run("a kernel named with 300 characters", long_name_run)

    def merges(self):
        def merge(name, make, expect="refuse", says=()):
            def build(tmp):
                argv, keep = make(tmp)
                return Case(name, ["merge"] + argv, expect, says, keep=keep)
            self.run(name, build)

        def parts(tmp):
            a = self.copy_run(tmp, "compare")
            return a

        merge("the same part twice", lambda tmp: ([str(parts(tmp)), str(tmp / "runs/compare"),
                                                   "--out", str(tmp / "m")], []))
        merge("a part and the same with a slash",
              lambda tmp: ([str(parts(tmp)), str(tmp / "runs/compare") + "/", "--out", str(tmp / "m")], []))

        def copy_twice(tmp):
            a = parts(tmp)
            b = tmp / "copy" / "compare"
            shutil.copytree(a, b)
            return [str(a), str(b), "--out", str(tmp / "m")], []
        merge("a part and its copy", copy_twice)

        def into_other(tmp):
            a = parts(tmp)
            other = self.copy_run(tmp, "events")
            return [str(a), "--out", str(other)], [other]
        merge("--out into another experiment's run", into_other)

        def into_older(tmp):
            a = parts(tmp)
            other = self.copy_run(tmp, "compare-run2")
            return [str(a), "--out", str(other)], [other]
        merge("--out into an earlier run of the experiment", into_older)

        def through_link(tmp):
            a = parts(tmp)
            out = tmp / "m"
            out.mkdir()
            (out / "cells.jsonl").symlink_to(tmp / "outside" / "canary.txt")
            return [str(a), "--out", str(out)], []
        merge("--out whose cells.jsonl is a link outside", through_link, expect="any")

        def through_link2(tmp):
            a = parts(tmp)
            out = tmp / "m"
            out.mkdir()
            (out / "report.md").symlink_to(tmp / "outside" / "canary.txt")
            return [str(a), "--out", str(out)], []
        merge("--out whose report.md is a link outside", through_link2, expect="any")
        merge("nothing to merge", lambda tmp: (["--out", str(tmp / "m")], []))

    def runs(self):
        """`runner run` on a machine without a GPU must leave every run as it was."""
        exp = ROOT / "experiments" / "kernels.toml"

        def keep_run(name, argv_of, setup=None):
            def build(tmp):
                out = tmp / "reports"
                out.mkdir()
                good = self.copy_run(tmp, "kernels", out / "kernels")
                argv = argv_of(tmp, out, good)
                return Case(name, argv, "refuse", keep=[good])
            self.run(name, build)

        keep_run("run --devices 0,1 over a good run",
                 lambda tmp, out, good: ["run", str(exp), "--devices", "0,1", "--out", str(out)])
        keep_run("run --shard 0/1 over a good run",
                 lambda tmp, out, good: ["run", str(exp), "--shard", "0/1", "--out", str(out)])
        keep_run("run over a good run",
                 lambda tmp, out, good: ["run", str(exp), "--out", str(out)])
        keep_run("run --resume of a good run",
                 lambda tmp, out, good: ["run", "--resume", str(good)])

        def resume_part(tmp):
            part = self.copy_run(tmp, "kernels")
            meta = json.loads((part / "run.json").read_text())
            lines = (part / "cells.jsonl").read_text().splitlines()
            ids = []
            for l in lines:
                i = json.loads(l)["id"]
                if i not in ids:
                    ids.append(i)
            meta["shard"] = {"shard": {"index": 0, "count": 1}, "cells": ids}
            meta["complete"] = False
            (part / "run.json").write_text(json.dumps(meta))
            (part / "cells.jsonl").write_text("\n".join(lines[: len(lines) // 2]) + "\n")
            return Case("resume a shard part without a GPU", ["run", "--resume", str(part)],
                        "refuse", keep=[part], cwd=ROOT)
        self.run("resume a shard part without a GPU", resume_part)

        def dots(tmp):
            out = tmp / "OUT"
            out.mkdir()
            (tmp / "sources").mkdir()
            (tmp / "sources" / "canary.txt").write_text("canary\n")
            e = tmp / "exps"
            e.mkdir()
            shutil.copy(exp, e / "...toml")
            (tmp / "kernels").symlink_to(ROOT / "kernels")
            return Case("an experiment named ...toml", ["run", str(e / "...toml"), "--shard", "0/1",
                                                        "--out", str(out)], "refuse",
                        outside=[tmp / "sources"])
        self.run("an experiment named ...toml", dots)

        def dots_plain(tmp):
            out = tmp / "OUT"
            out.mkdir()
            (tmp / "run.json").write_text("{}")
            e = tmp / "exps"
            e.mkdir()
            shutil.copy(exp, e / "...toml")
            (tmp / "kernels").symlink_to(ROOT / "kernels")
            return Case("an experiment named ...toml, --devices", ["run", str(e / "...toml"),
                                                                  "--devices", "0", "--out", str(out)],
                        "refuse", outside=[tmp / "exps"])
        self.run("an experiment named ...toml, --devices", dots_plain)

    def slurm(self):
        exp = ROOT / "experiments" / "kernels.toml"

        def script(name, fname, extra, expect_refusal=False):
            def build(tmp):
                e = tmp / "exps"
                e.mkdir()
                (tmp / "kernels").symlink_to(ROOT / "kernels")
                path = e / fname
                shutil.copy(exp, path)
                out = tmp / "out"
                case = Case(name, ["sbatch", str(path), "--parts", "2", "--out", str(out)] + extra,
                            "refuse" if expect_refusal else "any")

                def after(tmp, rc, err):
                    problems = []
                    for s in out.rglob("*.sbatch"):
                        # The script as a task would run it, with a runner that does nothing.
                        env = dict(os.environ, SLURM_ARRAY_TASK_ID="0")
                        subprocess.run(["bash", str(s)], cwd=tmp, env=env, capture_output=True,
                                       timeout=30)
                        text = s.read_text()
                        for line in text.splitlines():
                            if line.startswith("#SBATCH") and ("\n" in line):
                                problems.append(("write-outside", "a newline in #SBATCH"))
                        if re.search(r"^touch", text, re.M):
                            problems.append(("write-outside", f"{s.name}: a line starts a command"))
                    if any(p.name == "PWNED" for p in tmp.rglob("PWNED")):
                        problems.append(("write-outside", "the script ran an injected command"))
                    return problems
                case.after = after
                return case
            self.run(name, build)

        script("sbatch: file named x$(touch PWNED).toml", "x$(touch PWNED).toml", [], True)
        script("sbatch: file named x`touch PWNED`.toml", "x`touch PWNED`.toml", [], True)
        script("sbatch: a newline in the file name", "a\ntouch PWNED\n.toml", [], True)
        script("sbatch: a newline in --partition", "ok.toml", ["--partition", "gpu\ntouch PWNED"], True)
        script("sbatch: $() in --partition", "ok.toml", ["--partition", "gpu$(touch PWNED)"], True)
        script("sbatch: --minutes 0", "ok.toml", ["--minutes", "0"], True)
        script("sbatch: --minutes huge", "ok.toml", ["--minutes", "18446744073709551615"], True)

        def parts(n):
            def build(tmp):
                return Case(f"sbatch --parts {n}", ["sbatch", str(exp), "--parts", n, "--out",
                                                    str(tmp / "o")], "refuse")
            self.run(f"sbatch --parts {n}", build)
        for n in ["0", "1000000000", "-1"]:
            parts(n)

        def out_newline(tmp):
            out = tmp / "o\ntouch PWNED\n"
            case = Case("sbatch: a newline in --out", ["sbatch", str(exp), "--parts", "2", "--out",
                                                       str(out)], "refuse")
            return case
        self.run("sbatch: a newline in --out", out_newline)

    def cli(self):
        def usage(name, argv):
            def build(tmp):
                case = Case(name, argv, "refuse")
                return case
            self.run(name, build)
        usage("an unknown flag", ["--no-such-flag"])
        usage("compare with one run", ["compare", "x"])
        usage("sbatch --minutes x", ["sbatch", "e.toml", "--parts", "2", "--minutes", "x"])
        usage("run --shard 2/1", ["run", str(ROOT / "experiments/kernels.toml"), "--shard", "2/1"])
        usage("--each without --devices", ["run", "x.toml", "--each"])

        def compare(name, a, b, expect):
            def build(tmp):
                x = self.copy_run(tmp, a)
                y = self.copy_run(tmp, b) if b != a else x
                return Case(name, ["compare", str(x), str(y)], expect)
            self.run(name, build)
        compare("compare two different experiments", "events", "kernels", "refuse")
        compare("compare a run with itself", "compare", "compare", "ok")
        compare("compare A/B", "compare", "compare-tiled", "any")

        def no_common(tmp):
            x = self.copy_run(tmp, "compare")
            y = self.copy_run(tmp, "compare-run2")
            cells = (y / "cells.jsonl").read_text().replace("matmul", "other")
            (y / "cells.jsonl").write_text(cells)
            return Case("compare with no common cell", ["compare", str(x), str(y)], "refuse")
        self.run("compare with no common cell", no_common)

    def more(self):
        """Command-line values, run folders edited field by field, and knobs of every kind
        given values of every wrong kind."""
        base = base_experiment(self.kernels)
        defaults = "[defaults]\nsamples = 20\nwarmup = 5\n"

        def plan_args(name, args, expect="refuse"):
            def build(tmp):
                path = self.experiment(tmp, base, "ok.toml")
                return Case(name, ["plan", str(path)] + args, expect)
            self.run(name, build)
        for v in ["n=1e309", "n=$(touch PWNED)", "n=", "n=1..1000000000", "n=nan", "n=64,64",
                  "n=-64", "n=2^63", "kernel=x", "=5", "n=64\n96"]:
            plan_args(f"--set {v!r}", ["--set", v])
        for v in ["kernel=[", "variant=", "kernel=\n", "x"]:
            plan_args(f"--only {v[:20]!r}", ["--only", v])
        plan_args("--only of 10000 stars", ["--only", "n=" + "*" * 10000], "any")
        for v in ["0/0", "1/1", "5/3", "-1/2", "99999999999999999999/2", "a/b"]:
            def build(tmp, v=v):
                return Case(f"--shard {v}", ["run", str(ROOT / "experiments/kernels.toml"),
                                             "--shard", v, "--out", str(tmp / "o")], "refuse")
            self.run(f"--shard {v}", build)
        for v in ["0,0", "-1", "99999999999", "", "a", "0;touch PWNED"]:
            def build(tmp, v=v):
                return Case(f"--devices {v!r}", ["run", str(ROOT / "experiments/kernels.toml"),
                                                 "--devices", v, "--out", str(tmp / "o")], "refuse")
            self.run(f"--devices {v!r}", build)
        # Knobs given values of the wrong kind.
        for key in ["samples", "warmup", "batch", "graph", "rotate", "rounds", "processes",
                    "queue_wait_us", "flush_bytes", "shared_bytes"]:
            for v in ["-1", '"abc"', "1.5", "9223372036854775807", '"n / 0"', '"n ** 100"',
                      "true", "[1]"]:
                extra = f"{key} = {v}"
                if key == "processes":
                    extra += "\nfresh_process = true"
                if key == "rounds":
                    extra += '\norder = "interleaved"'
                if key == "queue_wait_us":
                    extra += '\nqueue = "saturate"'
                if key == "flush_bytes":
                    extra += '\ncache = "flush"'
                self.plan(f"{key} = {v}", base.replace(defaults, defaults + extra + "\n"),
                          says=["bad\\.toml:\\d+"])
        for key in ["timeout", "gpu_warmup"]:
            for v in ['"-1s"', '"nan s"', '"inf s"', "5", '""'] + (['"0"'] if key == "timeout" else []):
                text = (base.replace(defaults, defaults + f"{key} = {v}\n") if key == "timeout"
                        else base + f"\n[environment]\n{key} = {v}\n")
                self.plan(f"{key} = {v}", text)
        # Run folders edited field by field: refused whole, or the damaged cell left out.
        def report(name, tamper, expect="any", check=None):
            def build(tmp):
                d = self.copy_run(tmp, "events")
                tamper(d)
                case = Case(name, ["report", str(d)], expect)
                case.after = check
                return case
            self.run(name, build)

        def meta_edit(key, value):
            def t(d):
                meta = json.loads((d / "run.json").read_text())
                meta[key] = value
                (d / "run.json").write_text(json.dumps(meta))
            return t
        for key, value in [("experiment_path", "../../../etc/passwd"), ("experiment_path", ""),
                           ("set", ["n=$(touch PWNED)"]), ("set", ["n=1e309"]),
                           ("only", ["kernel=["]), ("shard", {"shard": {"index": 0, "count": 1},
                                                               "cells": ["nope"]}),
                           ("device", {"bogus": 1}), ("started_utc", 5), ("complete", "yes")]:
            report(f"run.json {key} = {json.dumps(value)[:30]}", meta_edit(key, value))

        def column_value(name, col, v, every):
            def t(d):
                lines = gzip.decompress((d / name).read_bytes()).decode().split("\n")
                header = lines[0].split(",")
                i = header.index(col)
                for j in range(1, len(lines), every):
                    f = lines[j].split(",")
                    if len(f) == len(header):
                        f[i] = v
                        lines[j] = ",".join(f)
                (d / name).write_bytes(gzip.compress("\n".join(lines).encode()))
            return t
        for col in ["t_us", "sm_mhz", "power_w", "temp_c"]:
            for v in ["NaN", "inf", "-1e308", "99999999999999999999"]:
                report(f"telemetry {col} = {v}", column_value("telemetry.csv.gz", col, v, 7))

        for v in ["NaN", "inf", "-inf", "1e308"]:
            report(f"samples t_us = {v}", column_value("samples.csv.gz", "t_us", v, 5))

        def record_value(key, v):
            def t(d):
                lines = (d / "cells.jsonl").read_text().splitlines()
                r = json.loads(lines[0])
                r[key] = v
                lines[0] = json.dumps(r)
                (d / "cells.jsonl").write_text("\n".join(lines) + "\n")
            return t
        for key, v in [("cell", 10**9), ("cell", -1), ("process", 2**40), ("status", "weird"),
                       ("wall_s", None), ("wall_s", 1e308), ("id", "x" * 5000), ("first_ns", -1.0),
                       ("gpu", "../../etc")]:
            report(f"cells.jsonl {key} = {str(v)[:20]}", record_value(key, v))

        def peers_file(text):
            def t(d):
                (d / "peers.csv").write_text(text)
            return t
        for text in ["peer,point,process,time_ns,note\np,512,0,NaN,\n",
                     "peer,point,process,time_ns,note\np,512,0,-5,\n",
                     "peer,point,process,time_ns,note\np,512,99999999999,1,\n",
                     "x\n" * 1000, "peer,point,process,time_ns,note\n" + "p,512,0,1,\n" * 100000]:
            report(f"peers.csv {text[:40]!r}", peers_file(text))

        def report_cmd(name, argv_of, expect="refuse"):
            def build(tmp):
                d = self.copy_run(tmp, "events")
                return Case(name, argv_of(tmp, d), expect)
            self.run(name, build)
        report_cmd("report --template /dev/zero", lambda tmp, d: ["report", str(d), "--template", "/dev/zero"])
        report_cmd("report --template a FIFO", lambda tmp, d: (os.mkfifo(tmp / "f"), ["report", str(d), "--template", str(tmp / "f")])[1])
        report_cmd("report --template missing", lambda tmp, d: ["report", str(d), "--template", str(tmp / "none")])
        report_cmd("report --compare itself", lambda tmp, d: ["report", str(d), "--compare", str(d)], "any")
        report_cmd("report --compare another experiment",
                   lambda tmp, d: ["report", str(d), "--compare", str(self.copy_run(tmp, "kernels"))])
        report_cmd("report on a file", lambda tmp, d: ["report", str(d / "run.json")])
        report_cmd("report on /dev/null", lambda tmp, d: ["report", "/dev/null"])
        report_cmd("compare --json through a link",
                   lambda tmp, d: ((tmp / "j.json").symlink_to(tmp / "outside" / "canary.txt"),
                                   ["compare", str(d), str(d), "--json", str(tmp / "j.json")])[1], "any")
        for v in ["nan", "inf", "-1", "0", "100"]:
            report_cmd(f"compare --threshold {v}", lambda tmp, d, v=v: ["compare", str(d), str(d), "--threshold", v])
            report_cmd(f"compare --floor {v}", lambda tmp, d, v=v: ["compare", str(d), str(d), "--floor", v], "any" if v in ("0", "100") else "refuse")

        def sources_link(tmp):
            a = self.copy_run(tmp, "compare")
            src = next((a / "sources").rglob("*.cu"))
            src.unlink()
            src.symlink_to(tmp / "outside" / "canary.txt")
            return Case("merge a part whose sources/ holds a link", ["merge", str(a), "--out", str(tmp / "m")], "refuse")
        self.run("merge a part whose sources/ holds a link", sources_link)

    # --- issue 39: damage that stays local, exits, bounds, two reports at once, names, signals

    def render(self, d: Path):
        """`runner report d` as a case runs it, outside the count: (exit code, stderr)."""
        try:
            p = subprocess.run([str(self.runner), "report", str(d)], capture_output=True,
                               timeout=TIME_LIMIT_S, preexec_fn=limit_child,
                               stdin=subprocess.DEVNULL)
            return p.returncode, p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            return None, ""

    def local(self, name, run, tamper, expect="ok", merge=False):
        """The committed run `run` copied and damaged by `tamper(d)`, which returns the
        cells its damage touched, then rendered (or with `merge`, merged into a new run).
        Judged against the same run undamaged, rendered by the same runner: a cell lost
        beyond those damaged is data-lost, a lost cell the runner does not name unclear."""
        def build(tmp):
            d = self.copy_run(tmp, run)
            pristine = self.copy_run(tmp, run, tmp / "pristine" / run)
            damaged = tamper(d)
            out = tmp / "merged"
            argv = ["merge", str(d), "--out", str(out)] if merge else ["report", str(d)]

            def after(tmp, rc, err):
                if rc not in (0, SLOWER) and not merge:
                    return []  # refused whole: counted already
                if merge:
                    # What the merged run holds, against the part's records.
                    kept = records_of(out) if out.exists() else []
                    whole = records_of(pristine)
                    if kept is None or whole is None:
                        return [("data-lost", "the merged run's records do not read")]
                    lost = set(whole) - set(kept)
                else:
                    code, why = self.render(pristine)
                    if code != 0:
                        return [("data-lost", f"the undamaged run does not render: {why[-200:]}")]
                    lost = summary_cells(pristine) - summary_cells(d)
                problems = []
                beyond = sorted(lost - damaged)
                if beyond:
                    problems.append(("data-lost", f"{len(beyond)} cell(s) lost beyond the "
                                     f"{len(damaged)} damaged, e.g. {beyond[0]}"))
                unnamed = sorted(c for c in lost if c not in err)
                if unnamed:
                    problems.append(("unclear", f"{len(unnamed)} lost cell(s) not named, "
                                     f"e.g. {unnamed[0]}: {err.strip()[-200:]}"))
                return problems
            return Case(name, argv, expect, after=after)
        self.run(name, build)

    def damage_local(self):
        if not shutil.which("zstd"):
            print("  (no zstd command: the cases that damage zstd runs are skipped)")
            return

        def corrupt_frame(fname, which=None):
            def t(d):
                data = bytearray((d / fname).read_bytes())
                spans = zstd_frames(bytes(data))
                k = which if which is not None else len(spans) // 2
                a, e = spans[k]
                text = unzstd(bytes(data[a:e]))
                data[(a + e) // 2] ^= 0xFF
                (d / fname).write_bytes(bytes(data))
                if fname.startswith("cells"):
                    return {json.loads(text)["id"]}
                return row_cells(text)
            return t
        self.local("damage: a corrupt zstd frame in the middle of samples.csv.zst",
                   "reduction-audited", corrupt_frame("samples.csv.zst"))
        # accuracy-audited stores a frame per record, as runs are written now.
        self.local("damage: a corrupt record frame in the middle of cells.jsonl.zst",
                   "accuracy-audited", corrupt_frame("cells.jsonl.zst"))

        def gzip_member(fname, k):
            def t(d):
                data = bytearray((d / fname).read_bytes())
                a, e, text = gzip_members(bytes(data))[k]
                data[(a + e) // 2] ^= 0x10
                (d / fname).write_bytes(bytes(data))
                return row_cells(text)
            return t
        self.local("damage: a flipped byte in gzip member 3 of samples.csv.gz", "events",
                   gzip_member("samples.csv.gz", 2))

        def not_utf8_plain(d):
            lines = (d / "cells.jsonl").read_bytes().split(b"\n")
            bad = lines[5]
            lines[5] = bad[:-2] + b"\xff" + bad[-2:]
            (d / "cells.jsonl").write_bytes(b"\n".join(lines))
            return {json.loads(bad)["id"]}
        self.local("damage: a record that is not UTF-8 in cells.jsonl", "events", not_utf8_plain)

        def not_utf8_zstd(d):
            data = (d / "cells.jsonl.zst").read_bytes()
            spans = zstd_frames(data)
            a, e = spans[5]
            text = unzstd(data[a:e])
            bad = text.rstrip(b"\n")
            frame = zstd_frame(bad[:-2] + b"\xff" + bad[-2:] + b"\n")
            (d / "cells.jsonl.zst").write_bytes(data[:a] + frame + data[e:])
            return {json.loads(text)["id"]}
        self.local("damage: a record that is not UTF-8 in cells.jsonl.zst", "accuracy-audited",
                   not_utf8_zstd)

        def peers_row(run):
            name = f"damage: a malformed peers.csv row ({run})"

            def build(tmp):
                d = self.copy_run(tmp, run)
                pristine = self.copy_run(tmp, run, tmp / "pristine" / run)
                lines = (d / "peers.csv").read_text().splitlines()
                peer = lines[1].split(",")[0]
                lines.insert(len(lines) // 2, f"{peer},512,not-a-process")
                (d / "peers.csv").write_text("\n".join(lines) + "\n")
                names = {l.split(",")[0] for l in lines[1:]}

                def after(tmp, rc, err):
                    if rc != 0:
                        return []
                    code, why = self.render(pristine)
                    if code != 0:
                        return [("data-lost", f"the undamaged run does not render: {why[-200:]}")]
                    count = lambda r: sum(any(n in l for n in names)
                                          for l in (r / "report.md").read_text().splitlines())
                    problems = []
                    if count(d) < count(pristine):
                        problems.append(("data-lost", f"the report shows {count(d)} lines of "
                                         f"peers, {count(pristine)} undamaged"))
                    if "peers.csv" not in err:
                        problems.append(("unclear", "the dropped row is not named"))
                    return problems
                return Case(name, ["report", str(d)], "ok", after=after)
            self.run(name, build)
        peers_row("cold-start-audited")
        peers_row("events")

        def frame_twice(tmp_name, run, fname):
            def build(tmp):
                d = self.copy_run(tmp, run)
                pristine = self.copy_run(tmp, run, tmp / "pristine" / run)
                data = (d / fname).read_bytes()
                a, e = zstd_frames(data)[len(zstd_frames(data)) // 2]
                (d / fname).write_bytes(data[:e] + data[a:e] + data[e:])

                def after(tmp, rc, err):
                    if rc != 0:
                        return []
                    code, why = self.render(pristine)
                    if code != 0:
                        return [("data-lost", f"the undamaged run does not render: {why[-200:]}")]
                    if (d / "summary.csv").read_text() != (pristine / "summary.csv").read_text():
                        return [("accepted-invalid", "the repeated frame's samples are counted"
                                 " twice: the summary differs from the undamaged run's")]
                    return []
                return Case(tmp_name, ["report", str(d)], "ok", after=after)
            self.run(tmp_name, build)
        frame_twice("damage: a samples frame stored twice", "reduction-audited", "samples.csv.zst")

        # A merge of a part damaged so: it may not exit 0 when the part lost cells.
        self.local("merge: a part with a corrupt samples frame", "reduction-audited",
                   corrupt_frame("samples.csv.zst"), expect="refuse", merge=True)
        self.local("merge: a part with a corrupt record frame", "accuracy-audited",
                   corrupt_frame("cells.jsonl.zst"), expect="refuse", merge=True)

    def exits(self):
        base = base_experiment(self.kernels)

        def all_failed(tmp):
            old = self.copy_run(tmp, "compare")
            new = self.copy_run(tmp, "compare-run2")
            records = []
            for line in (new / "cells.jsonl").read_text().splitlines():
                r = json.loads(line)
                r["status"] = "failed"
                r["error"] = "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"
                for key in ["first_ns", "samples_ns", "check"]:
                    r.pop(key, None)
                records.append(json.dumps(r))
            (new / "cells.jsonl").write_text("\n".join(records) + "\n")
            header = gzip.decompress((new / "samples.csv.gz").read_bytes()).split(b"\n")[0]
            (new / "samples.csv.gz").write_bytes(gzip.compress(header + b"\n"))
            return Case("compare OLD NEW where every cell of NEW failed",
                        ["compare", str(old), str(new)], "refuse")
        self.run("compare OLD NEW where every cell of NEW failed", all_failed)

        # Output cut short: a pipe closed early, a full disk.
        big = base.replace("n = [64, 96]", "n = [" + ", ".join(str(64 + i) for i in range(3000)) + "]")

        def piped(name, text, how, argv_of=None):
            def build(tmp):
                path = self.experiment(tmp, text, "ok.toml")
                argv = argv_of(tmp) if argv_of else ["plan", str(path)]
                return Case(name, argv, "any", stdout=how, clean_rcs=(0, 141, -signal.SIGPIPE))
            self.run(name, build)
        piped("plan | head -1", base, "head")
        piped("plan of 6000 cells | head -1", big, "head")
        piped("compare | a reader that closes at once", base, "closed",
              lambda tmp: ["compare", str(self.copy_run(tmp, "compare")),
                           str(self.copy_run(tmp, "compare-run2"))])

        def full(name, argv_of, says=("No space left",), stream="stdout"):
            def build(tmp):
                path = self.experiment(tmp, base, "ok.toml")
                kw = {stream: "full"}
                return Case(name, argv_of(tmp, path), "refuse", says if stream == "stdout" else (),
                            **kw)
            self.run(name, build)
        full("plan > /dev/full", lambda tmp, path: ["plan", str(path)])
        full("compare > /dev/full", lambda tmp, path: ["compare", str(self.copy_run(tmp, "compare")),
                                                        str(self.copy_run(tmp, "compare-run2"))])
        full("--help > /dev/full", lambda tmp, path: ["--help"])
        full("an error to a full stderr (2> /dev/full)",
             lambda tmp, path: ["plan", str(tmp / "missing.toml")], stream="stderr")

    def bounded(self):
        header = b"cell,kernel,variant,timer,n,process,phase,index,time_ns,t_us\n"

        def stored(name, content, expect="any", says=(), sparse=None):
            def build(tmp):
                d = self.copy_run(tmp, "reduction-audited")
                path = d / "samples.csv.zst"
                path.write_bytes(zstd_frame(header) + content())
                if sparse:
                    os.truncate(path, sparse)
                return Case(name, ["report", str(d)], expect, says)
            self.run(name, build)

        def one_field(fields=512, rle=33):
            # A zstd frame of one field without a comma or a newline: `fields` raw blocks of
            # 128 KiB, each followed by `rle` RLE blocks of 128 KiB. 512 and 33: 64 MiB of
            # zstd, 2.1 GiB decoded, 34 times the compressed bytes (under the 64 times a
            # cap may grow by).
            block = 1 << 17
            raw = (b"abcdefghijklmnopqrstuvwxyz" * (block // 26 + 1))[:block]
            out = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")
            for i in range(fields):
                out += (block << 3).to_bytes(3, "little") + raw
                for j in range(rle):
                    last = int(i == fields - 1 and j == rle - 1)
                    out += ((block << 3) | (1 << 1) | last).to_bytes(3, "little") + b"y"
            return bytes(out)
        stored("samples.csv.zst: one 2.1 GiB field in 64 MiB of zstd", one_field)
        stored("samples.csv.zst: one 2.5 GiB field in 80 KB of zstd",
               lambda: zstd_bomb(b"x", 5 << 29))
        # A sparse file costs nothing on disk: its size may not raise the cap.
        stored("samples.csv.zst: 80 KB of zstd (a 2.5 GiB field) in a sparse 4 GiB file",
               lambda: zstd_bomb(b"x", 5 << 29), "refuse", [r"more than 1(\.0)? GiB"],
               sparse=(4 << 30) - 1)

    def concurrency(self):
        name = "two reports at once on one folder, 20 times"
        if self.only and self.only not in name:
            return
        tmp = Path(tempfile.mkdtemp(prefix="hostile-"))
        problems = []
        try:
            self.cases += 1
            d = self.copy_run(tmp, "events")
            stored = {f: snapshot(d / f) for f in ["cells.jsonl", "samples.csv.gz", "run.json"]}
            failed = 0
            for _ in range(20):
                pair = [subprocess.Popen([str(self.runner), "report", str(d)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         preexec_fn=limit_child, stdin=subprocess.DEVNULL)
                        for _ in range(2)]
                for child in pair:
                    try:
                        _, err = child.communicate(timeout=TIME_LIMIT_S)
                        rc, err = child.returncode, err.decode("utf-8", "replace")
                    except subprocess.TimeoutExpired:
                        os.killpg(child.pid, signal.SIGKILL)
                        child.communicate()
                        problems.append(("unbounded", f"over {TIME_LIMIT_S} s"))
                        continue
                    if rc < 0 or rc in (101, 134) or "panicked" in err:
                        problems.append(("crash", f"rc {rc}: {err.strip()[-200:]}"))
                    elif rc != 0:
                        failed += 1
                        if failed == 1:
                            why = [l for l in err.splitlines() if l.startswith("error")]
                            problems.append(("data-lost", f"a report failed: {why[:1]}"))
            if failed > 1:
                problems.append(("data-lost", f"{failed} of 40 reports failed"))
            left = sorted(p.name for p in d.iterdir() if p.name.startswith(".plots.tmp-"))
            if left:
                problems.append(("data-lost", f"{len(left)} .plots.tmp-* left in the run"))
            if not (d / "plots").is_dir() or not any((d / "plots").iterdir()):
                problems.append(("data-lost", "plots/ is gone"))
            for f, snap in stored.items():
                if snapshot(d / f) != snap:
                    problems.append(("data-lost", f"{f} changed"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        for cls in sorted({c for c, _ in problems}):
            self.counts[cls] += 1
        if problems:
            self.failures.append((name, problems))
            if self.verbose:
                for cls, why in problems:
                    print(f"  {cls:17} {name}: {why}", flush=True)

    def names(self):
        """A 100-character kernel name and 200-character sweep values: refused at `plan`
        naming the file, or rendered (never "File name too long" at report time)."""
        name = "a 100-character kernel name with 200-character sweep values"
        kernel, tag = "k" * 100, "a" * 200

        def forge(d):
            # The committed events run, its kernel renamed and a sweep of one value added.
            t = (d / "experiment.toml").read_text().split("\n[[report.published]]")[0]
            t = t.replace('name = "matmul"', f'name = "{kernel}"')
            t = t.replace("n = [512, 1024, 2048]", f'n = [512, 1024, 2048]\ntag = ["{tag}"]')
            (d / "experiment.toml").write_text(t)
            for f in ["peers.csv", "findings.md"]:
                (d / f).unlink()

            def cell(old):
                if not old.startswith("matmul/"):
                    return old
                _, point, variant = old.split("/")
                return f"{kernel}/{point} tag={tag}/{variant}"
            records = []
            for line in (d / "cells.jsonl").read_text().splitlines():
                r = json.loads(line)
                r["id"] = cell(r["id"])
                records.append(json.dumps(r))
            (d / "cells.jsonl").write_text("\n".join(records) + "\n")
            rows = gzip.decompress((d / "samples.csv.gz").read_bytes()).decode().split("\n")
            for i, row in enumerate(rows):
                f = row.split(",")
                if i == 0:
                    f.insert(f.index("n") + 1, "tag")
                elif len(f) > 5:
                    f.insert(5, tag if f[1] == "matmul" else "")
                    f[0], f[1] = cell(f[0]), kernel if f[1] == "matmul" else f[1]
                rows[i] = ",".join(f)
            (d / "samples.csv.gz").write_bytes(gzip.compress("\n".join(rows).encode()))
            rows = gzip.decompress((d / "telemetry.csv.gz").read_bytes()).decode().split("\n")
            rows = [rows[0]] + [cell(r.split(",", 1)[0]) + "," + r.split(",", 1)[1] if "," in r else r
                                for r in rows[1:]]
            (d / "telemetry.csv.gz").write_bytes(gzip.compress("\n".join(rows).encode()))
            meta = json.loads((d / "run.json").read_text())
            meta["experiment_sha256"] = hashlib.sha256((d / "experiment.toml").read_bytes()).hexdigest()
            (d / "run.json").write_text(json.dumps(meta))
            return t

        def build(tmp):
            d = self.copy_run(tmp, "events")
            text = forge(d)
            path = self.experiment(tmp, text.replace('"../kernels/matmul.cu"',
                                                     f'"{self.kernels / "matmul.cu"}"'))

            def after(tmp, rc, err):
                if rc not in (0, SLOWER):
                    return [] if "bad.toml" in err else [("unclear", f"refused without the file: {err[-200:]}")]
                code, why = self.render(d)
                if code != 0 or "File name too long" in why:
                    line = [l for l in why.splitlines() if l.startswith("error")][:1]
                    return [("accepted-invalid", f"plan accepted it, the report fails: {line}")]
                return []
            return Case(name, ["plan", str(path)], "any", after=after)
        self.run(name, build)

    def signals(self):
        """`runner run` stopped by `timeout -s TERM` under a stand-in CUDA driver (the one
        the tests build, `tests/stand-in-cuda/`), whose worker hangs creating its context:
        no runner or worker may outlive the run."""
        source = ROOT / "tests" / "stand-in-cuda" / "libcuda.c"
        if not shutil.which("cc") or not source.exists():
            print("  (no C compiler or no stand-in driver: the signal cases are skipped; without"
                  " a GPU or the stand-in a run fails before it starts a worker)")
            return
        driver = Path(tempfile.mkdtemp(prefix="hostile-driver-"))
        try:
            built = subprocess.run(["cc", "-shared", "-fPIC", "-o", str(driver / "libcuda.so"),
                                    str(source)], capture_output=True)
            if built.returncode != 0:
                print("  (the stand-in driver does not build: the signal cases are skipped)")
                return
            exp = base_experiment(self.kernels)
            for how, prefix in [("timeout -s TERM", ["timeout", "-s", "TERM", "3"]),
                                ("TERM to the runner alone (timeout --foreground)",
                                 ["timeout", "--foreground", "-s", "TERM", "3"])]:
                for extra in [[], ["--devices", "0"]]:
                    name = f"run {' '.join(extra)} under {how}: no worker left".replace("  ", " ")

                    def build(tmp, prefix=prefix, extra=extra, name=name):
                        path = self.experiment(tmp, exp, "ok.toml")
                        return Case(name, ["run", str(path), "--out", str(tmp / "out")] + extra,
                                    "any", prefix=prefix, processes=True,
                                    env={"LD_LIBRARY_PATH": str(driver)})
                    self.run(name, build)
        finally:
            shutil.rmtree(driver, ignore_errors=True)

    def report_counts(self, since=None):
        """The counts of the whole pass; with `since` (cases, counts and failures taken
        before issue 39's groups ran), those of issue 39's cases beside them."""
        print(f"{self.cases} cases, {len(self.failures)} with a problem")
        for c in CLASSES:
            print(f"  {c:17} {self.counts[c]}")
        if since:
            cases, counts, failures = since
            print(f"of which issue 39's cases: {self.cases - cases}, "
                  f"{len(self.failures) - failures} with a problem")
            for c in CLASSES:
                print(f"  {c:17} {self.counts[c] - counts[c]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    ap.add_argument("--runner", type=Path, default=target / "debug" / "runner")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    p = Pass(args.runner.resolve(), args.verbose, args.only)
    for group in [p.experiments, p.files, p.run_folders, p.merges, p.runs, p.slurm, p.cli, p.more]:
        group()
    since = (p.cases, dict(p.counts), len(p.failures))
    # Issue 39: damage that must stay local, exits, bounds, two reports at once, long
    # names, signals.
    for group in [p.damage_local, p.exits, p.bounded, p.concurrency, p.names, p.signals]:
        group()
    p.report_counts(since)


if __name__ == "__main__":
    main()
