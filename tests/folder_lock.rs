//! One writer at a time in a run folder, without a GPU: reports and merges of one folder at
//! once take turns, and none fails or leaves a temporary behind; a writer that waits says
//! who holds the folder; what a stopped writer left is removed.

mod common;
use common::*;
use std::path::Path;
use std::process::{Child, Stdio};

/// `runner ARGS`, started with its output kept.
fn start(args: &[&str]) -> Child {
    runner()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runner starts")
}

/// What the runner left in `dir` (not below it) that a finished writer must not: a lock
/// file, temporaries, a folder renamed aside.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// Starts the commands of a round `apart` ms apart and checks each succeeds.
fn all_succeed(round: usize, apart: u64, commands: &[&[&str]]) {
    let started: Vec<Child> = (commands.iter())
        .map(|args| {
            let child = start(args);
            std::thread::sleep(std::time::Duration::from_millis(apart));
            child
        })
        .collect();
    for (child, args) in started.into_iter().zip(commands) {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "round {round}: {args:?} failed: {}",
            stderr(&out)
        );
    }
}

#[test]
fn two_reports_of_one_folder_at_once_both_succeed_and_leave_nothing_behind() {
    let (_root, copy) = copy_run("events");
    let dir = copy.to_str().unwrap();
    for round in 0..40 {
        all_succeed(round, 0, &[&["report", dir], &["report", dir]]);
        assert_eq!(leftovers(&copy), Vec::<String>::new(), "round {round}");
    }
    let plots = |d: &Path| std::fs::read_dir(d.join("plots")).unwrap().count();
    assert_eq!(plots(&copy), plots(Path::new("reports/events")));
    for f in ["report.md", "cells.md", "summary.csv"] {
        let read = |d: &Path| std::fs::read_to_string(d.join(f)).unwrap();
        assert!(read(&copy) == read(Path::new("reports/events")), "{f}");
    }
}

#[test]
fn a_report_during_a_merge_into_its_folder_waits_for_the_merge() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("merged");
    let (part, out_dir) = ("reports/events", out.to_str().unwrap());
    let merge: &[&str] = &["merge", part, "--out", out_dir];
    all_succeed(0, 0, &[merge]);
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.csv")).unwrap();
    // The same run merged again replaces itself, samples and records too; the report
    // starts at a different moment of the merge each round.
    for round in 1..31 {
        all_succeed(
            round,
            round as u64 % 10 * 10,
            &[merge, &["report", out_dir]],
        );
        assert_eq!(leftovers(&out), Vec::<String>::new(), "round {round}");
        assert!(summary(&out) == summary(Path::new(part)), "round {round}");
    }
}

#[test]
fn a_writer_that_waits_says_who_holds_the_folder_and_goes_on_once_it_is_free() {
    let (_root, copy) = copy_run("events");
    // Another runner, as this test stands in for one: it holds the lock and says who it is.
    let lock_path = copy.join(".lock");
    let holder = std::fs::File::create(&lock_path).unwrap();
    holder.lock().unwrap();
    std::fs::write(
        &lock_path,
        "pid 4242 on gpu-7: `runner run x.toml --out runs`, since 2026-01-01T00:00:00Z\n",
    )
    .unwrap();
    let logs = tempfile::tempdir().unwrap();
    let err_path = logs.path().join("stderr");
    let mut report = runner()
        .args(["report", copy.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let said = || std::fs::read_to_string(&err_path).unwrap_or_default();
    assert!(
        wait_for(30.0, || said().contains("waiting for")),
        "it did not say it waits: {}",
        said()
    );
    let err = said();
    assert!(
        err.contains(copy.to_str().unwrap())
            && err.contains("pid 4242 on gpu-7")
            && err.contains("runner run x.toml"),
        "{err}"
    );
    assert!(report.try_wait().unwrap().is_none(), "it did not wait");
    drop(holder);
    let status = report.wait().unwrap();
    assert!(status.success(), "{}", said());
    assert_eq!(leftovers(&copy), Vec::<String>::new());
}

#[test]
fn what_a_stopped_writer_left_half_written_is_removed_by_the_next() {
    let (_root, copy) = copy_run("events");
    // A render killed between writing and renaming, by a process long gone.
    let plots = copy.join(".plots.tmp-4294967295");
    std::fs::create_dir(&plots).unwrap();
    std::fs::write(plots.join("half.svg"), "<svg").unwrap();
    std::fs::write(copy.join(".report.md.tmp-4294967294"), "# half").unwrap();
    std::fs::write(copy.join(".lock"), "pid 4294967293 on h: `runner report`\n").unwrap();
    let out = run(&["report", copy.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(leftovers(&copy), Vec::<String>::new());
}
