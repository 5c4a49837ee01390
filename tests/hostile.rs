//! What a hostile folder or terminal cannot make the runner do. A folder is touched only
//! once it is proven a run's, or may become one: `report` on a folder that is not a run,
//! `merge --out` into a person's folder or inside another run, and `run --out` among a
//! person's files are refused before anything in them changes. A stream that cannot be
//! written ends a command quietly, never in a panic.

mod common;
use common::*;
use std::path::Path;

/// A person's folder: dot-files of the shape the runner's temporaries have, a `.lock` of
/// their own and their plots.
fn persons_folder(d: &Path) {
    std::fs::create_dir_all(d.join(".mozilla.old-2023/p")).unwrap();
    std::fs::write(d.join(".bashrc.old-2024"), "rc").unwrap();
    std::fs::write(d.join(".lock"), "k").unwrap();
    std::fs::create_dir_all(d.join("plots")).unwrap();
    std::fs::write(d.join("plots/figure.svg"), "<svg/>").unwrap();
}

#[test]
fn report_on_a_folder_that_is_not_a_run_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d");
    persons_folder(&d);
    let before = snapshot(&d);
    let out = run(&["report", d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not a run folder"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(&d), before, "the folder changed");
    assert!(d.join(".mozilla.old-2023/p").is_dir());
}

#[test]
fn merge_into_a_persons_folder_or_inside_a_run_is_refused_unless_forced() {
    let (_keep, part) = copy_run("statistics");
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine");
    persons_folder(&mine);
    let before = snapshot(&mine);
    let merge = |out: &Path, force: bool| {
        let mut args = vec![
            "merge",
            part.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        if force {
            args.push("--force");
        }
        run(&args)
    };
    let out = merge(&mine, false);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("is not a run folder") && e.contains("--force"),
        "{e}"
    );
    assert_eq!(snapshot(&mine), before, "the folder changed");
    // Inside a run: its next report would replace `plots/` and the merged run with it.
    let inside = part.join("plots").join("m");
    let out = merge(&inside, false);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("lies inside the run folder"),
        "{}",
        stderr(&out)
    );
    assert!(!inside.exists());
    // Forced, only what the runner writes is replaced; the person's dot-files stay.
    let out = merge(&mine, true);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(mine.join("run.json").exists());
    assert!(mine.join(".mozilla.old-2023/p").is_dir() && mine.join(".bashrc.old-2024").exists());
}

#[test]
fn a_run_among_a_persons_files_is_refused_before_the_gpu_is_asked_for() {
    let (_d, path) = write_experiment("e.toml", &matmul_experiment(&kernels_dir()));
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("e");
    persons_folder(&mine);
    let before = snapshot(&mine);
    let out = run(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not a run folder"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(&mine), before, "the folder changed");
}

#[test]
fn warnings_into_a_full_or_closed_stream_end_no_command_in_a_panic() {
    let (root, copy) = copy_run("transpose-audited");
    // A frame stored twice: the report warns, and goes on.
    let samples = copy.join("samples.csv.zst");
    let mut bytes = std::fs::read(&samples).unwrap();
    let first = zstd::zstd_safe::find_frame_compressed_size(&bytes).unwrap();
    let frame = bytes[..first].to_vec();
    bytes.splice(first..first, frame);
    std::fs::write(&samples, bytes).unwrap();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    for args in [
        vec!["report", copy.to_str().unwrap()],
        vec!["compare", copy.to_str().unwrap(), copy.to_str().unwrap()],
    ] {
        let out = runner()
            .args(&args)
            .current_dir(root.path())
            .stderr(full.try_clone().unwrap())
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(101), "{args:?} panicked");
        assert!(out.status.code().is_some(), "{args:?} died of a signal");
    }
    // Standard error closed by its reader after one line, as `2>&1 | head -1` does.
    let mut child = runner()
        .args(["report", copy.to_str().unwrap()])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_ne!(status.code(), Some(101), "report panicked");
}
