//! Stopping without a GPU: a run under a stand-in CUDA driver (`tests/stand-in-cuda/`),
//! whose worker hangs creating its context, stopped by SIGTERM, SIGHUP and SIGINT, and
//! killed outright; and a worker whose parent dies.

mod common;
use common::*;
use rustix::process::{kill_process, Pid, Signal};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn signal(pid: u32, signal: Signal) {
    kill_process(Pid::from_raw(pid as i32).unwrap(), signal).unwrap();
}

/// A runner started under the stand-in driver, its output going to files.
struct Started {
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

impl Started {
    /// `runner ARGS` under the driver in `driver`, its output in `logs`.
    fn new(driver: &Path, logs: &Path, args: &[&str]) -> Started {
        let (out, err) = (logs.join("stdout"), logs.join("stderr"));
        let child = runner()
            .args(args)
            .env("LD_LIBRARY_PATH", driver)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        Started { child, out, err }
    }

    /// Its worker, once it has started one.
    fn worker(&self) -> u32 {
        let mut workers = Vec::new();
        let started = wait_for(60.0, || {
            workers = children_of(self.child.id());
            !workers.is_empty()
        });
        assert!(started, "no worker started: {}", self.text().1);
        workers[0]
    }

    /// How it exited, within `seconds`.
    fn exit_code(&mut self, seconds: f64) -> Option<i32> {
        let mut status = None;
        wait_for(seconds, || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        status.and_then(|s| s.code())
    }

    /// What it wrote to stdout and stderr.
    fn text(&self) -> (String, String) {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        (read(&self.out), read(&self.err))
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `args` under the stand-in driver, sends `sig` once the worker is up, and checks the
/// run stops with `code`, saying `said`, its worker gone and its folder incomplete.
fn stop_with(driver: &Path, dir: &Path, args: &[&str], sig: Signal, code: i32, said: &str) {
    let logs = tempfile::tempdir().unwrap();
    let mut run = Started::new(driver, logs.path(), args);
    let worker = run.worker();
    signal(run.child.id(), sig);
    let exit = run.exit_code(30.0);
    let (out, err) = run.text();
    assert_eq!(exit, Some(code), "{out}\n{err}");
    assert!(out.contains(&format!("{said}: wrote")), "{out}");
    assert!(out.contains("--resume"), "{out}");
    assert!(ended(worker), "the worker outlived the stopped run");
    assert!(children_of(run.child.id()).is_empty());
    let meta = std::fs::read_to_string(dir.join("run.json")).unwrap();
    assert!(meta.contains("\"complete\": false"), "{meta}");
    assert!(dir.join("report.md").exists());
}

#[test]
fn sigterm_sighup_and_sigint_stop_a_run_which_resumes_and_leave_no_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let driver = stand_in_driver(tmp.path());
    let (_d, path) = write_experiment("stopped.toml", &matmul_experiment(&kernels_dir()));
    let out = tmp.path().join("out");
    let dir = out.join("stopped");
    let (path, out, resume) = (
        path.to_str().unwrap(),
        out.to_str().unwrap(),
        dir.to_str().unwrap(),
    );
    let new = ["run", path, "--out", out];
    let resumed = ["run", "--resume", resume];
    stop_with(&driver, &dir, &new, Signal::TERM, 143, "stopped by SIGTERM");
    stop_with(
        &driver,
        &dir,
        &resumed,
        Signal::HUP,
        129,
        "stopped by SIGHUP",
    );
    stop_with(&driver, &dir, &resumed, Signal::INT, 130, "interrupted");
}

#[test]
fn a_sigterm_to_a_run_over_gpus_reaches_every_part_and_its_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let driver = stand_in_driver(tmp.path());
    let (_d, path) = write_experiment("spread.toml", &matmul_experiment(&kernels_dir()));
    let out = tmp.path().join("out");
    let args = [
        "run",
        path.to_str().unwrap(),
        "--devices",
        "0",
        "--out",
        out.to_str().unwrap(),
    ];
    let mut run = Started::new(&driver, tmp.path(), &args);
    // The part's runner, then its worker (hanging in the stand-in's context).
    let part = run.worker();
    let mut workers = Vec::new();
    assert!(wait_for(60.0, || {
        workers = children_of(part);
        !workers.is_empty()
    }));
    // Only the runner the user started is signalled, as `kill` or a scheduler would.
    signal(run.child.id(), Signal::TERM);
    let exit = run.exit_code(30.0);
    let (stdout, stderr) = run.text();
    assert_eq!(exit, Some(143), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("stopped by SIGTERM: each GPU's part stopped"),
        "{stdout}"
    );
    assert!(ended(part), "the part's runner outlived the stopped run");
    assert!(
        wait_for(2.0, || ended(workers[0])),
        "the part's worker lived on"
    );
}

#[test]
fn a_report_of_a_running_run_waits_for_it_and_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let driver = stand_in_driver(tmp.path());
    let (_d, path) = write_experiment("busy.toml", &matmul_experiment(&kernels_dir()));
    let out = tmp.path().join("out");
    let dir = out.join("busy");
    let args = [
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let logs = tempfile::tempdir().unwrap();
    let mut run = Started::new(&driver, tmp.path(), &args);
    run.worker();
    let mut report = Started::new(&driver, logs.path(), &["report", dir.to_str().unwrap()]);
    assert!(
        wait_for(30.0, || report.text().1.contains("waiting for")),
        "the report did not wait: {:?}",
        report.text()
    );
    let said = report.text().1;
    let pid = format!("pid {} on ", run.child.id());
    assert!(said.contains(&pid) && said.contains("busy.toml"), "{said}");
    assert_eq!(
        report.exit_code(0.5),
        None,
        "it went on while the run wrote"
    );
    signal(run.child.id(), Signal::TERM);
    assert_eq!(run.exit_code(30.0), Some(143), "{:?}", run.text());
    assert_eq!(report.exit_code(30.0), Some(0), "{:?}", report.text());
    assert!(!dir.join(".lock").exists());
}

#[test]
fn a_runner_killed_outright_takes_its_worker_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let driver = stand_in_driver(tmp.path());
    let (_d, path) = write_experiment("killed.toml", &matmul_experiment(&kernels_dir()));
    let out = tmp.path().join("out");
    let args = [
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let mut run = Started::new(&driver, tmp.path(), &args);
    let worker = run.worker();
    signal(run.child.id(), Signal::KILL);
    run.child.wait().unwrap();
    assert!(
        wait_for(2.0, || ended(worker)),
        "the worker outlived its runner: {:?}",
        process(worker)
    );
}

/// `sh` starting `runner __worker --parent <sh>` in the background, the worker reading the
/// test's pipe, which stays open: the shell, and the worker's pid.
fn worker_under_a_shell() -> (Child, u32) {
    let mut shell = Command::new("sh")
        .arg("-c")
        // An asynchronous command reads /dev/null unless given another input: fd 3.
        .arg(r#"exec 3<&0; "$0" __worker --parent $$ <&3 & echo $!; wait"#)
        .arg(runner().get_program())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(shell.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    (shell, line.trim().parse().unwrap())
}

#[test]
fn a_worker_dies_with_the_process_that_started_it() {
    let (mut shell, worker) = worker_under_a_shell();
    // Waiting for its job, which never comes: the shell's input stays open.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(process(worker).map(|(p, _)| p), Some(shell.id()));
    assert!(!ended(worker), "the worker stopped before its parent died");
    shell.kill().unwrap();
    shell.wait().unwrap();
    assert!(
        wait_for(2.0, || ended(worker)),
        "the worker outlived its parent: {:?}",
        process(worker)
    );
}

#[test]
fn a_worker_whose_runner_is_gone_does_not_start() {
    let mut gone = Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let mut worker = runner()
        .args(["__worker", "--parent", &gone.id().to_string()])
        .stdin(Stdio::piped()) // open and silent: a worker that started would wait on it
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut status = None;
    wait_for(5.0, || {
        status = worker.try_wait().unwrap();
        status.is_some()
    });
    let _ = worker.kill();
    let out = worker.wait_with_output().unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("is gone"), "{}", stderr(&out));
}
