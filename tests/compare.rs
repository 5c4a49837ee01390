//! `runner compare`: verdicts per cell against a threshold, and an exit status a CI job can
//! gate on. Built on a committed run and copies of it whose samples are scaled.

mod common;
use common::*;
use std::io::Read;
use std::path::Path;

/// A copy of the committed run `name` whose samples of cells starting with `prefix` are
/// multiplied by `factor`.
fn scaled_copy(name: &str, prefix: &str, factor: f64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let from = Path::new("reports").join(name);
    copy_dir(&from, dir.path());
    // Every frame decoded in turn; the scaled rows stored back as one frame.
    let path = dir.path().join("samples.csv.zst");
    let mut text = String::new();
    zstd::stream::read::Decoder::new(std::fs::File::open(&path).unwrap())
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let col = header.split(',').position(|c| c == "time_ns").unwrap();
    let mut out = format!("{header}\n");
    for line in lines {
        let mut fields: Vec<String> = line.split(',').map(String::from).collect();
        if fields[0].starts_with(prefix) {
            let t: f64 = fields[col].parse().unwrap();
            fields[col] = format!("{}", (t * factor).round());
        }
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    let stored = zstd::stream::encode_all(out.as_bytes(), 3).unwrap();
    std::fs::write(&path, stored).unwrap();
    dir
}

#[test]
fn a_run_against_itself_is_the_same_everywhere_and_exits_zero() {
    let out = run(&["compare", "reports/accuracy", "reports/accuracy"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains(" 0 slower, 0 faster"), "{text}");
    assert!(!text.contains("Not like for like"), "{text}");
}

#[test]
fn a_slower_cell_is_named_and_fails_the_comparison_and_a_faster_one_does_not() {
    let slower = scaled_copy("accuracy", "matmul/n=2048/", 1.10);
    let out = run(&[
        "compare",
        "reports/accuracy",
        slower.path().to_str().unwrap(),
        "--json",
        slower.path().join("cmp.json").to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "{text}{}", stderr(&out));
    let line = text
        .lines()
        .find(|l| l.starts_with("| matmul/n=2048/graph-100 |"))
        .unwrap();
    assert!(
        line.contains("⚠ slower") && line.contains("| 1.1000 ["),
        "{line}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(slower.path().join("cmp.json")).unwrap())
            .unwrap();
    let cells = json["cells"].as_array().unwrap();
    assert!(cells
        .iter()
        .filter(|c| c["cell"].as_str().unwrap().starts_with("matmul/n=1024/"))
        .all(|c| c["verdict"] != "slower"));
    let faster = scaled_copy("accuracy", "matmul/n=2048/", 0.90);
    let out = run(&[
        "compare",
        "reports/accuracy",
        faster.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("| faster |"));
    // A threshold above the change calls it the same.
    let out = run(&[
        "compare",
        "reports/accuracy",
        slower.path().to_str().unwrap(),
        "--threshold",
        "20",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn bad_input_is_an_error_that_says_what_to_do() {
    let out = run(&["compare", "reports/accuracy", "reports/no-such-run"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("reports/no-such-run is not a stored run"));
    let out = run(&[
        "compare",
        "reports/accuracy",
        "reports/accuracy",
        "--threshold",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("give a percentage"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn runs_without_a_cell_in_common_are_not_compared() {
    for (old, new) in [
        ("reports/events", "reports/kernels"),
        ("reports/kernels", "reports/events"),
    ] {
        let out = run(&["compare", old, new]);
        assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
        assert!(
            stderr(&out).contains("have no cell in common"),
            "{}",
            stderr(&out)
        );
    }
    // An A/B comparison of one experiment's cells compares.
    let out = run(&["compare", "reports/compare", "reports/compare-tiled"]);
    assert!(matches!(out.status.code(), Some(0 | 2)), "{}", stderr(&out));
}

/// A copy of the committed run `name` whose cell records (`cells.jsonl`) `edit` changes or
/// drops, one record at a time.
fn edited_copy(
    name: &str,
    edit: impl Fn(serde_json::Value) -> Option<serde_json::Value>,
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&Path::new("reports").join(name), dir.path());
    let path = dir.path().join("cells.jsonl");
    let records: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter_map(|l| edit(serde_json::from_str(l).unwrap()))
        .map(|r| r.to_string() + "\n")
        .collect();
    std::fs::write(&path, records.concat()).unwrap();
    dir
}

#[test]
fn a_new_run_that_lacks_a_cell_or_failed_one_fails_the_comparison_with_its_own_code() {
    let compare = |new: &Path| run(&["compare", "reports/compare", new.to_str().unwrap()]);
    let missing = edited_copy("compare", |r| {
        (r["id"] != "matmul/n=2048/cold").then_some(r)
    });
    let out = compare(missing.path());
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("1 cell(s) of the old run missing in the new one: matmul/n=2048/cold"),
        "{}",
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("7 cells compared"),
        "{}",
        stdout(&out)
    );
    let failed = edited_copy("compare", |mut r| {
        if r["id"] == "matmul/n=512/hot" && r["process"] == 3 {
            r["status"] = "failed".into();
            r["error"] = "a planted failure".into();
        }
        Some(r)
    });
    let out = compare(failed.path());
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let said =
        "1 cell(s) of the new run did not end as their kernels expect: matmul/n=512/hot (failed)";
    assert!(stderr(&out).contains(said), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "In the new run, matmul/n=512/hot did not end as its kernel expects: failed."
        ),
        "{}",
        stdout(&out)
    );
    // Only the new run is held to it: the old one failing there is no fault of the new.
    let out = run(&[
        "compare",
        failed.path().to_str().unwrap(),
        "reports/compare",
    ]);
    assert!(matches!(out.status.code(), Some(0 | 2)), "{}", stderr(&out));
}

#[test]
fn a_run_stored_without_its_sources_says_so_rather_than_that_they_differ() {
    let trimmed = scaled_copy("accuracy", "none", 1.0);
    std::fs::remove_dir_all(trimmed.path().join("sources")).unwrap();
    let out = run(&[
        "compare",
        "reports/accuracy",
        trimmed.path().to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("the new run holds no kernel sources (`sources/`): they are not compared"),
        "{text}"
    );
    assert!(!text.contains("sources differ"), "{text}");
}
