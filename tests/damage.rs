//! Damage loses only what it damaged, through the command line: committed runs damaged byte
//! by byte (a samples frame corrupted or stored twice, a gzip member's byte flipped, a
//! record's frame corrupted, a record that is not UTF-8, a malformed peers row) render with
//! the rest, and a merge of a damaged part says what it dropped and fails.

mod common;
use common::*;
use std::path::Path;

/// Where each zstd frame (or, with `gzip`, each gzip member) of the file at `path` starts,
/// and its end.
fn frames(path: &Path, gzip: bool) -> Vec<(usize, usize)> {
    let bytes = std::fs::read(path).unwrap();
    let mut spans = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let size = if gzip {
            let mut rest = &bytes[at..];
            let mut member = flate2::bufread::GzDecoder::new(&mut rest);
            std::io::copy(&mut member, &mut std::io::sink()).unwrap();
            drop(member);
            bytes.len() - at - rest.len()
        } else {
            zstd::zstd_safe::find_frame_compressed_size(&bytes[at..]).unwrap()
        };
        spans.push((at, at + size));
        at += size;
    }
    spans
}

/// Applies `damage` to the bytes of the file at `path`.
fn damage(path: &Path, damage: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    damage(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

/// The cells `runner report` left out as unreadable, as its warnings name them.
fn unreadable(err: &str) -> Vec<&str> {
    err.lines()
        .filter_map(|l| l.strip_prefix("warning: cell "))
        .filter_map(|l| l.split_once(" is unreadable").map(|(id, _)| id))
        .collect()
}

/// The cells a rendered run's summary holds.
fn summarized(dir: &Path) -> std::collections::BTreeSet<String> {
    let summary = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    summary
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_string())
        .collect()
}

#[test]
fn a_corrupt_middle_samples_frame_costs_its_cell_alone_with_the_decoders_reason() {
    let (root, copy) = copy_run("transpose-audited");
    let samples = copy.join("samples.csv.zst");
    let spans = frames(&samples, false);
    assert!(spans.len() > 10, "{} frames", spans.len());
    // Frame 6: its checksum no longer matches its rows.
    damage(&samples, |b| b[spans[5].1 - 1] ^= 0xff);
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let said = format!(
        "samples.csv.zst: frame 6 (at byte {}) does not decode (Restored data doesn't match checksum)",
        spans[5].0
    );
    assert!(err.contains(&said), "{err}");
    assert_eq!(unreadable(&err).len(), 1, "{err}");
    let whole = summarized(Path::new("reports/transpose-audited"));
    let left = summarized(&copy);
    assert_eq!(left.len(), whole.len() - 1, "{err}");
    assert!(!left.contains(unreadable(&err)[0]));
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    assert!(
        report.contains("frame 6 (at byte"),
        "the report says so too"
    );
}

#[test]
fn a_flipped_byte_in_a_gzip_member_costs_its_cell_alone_naming_the_member() {
    let (root, copy) = copy_run("events");
    let samples = copy.join("samples.csv.gz");
    let spans = frames(&samples, true);
    damage(&samples, |b| b[(spans[2].0 + spans[2].1) / 2] ^= 0x10);
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "samples.csv.gz: member 3 (at byte {}) does not decode (",
            spans[2].0
        )),
        "{err}"
    );
    assert_eq!(unreadable(&err).len(), 1, "{err}");
    let whole = summarized(Path::new("reports/events"));
    assert_eq!(summarized(&copy).len(), whole.len() - 1, "{err}");
}

#[test]
fn a_samples_frame_stored_twice_is_kept_once_with_a_warning() {
    let (root, copy) = copy_run("transpose-audited");
    let samples = copy.join("samples.csv.zst");
    let spans = frames(&samples, false);
    damage(&samples, |b| {
        let frame = b[spans[4].0..spans[4].1].to_vec();
        b.splice(spans[4].1..spans[4].1, frame);
    });
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("samples.csv.zst: frame 6 repeats the rows of cell ")
            && err.contains("that frame 5 holds: they are kept once"),
        "{err}"
    );
    // The same samples, so the same statistics.
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.csv")).unwrap();
    assert!(summary(&copy) == summary(Path::new("reports/transpose-audited")));
}

/// The committed run `name` merged alone into a new folder, as a run is written now (a
/// frame per record), and its records.
fn rewritten(
    name: &str,
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Vec<serde_json::Value>,
) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(name);
    let out = merge(&[&Path::new("reports").join(name)], &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let records = records_of(&dir);
    (root, dir, records)
}

/// `runner merge PARTS --out OUT`.
fn merge(parts: &[&Path], out: &Path) -> std::process::Output {
    let mut args = vec!["merge".to_string()];
    args.extend(parts.iter().map(|p| p.display().to_string()));
    args.extend(["--out".to_string(), out.display().to_string()]);
    run(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn a_damaged_record_frame_costs_that_record_alone() {
    let (root, dir, records) = rewritten("transpose-audited");
    let cells = dir.join("cells.jsonl.zst");
    let spans = frames(&cells, false);
    assert_eq!(spans.len(), records.len(), "a frame per record");
    damage(&cells, |b| b[spans[4].1 - 1] ^= 0xff);
    let out = report_in(root.path(), &dir);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let id = records[4]["id"].as_str().unwrap();
    assert!(
        err.contains(&format!(
            "cells.jsonl.zst: frame 5 (at byte {}) does not decode",
            spans[4].0
        )) && err.contains(id),
        "{err}"
    );
    assert!(!err.contains("torn"), "{err}");
    // Merged again, the run keeps every other record, and the merge says what it lost.
    let again = root.path().join("again");
    let out = merge(&[&dir], &again);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("damage cost the parts 1 cell(s) or record(s)"),
        "{err}"
    );
    assert_eq!(records_of(&again).len(), records.len() - 1);
}

#[test]
fn a_record_that_is_not_utf8_costs_that_record_alone() {
    let (root, copy) = copy_run("events");
    let cells = copy.join("cells.jsonl");
    let text = std::fs::read(&cells).unwrap();
    let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
    let id = serde_json::from_slice::<serde_json::Value>(lines[5]).unwrap()["id"].to_string();
    // A byte that is no UTF-8 in the sixth record's text, after its id.
    let mut bad = lines[5].to_vec();
    let at = bad.len() - 2;
    bad.insert(at, 0xff);
    let mut all: Vec<Vec<u8>> = lines.iter().map(|l| l.to_vec()).collect();
    all[5] = bad;
    std::fs::write(&cells, all.join(&b'\n')).unwrap();
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let id = id.trim_matches('"');
    assert_eq!(unreadable(&err), [id], "{err}");
    assert!(
        err.contains("cells.jsonl:6: a line that is not UTF-8 text"),
        "{err}"
    );
}

#[test]
fn a_malformed_peers_row_loses_that_row_alone() {
    let (root, copy) = copy_run("events");
    let peers = copy.join("peers.csv");
    let text = std::fs::read_to_string(&peers).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(3, "post-02,512,not-a-process");
    std::fs::write(&peers, lines.join("\n") + "\n").unwrap();
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "peers.csv: dropped 1 malformed row(s) (or longer than 1 MiB), the first at line 4"
        ),
        "{err}"
    );
    // The other readings stay: the report's peers are those of the undamaged run.
    let peers_of = |d: &Path| {
        let report = std::fs::read_to_string(d.join("report.md")).unwrap();
        report.lines().filter(|l| l.contains("post-0")).count()
    };
    assert_eq!(peers_of(&copy), peers_of(Path::new("reports/events")));
}

#[test]
fn a_merge_of_a_part_that_lost_cells_says_which_and_fails() {
    let (_root, copy) = copy_run("transpose-audited");
    let samples = copy.join("samples.csv.zst");
    let spans = frames(&samples, false);
    damage(&samples, |b| b[spans[5].1 - 1] ^= 0xff);
    let out_root = tempfile::tempdir().unwrap();
    let merged = out_root.path().join("merged");
    let out = merge(&[&copy], &merged);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "warning: {}: samples.csv.zst: frame 6",
            copy.display()
        )),
        "{err}"
    );
    let part = format!("warning: {}: ", copy.display());
    let said = err.replace(&part, "warning: ");
    let lost = unreadable(&said);
    assert_eq!(lost.len(), 1, "{err}");
    let named = format!("{}: cell {}", copy.display(), lost[0]);
    assert!(
        err.contains("damage cost the parts 1 cell(s) or record(s), which the merged run lacks")
            && err.contains(&named),
        "{err}"
    );
    // The rest is merged, and rendered.
    let whole = records_of(Path::new("reports/transpose-audited"));
    let kept = records_of(&merged);
    assert_eq!(kept.len(), whole.len() - 1);
    assert!(kept.iter().all(|r| r["id"] != lost[0]));
    assert!(merged.join("report.md").exists());
}
