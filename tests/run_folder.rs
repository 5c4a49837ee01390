//! The run folder without a GPU: it renders from anywhere with the kernel sources gone,
//! survives a torn tail, leaves a damaged cell out, and a changed experiment is not resumed.

mod common;
use common::*;
use std::path::{Path, PathBuf};

#[test]
fn a_copied_run_renders_the_same_from_another_folder_without_its_sources() {
    let (root, copy) = copy_run("events");
    // No kernels/ and no templates/ anywhere near: the run folder is all it has.
    let out = report_in(root.path(), &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    let want = std::fs::read_to_string("reports/events/report.md").unwrap();
    let got = std::fs::read_to_string(copy.join("report.md")).unwrap();
    assert!(want == got, "the copy renders other bytes");
}

#[test]
fn a_torn_last_cell_is_dropped_with_a_warning_naming_it() {
    let (root, copy) = copy_run("events");
    let cells = copy.join("cells.jsonl");
    let text = std::fs::read_to_string(&cells).unwrap();
    let last = text.trim_end().rsplit('\n').next().unwrap().to_string();
    let id = last
        .split("\"id\":\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    // The crash cut the last line in half.
    std::fs::write(&cells, &text[..text.len() - last.len() / 2]).unwrap();
    // And a gzip member of samples written after it, cut off before its end.
    let rows = sample_rows(&copy);
    let last = rows.last().unwrap().join(",") + "\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, last.repeat(50).as_bytes()).unwrap();
    let member = gz.finish().unwrap();
    let samples = copy.join("samples.csv.gz");
    let mut bytes = std::fs::read(&samples).unwrap();
    bytes.extend_from_slice(&member[..member.len() - 12]);
    std::fs::write(&samples, bytes).unwrap();
    let out = report_in(root.path(), &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("torn last line") && err.contains(&id), "{err}");
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    assert!(report.contains("torn last line"), "the report says so too");
}

#[test]
fn samples_missing_for_a_cell_called_ok_leave_that_cell_out_named() {
    let (root, copy) = copy_run("events");
    let header = sample_rows(&copy)[0].join(",") + "\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, header.as_bytes()).unwrap();
    std::fs::write(copy.join("samples.csv.gz"), gz.finish().unwrap()).unwrap();
    let out = report_in(root.path(), &copy);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("cell matmul/n=512/events is unreadable") && err.contains("records as ok"),
        "{err}"
    );
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    assert!(
        report.contains("matmul/n=512/events is unreadable"),
        "the report names it"
    );
}

#[test]
fn a_missing_samples_file_is_named_as_the_run_stores_it() {
    for (run, stored) in [
        ("transpose-audited", "samples.csv.zst"),
        ("events", "samples.csv.gz"),
    ] {
        let (root, copy) = copy_run(run);
        std::fs::remove_file(copy.join(stored)).unwrap();
        let out = report_in(root.path(), &copy);
        let err = stderr(&out);
        assert!(!out.status.success(), "{err}");
        assert!(
            err.contains(&format!("cannot read {}", copy.join(stored).display())),
            "{err}"
        );
    }
}

#[test]
fn a_changed_experiment_is_not_resumed() {
    let (root, copy) = copy_run("events");
    // The experiment as run, with one knob changed.
    let text = std::fs::read_to_string(copy.join("experiment.toml"))
        .unwrap()
        .replace("processes = 20", "processes = 21");
    std::fs::create_dir(root.path().join("experiments")).unwrap();
    let changed = root.path().join("experiments/events.toml");
    std::fs::write(&changed, text).unwrap();
    let kernels = Path::new("kernels").canonicalize().unwrap();
    std::os::unix::fs::symlink(kernels, root.path().join("kernels")).unwrap();
    let out = run(&[
        "run",
        changed.to_str().unwrap(),
        "--resume",
        copy.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("cannot resume") && err.contains("--force"),
        "{err}"
    );
}

/// `run` cut into two shards as `--shard 0/2` and `1/2` would have stored them: each with
/// its part's lines of `cells.jsonl`, numbered within the part, and its cell ids in run.json.
/// `claimed`: as parts that took cells from one queue (`--claims`) would have: each ran every
/// other cell, whatever its share, numbered in the whole plan.
fn shards_of(name: &str, root: &Path, claimed: bool) -> [PathBuf; 2] {
    let records: Vec<serde_json::Value> =
        std::fs::read_to_string(Path::new("reports").join(name).join("cells.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let mut ids: Vec<String> = Vec::new();
    for r in &records {
        let id = r["id"].as_str().unwrap().to_string();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let halves = [ids[..ids.len() / 2].to_vec(), ids[ids.len() / 2..].to_vec()];
    [0, 1].map(|i| {
        let dir = root.join(format!("part{i}")).join(name);
        copy_dir(&Path::new("reports").join(name), &dir);
        let ran: Vec<String> = match claimed {
            true => (ids.iter().skip(i).step_by(2)).cloned().collect(),
            false => halves[i].clone(),
        };
        let mine = &ran;
        let lines: Vec<String> = records
            .iter()
            .filter_map(|r| {
                let at = mine.iter().position(|id| id == r["id"].as_str().unwrap())?;
                let mut r = r.clone();
                if !claimed {
                    r["cell"] = at.into();
                }
                Some(r.to_string())
            })
            .collect();
        std::fs::write(dir.join("cells.jsonl"), lines.join("\n") + "\n").unwrap();
        for file in ["samples.csv.gz", "telemetry.csv.gz"] {
            keep_rows(&dir.join(file), mine);
        }
        let mut meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        meta["shard"] =
            serde_json::json!({ "shard": { "index": i, "count": 2 }, "cells": halves[i] });
        if claimed {
            let claims = root.join("claims").display().to_string();
            meta["shard"]["claims"] =
                serde_json::json!({ "dir": claims, "part": format!("{i}/2") });
        }
        std::fs::write(dir.join("run.json"), meta.to_string()).unwrap();
        dir
    })
}

/// Keeps the header and the rows of `cells` (the first column) of a gzipped CSV file.
fn keep_rows(path: &Path, cells: &[String]) {
    use std::io::{Read, Write};
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let kept: Vec<&str> = text
        .lines()
        .enumerate()
        .filter(|(i, l)| *i == 0 || cells.iter().any(|c| l.starts_with(&format!("{c},"))))
        .map(|(_, l)| l)
        .collect();
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::default(),
    );
    gz.write_all((kept.join("\n") + "\n").as_bytes()).unwrap();
    gz.finish().unwrap();
}

/// `runner merge PARTS --out OUT`.
fn merge(parts: &[&Path], out: &Path) -> std::process::Output {
    let mut args = vec!["merge".to_string()];
    args.extend(parts.iter().map(|p| p.display().to_string()));
    args.extend(["--out".to_string(), out.display().to_string()]);
    run(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn parts_that_took_cells_from_one_queue_merge_into_the_run_they_were_cut_from() {
    let root = tempfile::tempdir().unwrap();
    let [a, b] = shards_of("compare", root.path(), true);
    let merged = root.path().join("merged");
    let out = merge(&[&a, &b], &merged);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.csv")).unwrap();
    assert_eq!(
        summary(&merged),
        summary(&Path::new("reports").join("compare"))
    );
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(merged.join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["complete"], true);
    // A part's report renders alone, with the cells it ran, the others left to the other part.
    let part = run(&["report", a.to_str().unwrap()]);
    assert!(part.status.success(), "{}", stderr(&part));
    let report = std::fs::read_to_string(a.join("report.md")).unwrap();
    assert!(
        report.contains("ran in the run's other parts") && !report.contains("did not run"),
        "{report}"
    );
}

#[test]
fn shards_merge_into_the_run_they_were_cut_from_and_overlapping_parts_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let [a, b] = shards_of("compare", root.path(), false);
    let merged = root.path().join("merged");
    let out = merge(&[&a, &b], &merged);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("merged 2 part(s)"),
        "{}",
        stdout(&out)
    );
    // The same samples, so the same statistics as the whole run's.
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.csv")).unwrap();
    assert_eq!(
        summary(&merged),
        summary(&Path::new("reports").join("compare"))
    );
    // Merged again into the same folder, nothing of the earlier merge stays behind.
    std::fs::write(merged.join("peers.csv"), "stale").unwrap();
    std::fs::write(merged.join("sources").join("stale.cu"), "stale").unwrap();
    let out = merge(&[&a, &b], &merged);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!merged.join("peers.csv").exists());
    assert!(!merged.join("sources").join("stale.cu").exists());
    assert_eq!(
        summary(&merged),
        summary(&Path::new("reports").join("compare"))
    );
    // Nor into one of its parts.
    let out = merge(&[&a, &b], &a);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not into one of its parts"),
        "{}",
        stderr(&out)
    );
    // A part's report renders alone, with its cells only.
    let part = run(&["report", a.to_str().unwrap()]);
    assert!(part.status.success(), "{}", stderr(&part));
    // The same part twice, by the same path, another spelling of it or a copy, is refused
    // (it would double every record and sample).
    let again = root.path().join("again");
    copy_dir(&a, &again);
    let slash = PathBuf::from(format!("{}/", a.display()));
    for twice in [&a, &slash, &again] {
        let out = merge(&[&a, twice], &root.path().join("bad"));
        assert_eq!(out.status.code(), Some(1), "{}", twice.display());
        assert!(
            stderr(&out).contains("are the same part"),
            "{}",
            stderr(&out)
        );
        assert!(!root.path().join("bad").exists());
    }
    // Two parts that share a cell overlap.
    let meta = std::fs::read_to_string(again.join("run.json")).unwrap();
    std::fs::write(
        again.join("run.json"),
        meta.replacen("\"started_utc\":\"", "\"started_utc\":\"1", 1),
    )
    .unwrap();
    let out = merge(&[&a, &again], &root.path().join("bad"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("the parts overlap"),
        "{}",
        stderr(&out)
    );
    // Parts of different experiments do not merge.
    let (_other_root, other) = copy_run("events");
    let out = merge(&[&a, &other], &root.path().join("bad2"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("different experiments"),
        "{}",
        stderr(&out)
    );
}

/// The committed run `name` merged alone into a new folder: stored as a run is written now.
fn rewritten(name: &str) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(name);
    let out = merge(&[&Path::new("reports").join(name)], &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    (root, dir)
}

#[test]
fn a_run_written_now_is_zstd_and_reads_as_the_gzip_run_it_came_from() {
    let (root, dir) = rewritten("statistics");
    let old = Path::new("reports/statistics");
    for (new, was) in [
        ("samples.csv.zst", "samples.csv.gz"),
        ("telemetry.csv.zst", "telemetry.csv.gz"),
        ("cells.jsonl.zst", "cells.jsonl"),
    ] {
        assert!(dir.join(new).exists() && !dir.join(was).exists(), "{new}");
        assert!(old.join(was).exists() && !old.join(new).exists(), "{was}");
    }
    for csv in ["samples.csv", "telemetry.csv"] {
        assert!(
            stored_text(&dir, csv) == stored_text(old, csv),
            "{csv} differs"
        );
    }
    assert_eq!(records_of(&dir).len(), records_of(old).len());
    let out = report_in(root.path(), &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.csv")).unwrap();
    assert_eq!(summary(&dir), summary(old));
}

#[test]
fn a_torn_zstd_frame_is_dropped_with_a_warning_and_a_second_format_is_refused() {
    let (root, dir) = rewritten("statistics");
    // A crash while appending one more run's rows.
    let samples = dir.join("samples.csv.zst");
    let rows = stored_text(&dir, "samples.csv");
    let last = rows.lines().last().unwrap().to_string() + "\n";
    let frame = zstd::bulk::compress(last.repeat(50).as_bytes(), 3).unwrap();
    let mut bytes = std::fs::read(&samples).unwrap();
    bytes.extend_from_slice(&frame[..frame.len() / 2]);
    std::fs::write(&samples, bytes).unwrap();
    let out = report_in(root.path(), &dir);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("samples.csv.zst: dropped a torn last frame"),
        "{err}"
    );
    // The old run's samples copied in beside the new ones: which are the run's?
    std::fs::copy(
        "reports/statistics/samples.csv.gz",
        dir.join("samples.csv.gz"),
    )
    .unwrap();
    let out = report_in(root.path(), &dir);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("both samples.csv.zst and samples.csv.gz") && err.contains("hint"),
        "{err}"
    );
}

/// The whole lines of a zstd file that may end in a torn frame.
fn whole_lines(path: &Path) -> usize {
    use std::io::Read;
    let mut decoder = zstd::Decoder::new(std::fs::File::open(path).unwrap()).unwrap();
    let (mut text, mut chunk) = (Vec::new(), [0; 1 << 16]);
    while let Ok(n @ 1..) = decoder.read(&mut chunk) {
        text.extend_from_slice(&chunk[..n]);
    }
    text.iter().filter(|&&b| b == b'\n').count()
}

#[test]
fn a_merge_killed_half_way_does_not_say_it_is_complete() {
    use rustix::process::{kill_process, Pid, Signal};
    let root = tempfile::tempdir().unwrap();
    let whole = records_of(Path::new("reports/accuracy")).len();
    let out = root.path().join("merged");
    let mut merge = runner()
        .args(["merge", "reports/accuracy", "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed the moment run.json appears: the merge's cells are still being written.
    let meta = out.join("run.json");
    assert!(
        wait_for(60.0, || meta.exists()),
        "the merge wrote no run.json"
    );
    kill_process(Pid::from_raw(merge.id() as i32).unwrap(), Signal::KILL).unwrap();
    merge.wait().unwrap();
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
    let written = whole_lines(&out.join("cells.jsonl.zst"));
    assert!(
        meta["complete"] == false || written == whole,
        "run.json says complete with {written} of {whole} records written"
    );
    // Merged whole, it is complete.
    let again = run(&["merge", "reports/accuracy", "--out", out.to_str().unwrap()]);
    assert!(again.status.success(), "{}", stderr(&again));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(meta["complete"], true);
    assert_eq!(records_of(&out).len(), whole);
}

/// The sha256 of `bytes` in hex, as `run.json` records an experiment's.
fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

/// The run folder's experiment as `edit` makes it, with `run.json` recording its sha256, so
/// that the run renders as if made with it; returns its text.
fn rewrite_experiment(copy: &Path, edit: impl Fn(String) -> String) -> String {
    let exp_path = copy.join("experiment.toml");
    let exp = edit(std::fs::read_to_string(&exp_path).unwrap());
    std::fs::write(&exp_path, &exp).unwrap();
    let meta_path = copy.join("run.json");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta["experiment_sha256"] = sha256(exp.as_bytes()).into();
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    exp
}

/// A kernel's declared peak and its reads and writes reach the report: the finding names
/// the peak (and its `peak` where a reading is above it), the peaks' sources say where it
/// comes from, and the throughput table says the bytes were declared apart (its read and
/// write GB/s it leaves out where the smaller is under 1% of the bytes, as a GEMV's writes are).
#[test]
fn a_declared_peak_and_reads_and_writes_show_in_the_report() {
    let (root, copy) = copy_run("gemv");
    rewrite_experiment(&copy, |exp| {
        let at = exp.find("name = \"gemv\"").unwrap();
        let declared = exp[at..].replacen(
            "bytes = \"4 * (m * m + 2 * m)\"",
            "reads = \"4 * (m * m + m)\"\nwrites = \"4 * m\"\npeak = { per_sm_clock = 1, name = \"ONE op\" }",
            1,
        );
        format!("{}{declared}", &exp[..at])
    });
    let out = report_in(root.path(), &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    let unwrapped = report.split_whitespace().collect::<Vec<_>>().join(" ");
    for said in [
        // 132 SMs x 1980 MHz x 1: 0.2614 TOPS, which the GEMV's 2.036 TFLOP/s is far above.
        "`gemv` reaches 2.036 TFLOP/s, 779% of the 0.2614 TFLOP/s ONE op peak",
        "so the kernel's `peak` states less than its unit does (check its per_sm_clock",
        "ONE op 0.3 TFLOP/s = 132 SMs x 1980 MHz x 1 operations per SM per clock (the kernel's `peak`)",
        "Its bytes as declared apart (`reads`, `writes`)",
        "| 8192 | 4072 GB/s (85%), 2.036 TFLOP/s (779%) |",
    ] {
        assert!(unwrapped.contains(said), "no {said:?} in:\n{report}");
    }
    // `gemv-ref` declares its bytes in all: no read and write figures.
    let reference = &report[report.find("### `gemv-ref`, UNCHECKED\n\n| m |").unwrap()..];
    assert!(!reference[..reference.find("### `gemv`").unwrap()].contains("read "));
}

/// A failed run's kind (`failure`) shows in the report's table of failed cells, where the
/// records hold one; a record from before it was stored reads `–` there, and a folder none
/// of whose records hold one renders with no such column (every committed report).
#[test]
fn a_failed_runs_kind_shows_in_the_table_of_failed_cells() {
    let (root, copy) = copy_run("kernels");
    let before = std::fs::read_to_string(copy.join("report.md")).unwrap();
    assert!(before.contains("| cell | process | error |\n|---|---:|---|\n"));
    let mut first = true;
    let records: Vec<String> = (records_of(&copy).into_iter())
        .map(|mut r| {
            if r["status"] == "failed" && std::mem::take(&mut first) {
                r["failure"] = "check".into();
            }
            r.to_string()
        })
        .collect();
    assert!(!first, "reports/kernels holds a failed run");
    write_stored(&copy, "cells.jsonl", &(records.join("\n") + "\n"));
    let out = report_in(root.path(), &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    for said in [
        "| cell | process | kind | error |\n|---|---:|---|---|\n",
        "| matmul-off-by-one/n=1024/hot | 0 | check | C: max abs error 1.465e1",
        "| matmul-off-by-one/n=2048/hot | 0 | – | C: max abs error 1.479e1",
    ] {
        assert!(report.contains(said), "no {said:?} in:\n{report}");
    }
}

/// A 100-character kernel name (the longest a name may be) and a 200-character sweep value
/// make plot names longer than a file name may be: the report shortens them, the same way
/// at every render, and `runner plan` takes the experiment.
#[test]
fn the_longest_names_and_long_sweep_values_plan_and_render_with_plot_names_that_fit() {
    let (root, copy) = copy_run("incore");
    let kernel = format!("incore{}", "_".repeat(94));
    let value = format!("FMA{}", "x".repeat(197));
    // Every place the run holds the kernel's name and the value: the experiment, the cell
    // ids of the records, samples and telemetry, and the samples' columns.
    let exp = rewrite_experiment(&copy, |exp| {
        exp.replace("name = \"incore\"", &format!("name = \"{kernel}\""))
            .replace("\"FMA\"", &format!("\"{value}\""))
    });
    let rename = |text: String| {
        text.replace("incore/", &format!("{kernel}/"))
            .replace(",incore,", &format!(",{kernel},"))
            .replace("op=FMA ", &format!("op={value} "))
            .replace(",FMA,", &format!(",{value},"))
    };
    for stored in ["cells.jsonl", "samples.csv", "telemetry.csv"] {
        write_stored(&copy, stored, &rename(stored_text(&copy, stored)));
    }
    for notes in ["findings.md", "notes.md"] {
        let _ = std::fs::remove_file(copy.join(notes));
    }
    let out = report_in(root.path(), &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    let plots: Vec<String> = std::fs::read_dir(copy.join("plots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(plots.len(), 6, "{plots:?}");
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    for name in &plots {
        assert!(name.len() <= 120 && name.starts_with(&kernel), "{name}");
        assert!(
            report.contains(&format!("plots/{name}")),
            "{name} is linked"
        );
    }
    assert!(
        plots.iter().any(|n| n.len() == 120),
        "{plots:?}: one was cut"
    );
    let first = report.clone();
    let out = report_in(root.path(), &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    let again = std::fs::read_to_string(copy.join("report.md")).unwrap();
    assert!(first == again, "a second render gives other bytes");
    // The experiment with its kernel source beside it plans.
    let kernels = root.path().join("kernels");
    std::fs::create_dir(&kernels).unwrap();
    std::fs::copy("kernels/incore.cu", kernels.join("incore.cu")).unwrap();
    let planned = root.path().join("exp").join("incore.toml");
    std::fs::create_dir(planned.parent().unwrap()).unwrap();
    std::fs::write(&planned, &exp).unwrap();
    let out = run(&["plan", planned.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A kernel's `reads` and `writes` reach `[[report.metric]]` as `bytes` does, and beside the
/// counters: the report sets each against the bytes DRAM read and wrote, which add up to the
/// DRAM bytes the declared-bytes table shows; a kernel declaring `bytes` alone has neither.
#[test]
fn declared_reads_and_writes_reach_metrics_and_stand_beside_drams_reads_and_writes() {
    let (root, copy) = copy_run("counters");
    rewrite_experiment(&copy, |exp| {
        let apart = "reads = \"4 * mib * 262144\"\nwrites = \"4 * mib * 262144\"";
        let exp = exp.replacen("bytes = \"2 * 4 * mib * 262144\"", apart, 1);
        exp + "\n[[report.metric]]\nname = \"read share\"\nvalue = \"reads / (reads + writes)\"\nunit = \"fraction\"\n"
    });
    let out = report_in(root.path(), &copy);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    let rows = |table: &str, first: &str| -> Vec<Vec<String>> {
        let at = report
            .find(table)
            .unwrap_or_else(|| panic!("no {table:?} in:\n{report}"));
        // The table's rows: past its header and the line under it.
        (report[at..].lines())
            .skip_while(|l| !l.starts_with("| "))
            .skip(2)
            .take_while(|l| l.starts_with("| "))
            .map(|l| {
                l.trim_matches('|')
                    .split(" | ")
                    .map(|c| c.trim().to_string())
                    .collect()
            })
            .filter(|cols: &Vec<String>| cols[0].starts_with(first))
            .collect()
    };
    // The metric: a half for `copy`, none for `triad`, which declares bytes alone.
    let share = rows(
        "### read share (fraction): `copy`\n\n`reads / (reads + writes)`\n\n|",
        "",
    );
    assert_eq!(share.len(), 2, "{share:?}");
    assert!(
        share.iter().all(|r| r[1..] == ["0.5000", "0.5000"]),
        "{share:?}"
    );
    let triad = rows(
        "### read share (fraction): `triad`\n\n`reads / (reads + writes)`\n\n|",
        "",
    );
    assert!(triad.iter().all(|r| r[1..] == ["–", "–"]), "{triad:?}");
    // The counters: only `copy`'s four cells, each way against DRAM's.
    let apart = rows("| cell | cache | reads declared | DRAM read |", "");
    let cells: Vec<&str> = apart.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        cells,
        [
            "copy/mib=8/hot",
            "copy/mib=8/cold",
            "copy/mib=512/hot",
            "copy/mib=512/cold"
        ]
    );
    let all = rows("| cell | cache | declared | DRAM |", "copy/");
    let mb = |s: &str| s.parse::<f64>().unwrap_or_else(|_| panic!("{s}"));
    for r in &apart {
        let whole = all.iter().find(|w| w[0] == r[0]).unwrap();
        // Each of four significant digits: their sums agree to the last.
        let near = |a: f64, b: f64| (a - b).abs() <= 0.001 * b + 0.01;
        let declared = mb(&r[2]) + mb(&r[5]);
        assert!(near(declared, mb(&whole[2])), "{r:?} {whole:?}");
        let dram = mb(&r[3]) + mb(&r[6]);
        assert!(near(dram, mb(&whole[3])), "{r:?} {whole:?}");
        let ratio = format!("{:.2}x", mb(&r[3]) / mb(&r[2]));
        let off = (mb(&r[4].replace('x', "")) - mb(&ratio.replace('x', ""))).abs();
        assert!(off <= 0.011, "{r:?}: {ratio}");
    }
    assert!(
        report.contains("Declared reads and writes (`reads`, `writes`) beside the bytes DRAM"),
        "{report}"
    );
}

/// Each comparison the report makes is plotted with its interval shaded (the speed-up's and
/// the difference's), and a fresh process's phases have a legend as wide as their longest
/// name, which a column of a set width had cut off.
#[test]
fn comparison_plots_shade_their_interval_and_the_phases_legend_holds_its_longest_name() {
    for (run, plot, lines) in [
        ("bandwidth", "copy4-vs-copy.svg", 2),
        ("async", "matmul-difference.svg", 1),
    ] {
        let (root, copy) = copy_run(run);
        std::fs::remove_dir_all(copy.join("plots")).unwrap();
        let out = report_in(root.path(), &copy);
        assert!(out.status.success(), "{}", stderr(&out));
        let svg = std::fs::read_to_string(copy.join("plots").join(plot)).unwrap();
        assert_eq!(svg.matches("<polygon").count(), lines, "{run}: {plot}");
        assert!(svg.contains("shaded: 95% interval"), "{run}: {plot}");
        if run != "async" {
            continue;
        }
        let svg = std::fs::read_to_string(copy.join("plots/phases-matmul-n-2048.svg")).unwrap();
        let width: u32 = (svg.split("width=\"").nth(1).unwrap().split('"').next())
            .unwrap()
            .parse()
            .unwrap();
        // The name starts 930 px in, at 11.3 px: about 234 px of DejaVu Sans.
        let name = "compiled image (from an earlier process)";
        assert!(svg.contains(&format!(">\n{name}\n<")), "{svg}");
        assert!(width >= 930 + 234, "{width}");
    }
}
