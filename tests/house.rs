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

/// Helpers that import nothing of the runner, so every module may use them.
const LEAVES: &[&str] = &["files", "system", "median"];

/// Every module of `src/` (the crate root aside) with the modules it may import besides the
/// leaves, in the order data walks: experiment -> plan -> protocol -> the worker (`cuda`,
/// `telemetry`, `method`, `worker`) -> the samples it sends (`store`, written by the parent,
/// `execute`) -> analysis -> verdict -> report, then the command line. A module names only
/// modules above it, so no two import each other; after the worker, a stage reads only the
/// protocol's data, never CUDA or the worker's methods.
const STAGES: &[(&str, &[&str])] = &[
    ("experiment", &[]),
    ("clock_lock", &["experiment"]),
    ("plan", &["experiment", "clock_lock"]),
    ("protocol", &["experiment", "plan"]),
    ("cuda", &["protocol"]),
    ("telemetry", &["protocol"]),
    ("method", &["experiment", "protocol", "cuda"]),
    (
        "worker",
        &[
            "experiment",
            "plan",
            "protocol",
            "cuda",
            "telemetry",
            "method",
        ],
    ),
    ("store", &["experiment", "plan", "protocol"]),
    (
        "execute",
        &[
            "experiment",
            "clock_lock",
            "plan",
            "protocol",
            "cuda",
            "method",
            "store",
        ],
    ),
    ("analysis", &["experiment", "plan", "protocol", "store"]),
    (
        "verdict",
        &["experiment", "plan", "protocol", "store", "analysis"],
    ),
    (
        "report",
        &[
            "experiment",
            "clock_lock",
            "plan",
            "protocol",
            "store",
            "analysis",
            "verdict",
        ],
    ),
    ("cli", &["experiment", "plan", "execute", "verdict"]),
];

/// Single files allowed one module beyond their stage's, and why.
const EXCEPTIONS: &[(&str, &str, &str)] = &[(
    "src/store/committed_tests.rs",
    "method",
    "a test that replays the worker's budget meter on the committed runs",
)];

/// The module of the runner each `crate::` path in `text` names, with its line: the first
/// segment of `crate::x::y`, whether in a `use` or inline, and each member of a grouped
/// `crate::{x, y::z}` (nested groups and groups over several lines included).
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let line = text[..at].matches('\n').count() + 1;
        let rest = &text[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            found.push((line, first_segment(rest)));
            continue;
        };
        let (mut depth, mut member) = (0, 0);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    found.push((line, first_segment(&group[member..])));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    found.push((line, first_segment(&group[member..])));
                    member = i + 1;
                }
                _ => {}
            }
        }
    }
    found.retain(|(_, m)| !m.is_empty() && m != "self");
    found
}

fn first_segment(path: &str) -> String {
    path.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// `text` with its comment lines blanked, so that line numbers stay.
fn without_comments(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect();
    lines.join("\n")
}

/// The module a `src/...` file belongs to: `src/worker/cell.rs` -> `worker`.
fn module_of(path: &str) -> &str {
    let inside = path.strip_prefix("src/").unwrap();
    let first = inside.split('/').next().unwrap();
    first.strip_suffix(".rs").unwrap_or(first)
}

#[test]
fn the_import_scan_sees_grouped_nested_and_inline_paths() {
    let text = "use crate::{cuda, store::{read, Stored}};\n\
                use crate::{\n    self,\n    plan::Cell,\n};\n\
                let d = crate::report::view::build(x);\n\
                use super::cell::run;\n";
    let found: Vec<(usize, String)> = crate_paths(text);
    let names: Vec<(usize, &str)> = found.iter().map(|(l, m)| (*l, m.as_str())).collect();
    assert_eq!(
        names,
        [(1, "cuda"), (1, "store"), (2, "plan"), (6, "report")]
    );
}

#[test]
fn every_module_is_a_stage_and_names_only_stages_before_it() {
    let mut modules: Vec<String> = std::fs::read_dir("src")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "main.rs")
        .map(|name| name.strip_suffix(".rs").unwrap_or(&name).to_string())
        .collect();
    modules.sort();
    let mut known: Vec<String> = LEAVES
        .iter()
        .chain(STAGES.iter().map(|(m, _)| m))
        .map(|m| m.to_string())
        .collect();
    known.sort();
    assert_eq!(modules, known, "each module of src/ is a leaf or a stage");
    for (i, (stage, allowed)) in STAGES.iter().enumerate() {
        for a in *allowed {
            assert!(
                STAGES[..i].iter().any(|(m, _)| m == a),
                "{stage} may import {a}, which is not a stage before it"
            );
        }
    }
}

#[test]
fn stages_import_only_the_stages_before_them() {
    for (path, text) in all() {
        if path == "src/main.rs" {
            continue;
        }
        let module = module_of(&path);
        let allowed = STAGES
            .iter()
            .find(|(m, _)| *m == module)
            .map_or(&[][..], |(_, a)| *a);
        for (line, target) in crate_paths(&without_comments(&text)) {
            let excepted = EXCEPTIONS
                .iter()
                .any(|(p, m, _)| *p == path && *m == target);
            let ok = target == module
                || LEAVES.contains(&target.as_str())
                || allowed.contains(&target.as_str())
                || excepted;
            assert!(
                ok,
                "{path}:{line}: {module} imports {target}; it may import {allowed:?} and the leaves {LEAVES:?}"
            );
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
