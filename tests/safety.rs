//! A run never destroys a run, nothing is written or read outside the run folder, nothing
//! is injected into a generated script, and a damaged run folder loses only the cells it
//! damaged; all without a GPU (`benches/hostile/hostile.py` tries many more inputs).

mod common;
use common::*;
use std::path::{Path, PathBuf};

/// A scratch folder with `reports/kernels`, a copy of the committed run.
fn good_run() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("reports");
    copy_dir(Path::new("reports/kernels"), &out.join("kernels"));
    (root, out)
}

#[test]
fn a_run_without_a_gpu_leaves_the_run_folder_as_it_was_and_fails() {
    if has_driver() {
        eprintln!("SKIPPED: this machine has a CUDA driver, a run would start");
        return;
    }
    for extra in [&[][..], &["--devices", "0,1"], &["--shard", "0/1"]] {
        let (_root, out) = good_run();
        let before = snapshot(&out);
        let mut args = vec![
            "run",
            "experiments/kernels.toml",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("no CUDA driver"), "{}", stderr(&o));
        assert!(snapshot(&out) == before, "{extra:?} changed the run folder");
    }
    // A part resumed on a node without a GPU keeps its pending cells pending.
    let (_root, out) = good_run();
    let part = out.join("kernels");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(part.join("run.json")).unwrap()).unwrap();
    let cells = std::fs::read_to_string(part.join("cells.jsonl")).unwrap();
    let mut ids: Vec<String> = Vec::new();
    for line in cells.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = r["id"].as_str().unwrap().to_string();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    meta["shard"] = serde_json::json!({ "shard": { "index": 0, "count": 1 }, "cells": ids });
    meta["complete"] = false.into();
    std::fs::write(part.join("run.json"), meta.to_string()).unwrap();
    let half: Vec<&str> = cells.lines().take(5).collect();
    std::fs::write(part.join("cells.jsonl"), half.join("\n") + "\n").unwrap();
    let before = snapshot(&part);
    let o = run(&["run", "--resume", part.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(snapshot(&part) == before, "the resumed part changed");
}

#[test]
fn merge_refuses_another_run_in_out_unless_forced() {
    let (_root, part) = copy_run("compare");
    let (_other_root, other) = copy_run("events");
    let before = snapshot(&other);
    let merge = |force: bool| {
        let mut args = vec![
            "merge",
            part.to_str().unwrap(),
            "--out",
            other.to_str().unwrap(),
        ];
        if force {
            args.push("--force");
        }
        run(&args)
    };
    let o = merge(false);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("holds a run with") && err.contains("events.toml") && err.contains("--force"),
        "{err}"
    );
    assert!(snapshot(&other) == before, "the other run changed");
    let o = merge(true);
    assert!(o.status.success(), "{}", stderr(&o));
    // Its findings spoke of the run that is gone.
    assert!(!other.join("findings.md").exists());
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.csv")).unwrap();
    assert_eq!(summary(&other), summary(Path::new("reports/compare")));
}

/// A file outside the run folder, and a link to it at `name` in `dir`.
fn link_outside(dir: &Path, name: &str) -> (tempfile::TempDir, PathBuf) {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "SECRET 42\n").unwrap();
    let at = dir.join(name);
    if at.is_dir() {
        std::fs::remove_dir_all(&at).unwrap();
    } else if at.exists() {
        std::fs::remove_file(&at).unwrap();
    }
    let target = if name == "plots" {
        outside.path().to_path_buf()
    } else {
        secret
    };
    std::os::unix::fs::symlink(target, at).unwrap();
    (outside, dir.join(name))
}

#[test]
fn a_link_in_a_run_folder_is_refused_and_nothing_outside_is_read_or_written() {
    for name in [
        "report.md",
        "summary.csv",
        "plots",
        "findings.md",
        "notes.md",
        "template.md.j2",
        "cells.jsonl",
    ] {
        let (root, copy) = copy_run("events");
        let report = std::fs::read_to_string(copy.join("report.md")).unwrap_or_default();
        let (outside, link) = link_outside(&copy, name);
        let before = snapshot(outside.path());
        let out = report_in(root.path(), &copy);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = stderr(&out);
        assert!(
            err.contains("symbolic link") && err.contains(&link.display().to_string()),
            "{name}: {err}"
        );
        assert!(snapshot(outside.path()) == before, "{name}: wrote outside");
        if name != "report.md" {
            let now = std::fs::read_to_string(copy.join("report.md")).unwrap();
            assert!(now == report, "{name}: the report changed");
        }
    }
    // Nor does a merge write through a link in its --out, or compare through --json.
    let (_root, part) = copy_run("compare");
    let out = tempfile::tempdir().unwrap();
    let (outside, _) = link_outside(out.path(), "cells.jsonl");
    let before = snapshot(outside.path());
    let o = run(&[
        "merge",
        part.to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    assert!(snapshot(outside.path()) == before);
    let (outside, json) = link_outside(out.path(), "verdicts.json");
    let before = snapshot(outside.path());
    let p = part.to_str().unwrap();
    let o = run(&["compare", p, p, "--json", json.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(snapshot(outside.path()) == before);
}

#[test]
fn an_experiment_named_dots_writes_nothing_outside_its_folder() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    for d in ["exps", "OUT", "sources"] {
        std::fs::create_dir(r.join(d)).unwrap();
    }
    std::fs::write(r.join("sources/canary.txt"), "canary").unwrap();
    std::os::unix::fs::symlink(kernels_dir(), r.join("kernels")).unwrap();
    let exp = r.join("exps/...toml");
    std::fs::copy("experiments/kernels.toml", &exp).unwrap();
    let before = snapshot(r);
    let out_dir = r.join("OUT");
    for extra in [&["--shard", "0/1"][..], &[], &["--devices", "0"]] {
        let mut args = vec![
            "run",
            exp.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ];
        args.extend(extra);
        let out = run_within(r, &args, 60).expect("refused at once");
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("rename the file"), "{}", stderr(&out));
        assert!(snapshot(r) == before, "{extra:?} wrote");
    }
}

#[test]
fn sbatch_quotes_every_value_and_refuses_what_no_quoting_carries() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::os::unix::fs::symlink(kernels_dir(), r.join("kernels")).unwrap();
    std::fs::create_dir(r.join("exps")).unwrap();
    let out_dir = r.join("out");
    let sbatch = |file: &str, extra: &[&str]| {
        let exp = r.join("exps").join(file);
        std::fs::copy("experiments/kernels.toml", &exp).unwrap();
        let mut args = vec![
            "sbatch",
            exp.to_str().unwrap(),
            "--parts",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
        ];
        args.extend(extra);
        run(&args)
    };
    for (file, extra, says) in [
        ("x$(touch PWNED).toml", &[][..], "rename the file"),
        ("a\ntouch PWNED\n.toml", &[], "rename the file"),
        (
            "k.toml",
            &["--partition", "gpu\ntouch PWNED"],
            "--partition",
        ),
        (
            "k.toml",
            &["--partition", "gpu$(touch PWNED)"],
            "--partition",
        ),
        // sbatch would read it as an option.
        (
            "k.toml",
            &["--partition=--chdir=/x"],
            "not opening with `-`",
        ),
        // Slurm would expand `%j` in the log's name.
        ("k.toml", &["--partition", "gpu%j"], "--partition"),
    ] {
        let out = sbatch(file, extra);
        assert_eq!(out.status.code(), Some(1), "{file} {extra:?}");
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        assert!(!r.join("out").exists(), "{file} {extra:?} wrote a script");
    }
    let out = sbatch("k.toml", &["--minutes", "0"]);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
    // A folder whose name holds a newline cannot be quoted into a line of bash.
    std::fs::create_dir(r.join("exps/a\ntouch PWNED")).unwrap();
    std::os::unix::fs::symlink(kernels_dir(), r.join("exps/kernels")).unwrap();
    let out = sbatch("a\ntouch PWNED/k.toml", &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("holds a newline"), "{}", stderr(&out));
    assert!(!r.join("out").exists());
    // A value with shell syntax is written as one quoted word, which the script keeps.
    let out = sbatch("k.toml", &["--only", "kernel=matmul*,$(touch PWNED)"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let script = r.join("out/k/slurm/array.sbatch");
    let text = std::fs::read_to_string(&script).unwrap();
    assert!(
        text.contains("--only 'kernel=matmul*,$(touch PWNED)'"),
        "{text}"
    );
    if !has_driver() {
        // Run as the array's task 0 would (the runner stops: no GPU).
        let status = std::process::Command::new("bash")
            .arg(&script)
            .current_dir(r)
            .env("SLURM_ARRAY_TASK_ID", "0")
            .output()
            .unwrap();
        assert_eq!(status.status.code(), Some(1));
        assert!(
            !r.join("PWNED").exists(),
            "the script ran an injected command"
        );
    }
}

/// Rewrites a run's gzipped CSV file through `edit` (its lines, header first).
fn edit_csv(path: &Path, edit: impl FnOnce(&mut Vec<String>)) {
    use std::io::{Read, Write};
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    edit(&mut lines);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all((lines.join("\n") + "\n").as_bytes()).unwrap();
    std::fs::write(path, gz.finish().unwrap()).unwrap();
}

/// Sets the first steady sample of `cell` in a run's samples to `time`.
fn set_sample(dir: &Path, cell: &str, time: &str) {
    edit_csv(&dir.join("samples.csv.gz"), |lines| {
        let header: Vec<String> = lines[0].split(',').map(String::from).collect();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let row = (lines.iter_mut())
            .find(|l| l.starts_with(&format!("{cell},")) && l.contains(",steady,"))
            .unwrap();
        let mut f: Vec<String> = row.split(',').map(String::from).collect();
        f[col("time_ns")] = time.to_string();
        *row = f.join(",");
    });
}

/// Damage done to a copied run folder.
type Damage<'a> = Box<dyn Fn(&Path) + 'a>;

#[test]
fn a_damaged_file_loses_only_the_cells_it_damaged() {
    let cell = "matmul/n=512/events-warm";
    let damage: Vec<(&str, Damage, &str)> = vec![
        (
            "a NaN sample",
            Box::new(|d: &Path| set_sample(d, cell, "NaN")),
            "a time of `NaN` ns",
        ),
        (
            "a negative sample",
            Box::new(|d: &Path| set_sample(d, cell, "-5")),
            "a time of `-5` ns",
        ),
        (
            "a malformed row in the middle",
            Box::new(|d: &Path| {
                edit_csv(&d.join("samples.csv.gz"), |l| {
                    let at = l.iter().position(|r| r.starts_with(cell)).unwrap() + 1;
                    l[at] = format!("{cell},broken");
                })
            }),
            "a malformed row",
        ),
        (
            "a cell's record written twice, differently",
            Box::new(|d: &Path| {
                let text = std::fs::read_to_string(d.join("cells.jsonl")).unwrap();
                let line = text.lines().find(|l| l.contains(cell)).unwrap().to_string();
                let other = format!("{{ {}", &line[1..]);
                std::fs::write(d.join("cells.jsonl"), format!("{other}\n{text}")).unwrap();
            }),
            "recorded again, differently",
        ),
    ];
    for (what, damage, says) in damage {
        let (root, copy) = copy_run("events");
        damage(&copy);
        let out = report_in(root.path(), &copy);
        let err = stderr(&out);
        assert!(out.status.success(), "{what}: {err}");
        assert!(
            err.contains(&format!("cell {cell} is unreadable")) && err.contains(says),
            "{what}: {err}"
        );
        let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
        assert!(
            report.contains(&format!("cell {cell} is unreadable")),
            "{what}"
        );
        // The other cells render as before.
        let summary = std::fs::read_to_string(copy.join("summary.csv")).unwrap();
        assert!(summary.contains("matmul/n=1024/events"), "{what}");
        assert!(!summary.contains(cell), "{what}");
    }
    // A truncated samples file and a torn telemetry row cost only what they held.
    let (root, copy) = copy_run("events");
    let bytes = std::fs::read(copy.join("samples.csv.gz")).unwrap();
    std::fs::write(copy.join("samples.csv.gz"), &bytes[..bytes.len() * 6 / 10]).unwrap();
    edit_csv(&copy.join("telemetry.csv.gz"), |l| {
        let middle = l.len() / 2;
        l.insert(middle, "x,y".into())
    });
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("is unreadable") && err.contains("lacks its samples"),
        "{err}"
    );
    assert!(
        err.contains("telemetry.csv.gz: dropped 1 malformed row"),
        "{err}"
    );
}

#[test]
fn a_run_folder_that_is_not_what_it_says_is_refused_with_where() {
    // Samples that are not gzip.
    let (root, copy) = copy_run("events");
    std::fs::write(copy.join("samples.csv.gz"), "cell,kernel\nx,y\n").unwrap();
    let out = report_in(root.path(), &copy);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not gzip data"),
        "{}",
        stderr(&out)
    );
    // An experiment edited since the run (20 samples said 999).
    let (root, copy) = copy_run("events");
    let exp = copy.join("experiment.toml");
    let text = std::fs::read_to_string(&exp).unwrap();
    std::fs::write(&exp, text.replacen("samples = ", "samples = 9", 1)).unwrap();
    let out = report_in(root.path(), &copy);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("is not the experiment this run was made with")
            && err.contains("git checkout"),
        "{err}"
    );
    // A stored experiment that does not validate is named as stored, with its line.
    let broken = text.replacen("[defaults]", "[defaults", 1);
    std::fs::write(&exp, &broken).unwrap();
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(copy.join("run.json")).unwrap()).unwrap();
    meta["experiment_sha256"] = sha256(broken.as_bytes()).into();
    std::fs::write(copy.join("run.json"), meta.to_string()).unwrap();
    let out = report_in(root.path(), &copy);
    let want = format!(
        "{}:{}:",
        exp.display(),
        1 + text[..text.find("[defaults]").unwrap()]
            .matches('\n')
            .count()
    );
    assert!(stderr(&out).contains(&want), "{want} in {}", stderr(&out));
}

/// The sha256 of `bytes` in hex, as `run.json` records an experiment's.
fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

#[test]
fn a_comparison_whose_run_is_absent_renders_without_it_and_says_so() {
    let (root, copy) = copy_run("events");
    std::fs::write(copy.join("compare_to"), "../events-run1\n").unwrap();
    let out = report_in(root.path(), &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    assert!(
        report.contains("names the run `../events-run1`, which cannot be read here"),
        "the report says so"
    );
}

#[test]
fn a_report_that_fails_leaves_the_earlier_report_as_it_was() {
    let (root, copy) = copy_run("events");
    let template = root.path().join("bad.md.j2");
    std::fs::write(&template, "{{ no_such_value }}").unwrap();
    let before = snapshot(&copy);
    let out = runner()
        .args(["report", copy.to_str().unwrap(), "--template"])
        .arg(&template)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(snapshot(&copy) == before, "the report folder changed");
    // A template that loops without end runs out of steps, and changes nothing either.
    let loops = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}";
    std::fs::write(&template, loops).unwrap();
    let args = [
        "report",
        copy.to_str().unwrap(),
        "--template",
        template.to_str().unwrap(),
    ];
    let out = run_within(root.path(), &args, 60).expect("stopped within a minute");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("fuel"), "{}", stderr(&out));
    assert!(snapshot(&copy) == before, "the report folder changed");
}
