//! Helpers for the CLI tests: a scratch folder with experiment files, and the runner binary.
#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The runner under test: `RUNNER_BIN` if set (to test an installed binary on a GPU
/// machine), else the one cargo built.
pub fn runner() -> Command {
    Command::new(
        std::env::var_os("RUNNER_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_runner").into()),
    )
}

pub fn run(args: &[&str]) -> Output {
    runner().args(args).output().expect("runner starts")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The project's own kernels folder, found from the working directory (the package root
/// under `cargo test`, the repository root when a test binary runs elsewhere).
pub fn kernels_dir() -> PathBuf {
    std::env::current_dir().unwrap().join("kernels")
}

/// A valid experiment around the post's matmul (`tests/matmul-experiment.toml`, with the
/// kernel's path in `kernels`); tests replace parts of it.
pub fn matmul_experiment(kernels: &Path) -> String {
    include_str!("../matmul-experiment.toml").replace(
        "\"../kernels/matmul.cu\"",
        &format!("\"{}\"", kernels.join("matmul.cu").display()),
    )
}

/// Writes `text` as `name` in a new scratch folder; returns the folder and the file's path.
pub fn write_experiment(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// Runs the experiment `text` (saved as `name`.toml) on the GPU and reads its cell records;
/// returns the output folder (kept alive by the guard) and the records. Cells may fail
/// (`--allow-failures`): the tests judge each one themselves.
pub fn run_on_gpu(name: &str, text: &str) -> (tempfile::TempDir, PathBuf, Vec<serde_json::Value>) {
    let out_dir = tempfile::tempdir().unwrap();
    let (_d, path) = write_experiment(&format!("{name}.toml"), text);
    let out = run(&[
        path.to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
        "--allow-failures",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = out_dir.path().join(name);
    let records = records_of(&dir);
    (out_dir, dir, records)
}

/// A run folder's stored file `name` (`samples.csv`, `telemetry.csv`, `cells.jsonl`) as
/// text, as the run stored it: `NAME.zst`, `NAME.gz` or plain.
pub fn stored_text(dir: &Path, name: &str) -> String {
    use std::io::Read;
    let open = |ext: &str| std::fs::File::open(dir.join(format!("{name}{ext}")));
    let mut text = String::new();
    if let Ok(file) = open(".zst") {
        zstd::Decoder::new(file).unwrap().read_to_string(&mut text)
    } else if let Ok(file) = open(".gz") {
        flate2::read::MultiGzDecoder::new(file).read_to_string(&mut text)
    } else {
        open("").unwrap().read_to_string(&mut text)
    }
    .unwrap();
    text
}

/// Writes `text` over the run folder's stored file `name` (see [`stored_text`]), in the
/// format it is stored in: a crash or an edit as a test makes it.
pub fn write_stored(dir: &Path, name: &str, text: &str) {
    let path = |ext: &str| dir.join(format!("{name}{ext}"));
    let bytes = if path(".zst").exists() {
        (path(".zst"), zstd::encode_all(text.as_bytes(), 3).unwrap())
    } else if path(".gz").exists() {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(text.as_bytes()).unwrap();
        (path(".gz"), gz.finish().unwrap())
    } else {
        (path(""), text.as_bytes().to_vec())
    };
    std::fs::write(bytes.0, bytes.1).unwrap();
}

/// A run folder's cell records, one JSON value per line of `cells.jsonl`.
pub fn records_of(dir: &Path) -> Vec<serde_json::Value> {
    stored_text(dir, "cells.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The first record whose cell id ends with `suffix`.
pub fn record<'a>(records: &'a [serde_json::Value], suffix: &str) -> &'a serde_json::Value {
    records
        .iter()
        .find(|r| r["id"].as_str().unwrap().ends_with(suffix))
        .unwrap_or_else(|| panic!("no cell ending in {suffix}"))
}

/// The matmul experiment's kernel and sweep with `variants` (defaults, variants, report)
/// in place of its own.
pub fn matmul_with(sizes: &str, variants: &str) -> String {
    let base = matmul_experiment(&kernels_dir()).replace("n = [64, 96]", sizes);
    format!("{}{variants}", &base[..base.find("[defaults]").unwrap()])
}

/// A run's samples as CSV rows (header first), decompressed.
pub fn sample_rows(dir: &Path) -> Vec<Vec<String>> {
    let text = stored_text(dir, "samples.csv");
    csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect()
}

/// The median steady sample of the first cell whose id ends with `suffix`, from a run's
/// samples (first column: cell id; then the phase and the time in ns).
pub fn steady_median(dir: &Path, suffix: &str) -> f64 {
    let rows = sample_rows(dir);
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let (phase, time) = (col("phase"), col("time_ns"));
    let id = rows[1..]
        .iter()
        .map(|r| &r[0])
        .find(|c| c.ends_with(suffix))
        .unwrap_or_else(|| panic!("no samples of a cell ending in {suffix}"))
        .clone();
    let mut v: Vec<f64> = rows[1..]
        .iter()
        .filter(|r| r[0] == id && r[phase] == "steady")
        .map(|r| r[time].parse().unwrap())
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A copy of a committed run in a new scratch folder.
pub fn copy_run(name: &str) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let copy = root.path().join(name);
    copy_dir(&Path::new("reports").join(name), &copy);
    (root, copy)
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for f in std::fs::read_dir(from).unwrap() {
        let f = f.unwrap();
        if f.path().is_dir() {
            copy_dir(&f.path(), &to.join(f.file_name()));
        } else {
            std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
        }
    }
}

/// `runner report DIR`, run from `cwd`.
pub fn report_in(cwd: &Path, dir: &Path) -> Output {
    runner()
        .current_dir(cwd)
        .args(["report", dir.to_str().unwrap()])
        .output()
        .unwrap()
}

/// Every file and link under `dir` with its bytes (a link: its target), to tell whether
/// anything there changed.
pub fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&p).unwrap();
            out.insert(p, target.to_string_lossy().as_bytes().to_vec());
        } else if meta.is_dir() {
            out.extend(snapshot(&p));
        } else {
            out.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
    out
}

/// Whether this machine has a CUDA driver (a run there would start cells).
pub fn has_driver() -> bool {
    [
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
        "/usr/lib64/libcuda.so.1",
        "/usr/local/nvidia/lib64/libcuda.so.1",
        "/usr/lib/libcuda.so.1",
    ]
    .iter()
    .any(|p| Path::new(p).exists())
}

/// `runner ARGS` in `cwd`, killed if it takes longer than `seconds`: None then.
pub fn run_within(cwd: &Path, args: &[&str], seconds: u64) -> Option<Output> {
    let mut child = runner()
        .current_dir(cwd)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runner starts");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while std::time::Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Whether Nsight Compute is where the runner looks for it: on PATH, or in the CUDA
/// toolkit's `bin`.
/// Whether `python3` here imports NumPy, as a Python reference needs.
pub fn has_numpy() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success())
}

pub fn has_ncu() -> bool {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join("ncu").is_file()));
    on_path || Path::new("/usr/local/cuda/bin/ncu").is_file()
}

/// A stand-in CUDA driver (`tests/stand-in-cuda/libcuda.c`) built into `dir` with the C
/// compiler: with `dir` on `LD_LIBRARY_PATH`, a run plans against an H100-like device and
/// its worker hangs creating its context, as on a stuck GPU, until it is killed. `dir`.
pub fn stand_in_driver(dir: &Path) -> PathBuf {
    let source = std::env::current_dir()
        .unwrap()
        .join("tests/stand-in-cuda/libcuda.c");
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.join("libcuda.so"))
        .arg(&source)
        .output()
        .expect("a C compiler (cc) builds the stand-in CUDA driver");
    assert!(built.status.success(), "{}", stderr(&built));
    dir.to_path_buf()
}

/// A stand-in NVRTC (`tests/stand-in-cuda/libnvrtc.c`) built into `dir` with the C
/// compiler: with `dir` on `LD_LIBRARY_PATH`, the runner finds a `libnvrtc.so` that has
/// `nvrtcVersion` alone, or with `nothing`, none of NVRTC's functions. `dir`'s library.
pub fn stand_in_nvrtc(dir: &Path, nothing: bool) -> PathBuf {
    let source = std::env::current_dir()
        .unwrap()
        .join("tests/stand-in-cuda/libnvrtc.c");
    let library = dir.join("libnvrtc.so");
    let mut cc = Command::new("cc");
    cc.args(["-shared", "-fPIC"]);
    if nothing {
        cc.arg("-DNOTHING");
    }
    let built = (cc.arg("-o").arg(&library).arg(&source))
        .output()
        .expect("a C compiler (cc) builds the stand-in NVRTC");
    assert!(built.status.success(), "{}", stderr(&built));
    library
}

/// Process `pid`'s parent and state letter (`R`, `S`, `Z`...), from `/proc/PID/stat`; None
/// once it is gone and reaped.
pub fn process(pid: u32) -> Option<(u32, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    Some((fields.next()?.parse().ok()?, state))
}

/// Whether `pid` has ended: reaped, or a zombie (an orphan's reaper may be slow).
pub fn ended(pid: u32) -> bool {
    process(pid).is_none_or(|(_, state)| state == 'Z')
}

/// The live children of `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&p| process(p).is_some_and(|(parent, state)| parent == pid && state != 'Z'))
        .collect()
}

/// Waits up to `seconds` for `done`; whether it came.
pub fn wait_for(seconds: f64, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds);
    while std::time::Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    done()
}

/// A `.npy` file of u32 values (numpy's format 1.0, C order).
pub fn npy_u32(values: &[u32]) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '<u4', 'fortran_order': False, 'shape': ({},), }}",
        values.len()
    );
    // The header, padded with spaces and ended by a newline, fills a multiple of 64 bytes.
    let pad = 64 - (10 + dict.len() + 1) % 64;
    let header = format!("{dict}{}\n", " ".repeat(pad % 64));
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.bytes());
    out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    out
}
