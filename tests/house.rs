//! The house rules, checked on the source: all `unsafe` and every CUDA handle under
//! `src/cuda/` with a SAFETY comment each, stages that import only the stages before
//! them, and files that stay short.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every source file with its text, as `src/...` paths.
fn all() -> Vec<(String, String)> {
    let mut files = Vec::new();
    sources(Path::new("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.display().to_string(), text)
        })
        .collect()
}

/// Lines of code, comments left out.
fn code(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
}

#[test]
fn unsafe_and_cuda_handles_live_in_the_cuda_module_with_safety_comments() {
    let mut blocks = 0;
    for (path, text) in all() {
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in code(&text) {
            let is_unsafe = line.contains("unsafe {")
                || line.contains("unsafe fn")
                || line.contains("unsafe impl");
            if line.contains("cudarc::") || is_unsafe {
                assert!(
                    path.starts_with("src/cuda/"),
                    "{path}:{}: `unsafe` or cudarc outside src/cuda/: {line}",
                    i + 1
                );
            }
            if line.contains("unsafe {") {
                blocks += 1;
                let context = lines[i.saturating_sub(4)..=i].join("\n");
                assert!(
                    context.contains("SAFETY"),
                    "{path}:{}: an unsafe block without a SAFETY comment",
                    i + 1
                );
            }
        }
    }
    assert!(
        blocks > 20,
        "found only {blocks} unsafe blocks: is the scan right?"
    );
}

#[test]
fn stages_import_only_the_stages_before_them() {
    // Each stage and the modules it must not use.
    let rules: &[(&str, &[&str])] = &[
        (
            "src/cuda/",
            &[
                "experiment",
                "plan",
                "protocol",
                "worker",
                "method",
                "execute",
                "store",
                "analysis",
                "report",
            ],
        ),
        (
            "src/experiment/",
            &[
                "cuda", "plan", "protocol", "worker", "method", "execute", "store", "analysis",
                "report",
            ],
        ),
        (
            "src/plan/",
            &[
                "cuda", "protocol", "worker", "method", "execute", "store", "analysis", "report",
            ],
        ),
        (
            "src/method/",
            &[
                "plan", "protocol", "worker", "execute", "store", "analysis", "report",
            ],
        ),
        ("src/worker/", &["execute", "store", "analysis", "report"]),
        ("src/store/", &["worker", "execute", "analysis", "report"]),
        ("src/analysis/", &["worker", "execute", "report"]),
        ("src/report/", &["worker", "execute", "method"]),
    ];
    for (path, text) in all() {
        for (stage, banned) in rules {
            if !path.starts_with(stage) {
                continue;
            }
            for (i, line) in code(&text) {
                for b in *banned {
                    assert!(
                        !line.contains(&format!("crate::{b}")),
                        "{path}:{}: {stage} imports {b}: {line}",
                        i + 1
                    );
                }
            }
        }
    }
}

#[test]
fn no_source_file_is_over_about_500_lines() {
    for (path, text) in all() {
        let n = text.lines().count();
        assert!(
            n <= 520,
            "{path} has {n} lines: split it where it does two jobs"
        );
    }
}
