//! A real Slurm on this machine (`tests/slurm-local.sh`): an experiment submitted as a job
//! array of two parts, one part requeued, the parts merged (on a GPU); and, under the
//! stand-in CUDA driver, parts stopped mid-run by `scancel` and by their time limit, one
//! requeued and resumed. Skipped, saying so, where Slurm is not installed or the test
//! cannot start its daemons (it needs root).

mod common;
use common::{has_driver, stand_in_driver, stored_text};
use std::sync::Mutex;

/// One Slurm at a time: each test starts its own daemons on this machine's ports.
static SLURM: Mutex<()> = Mutex::new(());

fn installed(program: &str) -> bool {
    std::process::Command::new("sh")
        .args([
            "-c",
            &format!("command -v {program} || test -x /usr/sbin/{program}"),
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether Slurm's daemons can be started here: installed, and this is root.
fn slurm_here() -> bool {
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let here = ["slurmctld", "slurmd", "munged", "sbatch"]
        .iter()
        .all(|p| installed(p));
    if !(here && root) {
        eprintln!("SKIPPED: Slurm (slurm-wlm: slurmctld, slurmd, munged, sbatch) is not installed, or this is not root; tests/slurm-local.sh runs it where it is");
    }
    here && root
}

#[test]
#[ignore = "starts Slurm daemons as root: cargo test --release --test slurm -- --ignored"]
fn an_experiment_runs_as_a_slurm_array_and_its_parts_merge() {
    if !slurm_here() {
        return;
    }
    if !has_driver() {
        eprintln!("SKIPPED: no CUDA driver, so no part writes a run to merge");
        return;
    }
    let _one = SLURM.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let run = std::process::Command::new("bash")
        .args([
            "tests/slurm-local.sh",
            "experiments/compare.toml",
            out.path().join("slurm").to_str().unwrap(),
        ])
        .env("RUNNER_BIN", env!("CARGO_BIN_EXE_runner"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(text.contains("submitted array job"), "{text}");
    let merged = out.path().join("slurm/compare");
    let cells = stored_text(&merged, "cells.jsonl");
    // Every cell of the plan, from one part or the other.
    assert_eq!(cells.lines().count(), 8, "{cells}");
    assert!(merged.join("report.md").exists());
}

#[test]
#[ignore = "starts Slurm daemons as root: cargo test --release --test slurm -- --ignored"]
fn parts_stopped_by_scancel_and_their_time_limit_stop_cleanly_and_resume() {
    if !slurm_here() {
        return;
    }
    let _one = SLURM.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let driver = stand_in_driver(out.path());
    let run = std::process::Command::new("bash")
        .args([
            "tests/slurm-local.sh",
            "experiments/compare.toml",
            out.path().join("slurm").to_str().unwrap(),
            "stop",
        ])
        .env("RUNNER_BIN", env!("CARGO_BIN_EXE_runner"))
        .env("STAND_IN_CUDA", driver)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(text.contains("slurm stop: array"), "{text}");
}
