//! The CLI without a GPU: the no-driver message, `runner plan` on the shipped experiments,
//! `runner report` re-rendering every stored report byte for byte, and standard output
//! that cannot be written.

mod common;
use common::*;
use std::path::Path;

#[test]
fn plan_probe_without_a_driver_says_so_and_fails() {
    if has_driver() {
        eprintln!("SKIPPED plan_probe_without_a_driver: this machine has a CUDA driver");
        return;
    }
    let out = run(&["plan", "--probe", "experiments/flops.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("no CUDA driver") && !err.contains("panicked"),
        "{err}"
    );
    assert!(stdout(&out).is_empty(), "no plan without its probe");
}

#[test]
fn run_without_a_driver_says_so_and_points_to_plan_and_report() {
    if has_driver() {
        eprintln!("SKIPPED run_without_a_driver_says_so: this machine has a CUDA driver");
        return;
    }
    let out = run(&[
        "experiments/events.toml",
        "--out",
        tempfile::tempdir().unwrap().path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("no CUDA driver"), "{err}");
    assert!(
        err.contains("runner plan") && err.contains("runner report"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn every_shipped_experiment_plans() {
    for entry in std::fs::read_dir("experiments").unwrap() {
        let path = entry.unwrap().path();
        // Data the experiments read lives beside them (experiments/data).
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let out = run(&["plan", path.to_str().unwrap()]);
        assert!(out.status.success(), "{}: {}", path.display(), stderr(&out));
        assert!(stdout(&out).contains("cells,"), "{}", stdout(&out));
    }
}

/// What `runner report` writes into a run folder (besides `plots/`).
const RENDERED: [&str; 3] = ["report.md", "cells.md", "summary.csv"];

/// Every committed run folder, `reports/slurm/compare` included.
fn committed_runs() -> Vec<std::path::PathBuf> {
    let mut runs = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from("reports")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir()
                && p.file_name()
                    .is_some_and(|n| !["plots", "sources", "parts"].contains(&n.to_str().unwrap()))
            {
                dirs.push(p.clone());
            }
            if p.file_name().is_some_and(|n| n == "run.json") {
                runs.push(dir.clone());
            }
        }
    }
    runs.sort();
    runs
}

#[test]
fn committed_reports_keep_their_lines_short_and_the_accuracy_report_under_900_lines() {
    let runs = committed_runs();
    assert!(runs.len() > 50, "found only {} runs", runs.len());
    for dir in runs {
        let path = dir.join("report.md");
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let n = line.chars().count();
            assert!(n <= 300, "{}:{}: {n} characters", path.display(), i + 1);
        }
        assert!(
            dir.join("cells.md").exists(),
            "{}: no cells.md",
            dir.display()
        );
    }
    let accuracy = std::fs::read_to_string("reports/accuracy/report.md").unwrap();
    let lines = accuracy.lines().count();
    assert!(lines < 900, "reports/accuracy/report.md has {lines} lines");
}

/// Snapshot test on real results: each committed report is exactly what `runner report`
/// renders from its stored samples.
#[test]
fn stored_reports_rerender_byte_for_byte() {
    let mut checked = 0;
    for entry in std::fs::read_dir("reports").unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join("run.json").exists() {
            continue;
        }
        let root = tempfile::tempdir().unwrap();
        let copy = root.path().join(dir.file_name().unwrap());
        std::fs::create_dir(&copy).unwrap();
        // Everything the run stored, but what rendering produces.
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap();
            let name = f.file_name().into_string().unwrap();
            if f.path().is_file() && !RENDERED.contains(&name.as_str()) {
                std::fs::copy(f.path(), copy.join(&name)).unwrap();
            }
        }
        // A run compared with an earlier one finds it beside itself, as in `reports/`.
        if let Ok(rel) = std::fs::read_to_string(dir.join("compare_to")) {
            let earlier = dir.join(rel.trim()).canonicalize().unwrap();
            std::os::unix::fs::symlink(&earlier, root.path().join(earlier.file_name().unwrap()))
                .unwrap();
        }
        // Every number the notes and findings quote is one the run shows.
        let out = run(&["report", copy.to_str().unwrap(), "--check-notes"]);
        assert!(out.status.success(), "{}: {}", dir.display(), stderr(&out));
        let plots = |d: &Path| std::fs::read_dir(d.join("plots")).map_or(0, |r| r.count());
        assert_eq!(plots(&dir), plots(&copy), "{}: plots", dir.display());
        for f in RENDERED {
            let want = std::fs::read_to_string(dir.join(f)).unwrap();
            let got = std::fs::read_to_string(copy.join(f)).unwrap();
            assert!(
                want == got,
                "{} differs from its re-rendering",
                dir.join(f).display()
            );
        }
        checked += 1;
    }
    assert!(
        checked >= 7,
        "expected the seven committed reports, found {checked}"
    );
}

/// A number the notes quote that the run does not show is named, in the report too, and
/// fails `--check-notes`; one with a footnote (from elsewhere) is not.
#[test]
fn a_stale_number_in_the_notes_fails_check_notes() {
    let root = tempfile::tempdir().unwrap();
    let copy = root.path().join("l2-flush");
    std::fs::create_dir(&copy).unwrap();
    for f in std::fs::read_dir("reports/l2-flush").unwrap() {
        let f = f.unwrap();
        let name = f.file_name().into_string().unwrap();
        if f.path().is_file() && !RENDERED.contains(&name.as_str()) && name != "findings.md" {
            std::fs::copy(f.path(), copy.join(&name)).unwrap();
        }
    }
    // The notes as they were: an older run's medians at n = 256; the run reads 18.98 and
    // 25.54 µs, 34.57% apart.
    let notes = "- 16.96 vs 23.92 µs at n = 256; now 18.98 vs 25.54 µs, +34.57%, 7 µs[^a] elsewhere.\n\n[^a]: another run.\n";
    std::fs::write(copy.join("notes.md"), notes).unwrap();
    let dir = copy.to_str().unwrap();
    let out = run(&["report", dir, "--check-notes"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("16.96 µs") && err.contains("23.92 µs"),
        "{err}"
    );
    assert!(
        !err.contains("18.98") && !err.contains("34.57") && !err.contains("7 µs"),
        "{err}"
    );
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    assert!(
        report.contains("16.96 µs (notes.md:1)"),
        "the report says so too"
    );
    assert!(
        run(&["report", dir]).status.success(),
        "a warning alone without the flag"
    );
}

#[test]
fn report_on_a_folder_without_a_run_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("run.json"), "{}", stderr(&out));
}

#[test]
fn no_arguments_is_a_usage_error() {
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(64));
    assert!(
        stderr(&out).contains("no experiment given"),
        "{}",
        stderr(&out)
    );
}

fn locking_experiment() -> (tempfile::TempDir, std::path::PathBuf) {
    let text = matmul_experiment(&kernels_dir()) + "\n[environment]\nclocks = { lock = 1755 }\n";
    write_experiment("lock.toml", &text)
}

#[test]
fn plan_shows_what_a_clock_lock_would_do() {
    let (_d, path) = locking_experiment();
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("lock the SM clock at 1755 MHz") && text.contains("reset"),
        "{text}"
    );
}

#[test]
fn a_clock_lock_is_refused_without_allow_clock_changes() {
    let (_d, path) = locking_experiment();
    let out_dir = tempfile::tempdir().unwrap();
    let out = run(&[
        path.to_str().unwrap(),
        "--out",
        out_dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("--allow-clock-changes") && err.contains("1755"),
        "{err}"
    );
    assert!(!out_dir.path().join("lock").exists(), "nothing ran");
}

/// Every committed report opens with its findings: the runner's (at most ten lines, each
/// with a number), below the person's where the run has a `findings.md` (likewise), and
/// every table shows its times in one unit.
#[test]
fn committed_reports_open_with_findings_and_keep_one_unit_per_table() {
    fn time(cell: &str) -> Option<&str> {
        let mut parts = cell.trim().splitn(2, ' ');
        let (number, unit) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let number = number.trim_start_matches(['+', '-']);
        (!number.is_empty() && number.parse::<f64>().is_ok())
            .then_some(unit)
            .filter(|u| ["ns", "µs", "ms", "s"].contains(u))
    }
    let mut checked = 0;
    for entry in std::fs::read_dir("reports").unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join("run.json").exists() {
            continue;
        }
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        let first_section = report.lines().find(|l| l.starts_with("## "));
        assert_eq!(first_section, Some("## Findings"), "{}", dir.display());
        let section = report.split("## Findings").nth(1).unwrap();
        let section: Vec<&str> = section
            .lines()
            .take_while(|l| !l.starts_with("## "))
            .collect();
        // Each finding with the lines a long one wraps onto.
        let bullets = |lines: &[&str]| -> Vec<String> {
            let mut found: Vec<String> = Vec::new();
            for l in lines.iter().take_while(|l| !l.starts_with("### ")) {
                match (l.strip_prefix("- "), found.last_mut()) {
                    (Some(item), _) => found.push(item.to_string()),
                    (None, Some(last)) if l.starts_with("  ") => last.push_str(l),
                    _ => {}
                }
            }
            assert!(
                (1..=10).contains(&found.len()),
                "{}: {} findings",
                dir.display(),
                found.len()
            );
            found
        };
        let at = |heading: &str| section.iter().position(|l| *l == heading);
        let written = at("### Written for this run");
        assert_eq!(
            written.is_some(),
            dir.join("findings.md").exists(),
            "{}",
            dir.display()
        );
        let mut findings =
            bullets(&section[at("### Computed by the runner").map_or(0, |i| i + 1)..]);
        if let Some(i) = written {
            findings.extend(bullets(&section[i + 1..]));
        }
        for f in &findings {
            assert!(
                f.chars().any(|c| c.is_ascii_digit()),
                "{}: {f}",
                dir.display()
            );
        }
        // Each table's cells that are a time alone share one unit.
        for table in report.split("\n\n").filter(|b| b.starts_with('|')) {
            let mut units: Vec<&str> = table
                .lines()
                .flat_map(|l| l.split('|'))
                .filter_map(time)
                .collect();
            units.sort();
            units.dedup();
            assert!(
                units.len() <= 1,
                "{}: a table mixes {units:?}",
                dir.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 20, "{checked} reports");
}

#[test]
fn only_plans_the_cells_that_match_and_names_what_does_not_exist() {
    let (_dir, path) = write_experiment("ok.toml", &matmul_experiment(&kernels_dir()));
    let p = path.to_str().unwrap();
    let out = run(&["plan", p, "--only", "variant=ev*", "--only", "n=96"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("matmul/n=96/events"), "{text}");
    assert!(!text.contains("matmul/n=64/"), "{text}");
    assert!(!text.contains("/sync"), "{text}");
    assert!(text.contains("only 1 of "), "{text}");
    let out = run(&["plan", p, "--only", "size=96"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no such key; the experiment's are kernel, variant, n"));
    let out = run(&["plan", p, "--only", "n=4096"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no cell matches"), "{}", stderr(&out));
}

#[test]
fn set_replaces_a_sweep_for_a_plan_and_names_what_it_cannot_replace() {
    let (_d, path) = write_experiment("set.toml", &matmul_experiment(&kernels_dir()));
    let p = path.to_str().unwrap();
    let out = run(&["plan", p, "--set", "n=128,2^8"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("matmul/n=128/events") && text.contains("matmul/n=256/sync"),
        "{text}"
    );
    assert!(!text.contains("n=64"), "{text}");
    let out = run(&["plan", p, "--set", "n=2^5..2^7", "--only", "n=32"]);
    assert!(
        stdout(&out).contains("only 2 of 8 cells"),
        "{}",
        stdout(&out)
    );
    for (clause, says) in [
        ("size=1,2", "no sweep parameter `size`"),
        ("n", "no `=`"),
        ("n=0", "grid dimension x is 0"),
        // An impossible value names the flag that brought it, not only the file's line.
        ("n=0", "values from --set n=0"),
    ] {
        let out = run(&["plan", p, "--set", clause]);
        assert_eq!(out.status.code(), Some(1), "{clause}");
        assert!(stderr(&out).contains(says), "{clause}: {}", stderr(&out));
    }
}

#[test]
fn a_reader_that_went_away_ends_a_command_quietly_and_a_full_disk_is_an_error() {
    let commands: [&[&str]; 5] = [
        &["plan", "experiments/accuracy.toml"],
        &["keys"],
        &["compare", "reports/compare", "reports/compare"],
        &["--help"],
        &["report", "reports/compare", "--template", "/nonexistent"],
    ];
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    for args in &commands[..4] {
        // A pipe whose reader closed before the first line, as `| head -1` does early.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = runner().args(*args).stdout(writer).output().unwrap();
        assert_eq!(out.status.code(), Some(141), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}: said nothing");
        let out = runner().args(*args).stdout(full()).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert_eq!(
            stderr(&out).trim_end(),
            "error: cannot write to standard output: No space left on device (os error 28)",
            "{args:?}"
        );
    }
    // An error before any output is said as before.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = runner().args(commands[4]).stdout(writer).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("error: "), "{}", stderr(&out));
    // An error that a full disk keeps from being said still ends as an error, not a panic.
    let out = runner().args(commands[4]).stderr(full()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_wrong_command_line_exits_64_not_the_slower_code() {
    for args in [
        &["--no-such-flag"][..],
        &["compare", "reports/events"],
        &[
            "sbatch",
            "experiments/events.toml",
            "--parts",
            "2",
            "--minutes",
            "0",
        ],
        &["run", "experiments/events.toml", "--shard", "2/1"],
        &["run", "experiments/events.toml", "--each"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {}", stderr(&out));
    }
    assert_eq!(run(&["--help"]).status.code(), Some(0));
}

/// A two-pass sum beside its reference, over a zipped sweep with a peer: what `plan` says
/// of each kernel.
fn two_pass_sum() -> String {
    let reduce = kernels_dir().join("reduce.cu");
    let kernel = |name: &str, first: &str, second: &str, block: u32, extra: &str| {
        format!(
            r#"[[kernel]]
name = "{name}"
source = "{src}"
entry = "{first}"
grid = ["blocks"]
block = [{block}]
shared_bytes = "{block} * 4"
takes = ["x", "partial", "n", "per_block"]
then = [{{ entry = "{second}", grid = [1], block = [256], shared_bytes = 1024, args = ["partial", "out", "blocks"] }}]
args = [
  {{ name = "x", buffer = "f32", len = "n", init = "uniform(0, 1)" }},
  {{ name = "partial", buffer = "f32", len = "blocks", init = "scratch" }},
  {{ name = "out", buffer = "f32", len = 1, init = "output" }},
  {{ name = "n", scalar = "u64", value = "n" }},
  {{ name = "per_block", scalar = "i32", value = 4096 }},
  {{ name = "blocks", scalar = "i32", value = "blocks" }},
]
{extra}
"#,
            src = reduce.display()
        )
    };
    [
        "[experiment]\ntitle = \"sum\"\n[sweep]\nshape = { n = [4096, 65536], blocks = [1, 16] }\n".to_string(),
        kernel("sum-ref", "reduce_ref", "reduce_final_ref", 32, "unchecked = true"),
        kernel(
            "sum",
            "reduce_block",
            "reduce_final",
            256,
            "check_kernel = { kernel = \"sum-ref\", outputs = [\"out\"] }\nbytes = \"4 * n\"\nflops = \"n\"",
        ),
        "[defaults]\ntimer = \"events\"\nwarmup = 1\nsamples = 5\n[[variant]]\nname = \"hot\"\n[report]\nfloor = false\n".into(),
        "[[peer]]\nname = \"echo\"\nvariant = \"hot\"\ncommand = [\"echo\", \"{{ n }}\"]\nreads = \"{us}\"\n".into(),
    ]
    .join("\n")
}

#[test]
fn plan_shows_each_kernels_launch_work_buffers_check_zipped_axes_and_peers() {
    let (_dir, path) = write_experiment("sum.toml", &two_pass_sum());
    let out = run(&["plan", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        "  zipped: n, blocks advance together, one point per position (not a product)",
        "    entry reduce_block(x, partial, n, per_block)",
        "    launch: grid 1 (n=4096 blocks=1), 16 (n=65536 blocks=16); block 256; dynamic shared 1.0 KiB; static shared unknown until compiled (`runner plan --compile` reads it)",
        "    then reduce_final(partial, out, blocks): grid 1; block 256; dynamic shared 1.0 KiB",
        "    buffers: inputs x; outputs out; scratch partial",
        "    per launch: bytes 16.0 KiB (n=4096 blocks=1), 256.0 KiB (n=65536 blocks=16); flops 4.1 kFLOP (n=4096 blocks=1), 65.5 kFLOP (n=65536 blocks=16)",
        "    check: kernel `sum-ref` on the same inputs, comparing out; it is given x, partial, out, n, per_block, blocks by name",
        "    check: none: timed unchecked (unchecked = true), and every table says so; the reference of sum",
        "peers (other programs measuring the same, beside a variant):",
    ] {
        assert!(text.contains(line), "no line {line:?} in:\n{text}");
    }
}

#[test]
fn plan_calls_an_untimed_reference_what_it_is() {
    let out = run(&["plan", "experiments/histogram-budget.toml"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("    check: none of its own: it is the reference of shared, global")
            && !text.contains("it writes no output"),
        "{text}"
    );
}

#[test]
fn plan_compile_compiles_with_nvrtc_where_it_is_installed_and_says_so_where_not() {
    let (_dir, path) = write_experiment("sum.toml", &two_pass_sum());
    let out = run(&["plan", path.to_str().unwrap(), "--compile"]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(text.contains("kernels:"), "the plan comes first: {text}");
    if out.status.success() {
        assert!(
            text.contains("compiled with NVRTC") && text.contains(", 0 failed"),
            "{text}"
        );
    } else {
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("nothing was compiled: libnvrtc cannot be loaded"),
            "{err}"
        );
    }
}

/// Where kernels declare bytes and FLOPs, the report draws a roofline: each trusted cell at
/// its intensity under DRAM's and its unit's roofs (the roofline suite: 13 points of work,
/// its=0 left off the log axis, and a roof of three corners).
#[test]
fn a_roofline_plots_each_trusted_cell_of_declared_work_under_its_roofs() {
    let root = tempfile::tempdir().unwrap();
    let copy = root.path().join("roofline");
    std::fs::create_dir(&copy).unwrap();
    for f in std::fs::read_dir("reports/roofline").unwrap() {
        let f = f.unwrap();
        let name = f.file_name().into_string().unwrap();
        if f.path().is_file() && !RENDERED.contains(&name.as_str()) {
            std::fs::copy(f.path(), copy.join(&name)).unwrap();
        }
    }
    let out = run(&["report", copy.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = std::fs::read_to_string(copy.join("plots/roofline.svg")).unwrap();
    assert_eq!(svg.matches("<circle").count(), 13 + 3, "{svg}");
    assert!(svg.contains("roof: DRAM, FP64"), "{svg}");
    let report = std::fs::read_to_string(copy.join("report.md")).unwrap();
    assert!(report.contains("](plots/roofline.svg)"), "{report}");
}
