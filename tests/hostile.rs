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

/// The bytes of one zstd frame of `text`, as a run appends a frame.
fn frame_of(text: &str) -> Vec<u8> {
    zstd::stream::encode_all(text.as_bytes(), 3).unwrap()
}

/// Appends `bytes` to the file `name` in `dir`.
fn append(dir: &Path, name: &str, bytes: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(name))
        .unwrap();
    f.write_all(bytes).unwrap();
}

#[test]
fn floods_of_junk_rows_and_records_are_counted_not_said_one_by_one() {
    let (root, copy) = copy_run("transpose-audited");
    let lines = 200_000;
    append(&copy, "cells.jsonl.zst", &frame_of(&"{}\n".repeat(lines)));
    let header = stored_text(&copy, "samples.csv")
        .lines()
        .next()
        .unwrap()
        .to_string();
    let fields = header.split(',').count();
    let junk = format!("ghost{}\n", ",1".repeat(fields - 1)).repeat(lines);
    append(&copy, "samples.csv.zst", &frame_of(&junk));
    append(&copy, "telemetry.csv.zst", &frame_of(&"x\n".repeat(lines)));
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.lines().count() < 100,
        "{} lines of warnings",
        err.lines().count()
    );
    assert!(err.contains("more lines dropped"), "{err}");
    assert!(
        err.contains("more rows of cells not in the plan dropped"),
        "{err}"
    );
    // The last counts as torn, as a crash leaves one.
    let malformed = format!("dropped {} malformed row(s)", lines - 1);
    assert!(err.contains(&malformed), "{err}");
    // The cells themselves are all there.
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.csv")).unwrap();
    assert_eq!(
        summary(&copy),
        summary(Path::new("reports/transpose-audited"))
    );
}

#[test]
fn a_sample_of_an_unknown_phase_costs_its_cell() {
    let (root, copy) = copy_run("transpose-audited");
    let rows = stored_text(&copy, "samples.csv");
    let mut lines = rows.lines();
    let header = lines.next().unwrap();
    let row: Vec<&str> = lines
        .find(|l| l.contains(",steady,"))
        .unwrap()
        .split(',')
        .collect();
    let cell = row[0].to_string();
    let changed = rows.replacen(
        &row.join(","),
        &row.join(",").replacen(",steady,", ",xyz,", 1),
        1,
    );
    assert_ne!(changed, rows);
    assert!(header.contains("phase"));
    write_stored(&copy, "samples.csv", &changed);
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("cell {cell} is unreadable")) && err.contains("a phase of `xyz`"),
        "{err}"
    );
}

#[test]
fn a_record_stored_twice_byte_for_byte_is_kept_once() {
    let (root, copy) = copy_run("transpose-audited");
    let text = stored_text(&copy, "cells.jsonl");
    let line = text.lines().nth(3).unwrap();
    append(&copy, "cells.jsonl.zst", &frame_of(&format!("{line}\n")));
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("byte for byte: it is kept once"), "{err}");
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.csv")).unwrap();
    assert_eq!(
        summary(&copy),
        summary(Path::new("reports/transpose-audited"))
    );
}

#[test]
fn telemetry_not_in_its_format_costs_the_telemetry_not_the_cells() {
    let (root, copy) = copy_run("transpose-audited");
    std::fs::write(
        copy.join("telemetry.csv.zst"),
        frame_of("what,is,this\n1,2,3\n"),
    )
    .unwrap();
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("its cells stand"), "{err}");
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.csv")).unwrap();
    assert_eq!(
        summary(&copy),
        summary(Path::new("reports/transpose-audited"))
    );
}

#[test]
fn a_parts_sources_that_link_outside_it_are_not_copied_by_a_merge() {
    let (_keep, part) = copy_run("statistics");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.cu"), "secret").unwrap();
    std::fs::remove_dir_all(part.join("sources")).unwrap();
    std::os::unix::fs::symlink(outside.path(), part.join("sources")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let merged = dir.path().join("merged");
    let out = run(&[
        "merge",
        part.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert!(stderr(&out).contains("symbolic link"), "{}", stderr(&out));
    assert!(!merged.join("sources/secret.cu").exists());
}

#[test]
fn a_cell_whose_samples_end_in_a_member_cut_short_is_not_trusted() {
    // An older run's gzip member streams its rows as it decodes: those of the cut run were
    // kept, and the cell trusted on part of its samples.
    let (root, copy) = copy_run("events");
    let path = copy.join("samples.csv.gz");
    let bytes = std::fs::read(&path).unwrap();
    let (mut at, mut last) = (0, 0);
    while at < bytes.len() {
        last = at;
        let mut rest = &bytes[at..];
        let mut member = flate2::bufread::GzDecoder::new(&mut rest);
        std::io::copy(&mut member, &mut std::io::sink()).unwrap();
        drop(member);
        at = bytes.len() - rest.len();
    }
    let cut = last + (bytes.len() - last) * 3 / 4;
    std::fs::write(&path, &bytes[..cut]).unwrap();
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("is unreadable") && err.contains("cut them short"),
        "{err}"
    );
}

#[test]
fn compare_calls_a_damaged_new_cell_damaged_not_missing() {
    let (_root, copy) = copy_run("transpose-audited");
    let rows = stored_text(&copy, "samples.csv");
    let row = rows.lines().find(|l| l.contains(",steady,")).unwrap();
    let cell = row.split(',').next().unwrap().to_string();
    write_stored(
        &copy,
        "samples.csv",
        &rows.replacen(row, &format!("{cell},broken"), 1),
    );
    let out = run(&[
        "compare",
        "reports/transpose-audited",
        copy.to_str().unwrap(),
    ]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(text.contains("damaged in the new one's folder"), "{text}");
    assert!(text.contains(&cell), "{text}");
}

#[test]
fn repeated_and_oversized_peer_rows_are_refused_not_taken() {
    let (root, copy) = copy_run("events");
    let path = copy.join("peers.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    let (same, other) = (rows[1], rows[2]);
    // `other` again with another time: neither reading can be told right.
    let mut fields: Vec<String> = other.split(',').map(String::from).collect();
    fields[3] = "1".into();
    let long = format!("p,n=1,0,1,{}", "x".repeat(2 << 20));
    let damaged = format!("{text}{same}\n{}\n{long}\n", fields.join(","));
    std::fs::write(&path, damaged).unwrap();
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("the reading is kept once"), "{err}");
    assert!(err.contains("both readings are dropped"), "{err}");
    assert!(
        err.contains("dropped 1 malformed row(s) (or longer than 1 MiB)"),
        "{err}"
    );
}

#[test]
fn a_device_with_zero_clocks_has_no_peak_and_says_so() {
    let (root, copy) = copy_run("transpose-audited");
    let path = copy.join("run.json");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    meta["device"]["sm_clock_max_mhz"] = 0.into();
    meta["device"]["mem_clock_max_mhz"] = 0.into();
    std::fs::write(&path, serde_json::to_string(&meta).unwrap()).unwrap();
    let out = report_in(root.path(), &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    assert!(!report.contains("peak: ."), "an empty list of peaks");
    assert!(
        report.contains("reported no clocks"),
        "no word on the missing peaks"
    );
}

#[test]
fn a_lost_header_frame_costs_no_cell_where_the_header_is_known() {
    let (root, copy) = copy_run("transpose-audited");
    let path = copy.join("samples.csv.zst");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("read on with the header the runner writes"),
        "{err}"
    );
    // The header's frame held no rows: every cell stands.
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.csv")).unwrap();
    assert_eq!(
        summary(&copy),
        summary(Path::new("reports/transpose-audited"))
    );
}

#[test]
fn text_from_a_run_folder_lands_inert_in_the_report() {
    let (root, copy) = copy_run("transpose-audited");
    let text = stored_text(&copy, "cells.jsonl");
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let mut record: serde_json::Value = serde_json::from_str(&lines[3]).unwrap();
    let cell = record["id"].as_str().unwrap().to_string();
    record["status"] = "failed".into();
    record["error"] =
        "<img src=x onerror=alert(1)> [click](javascript:alert(1)) `x\n# heading".into();
    record["check"] = "<script>alert(1)</script>\n## injected".into();
    lines[3] = serde_json::to_string(&record).unwrap();
    write_stored(&copy, "cells.jsonl", &(lines.join("\n") + "\n"));
    let out = report_in(root.path(), &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    for file in ["report.md", "cells.md"] {
        let md = std::fs::read_to_string(copy.join(file)).unwrap();
        assert!(
            !md.contains("<img") && !md.contains("<script"),
            "{file}: raw HTML"
        );
        let live = md.replace("\\](javascript:", "");
        assert!(!live.contains("](javascript:"), "{file}: a live link");
        assert!(
            !md.contains("\n# heading") && !md.contains("\n## injected"),
            "{file}"
        );
    }
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    assert!(
        report.contains(&cell) && report.contains("&lt;img"),
        "{report}"
    );
}
