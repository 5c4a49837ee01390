//! The house rules, checked on the source: all `unsafe` and every CUDA handle in the `cuda`
//! crate (`crates/cuda/src/`) with a SAFETY comment each, the runner forbidding `unsafe`
//! (the compiler keeps it out), stages that import only the stages before them, no files of
//! one folder (its `mod.rs` among them) importing each other in a circle, and files and
//! functions that stay short.

use regex::Regex;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

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

/// The CUDA layer's crate: its sources, and the module name the runner imports it by.
const CUDA_CRATE: &str = "crates/cuda/src";

/// Every source file with its text, as `src/...` and `crates/cuda/src/...` paths.
fn all() -> Vec<(String, String)> {
    let mut files = Vec::new();
    sources(Path::new("src"), &mut files);
    sources(Path::new(CUDA_CRATE), &mut files);
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
                    path.starts_with(CUDA_CRATE),
                    "{path}:{}: `unsafe` or cudarc outside {CUDA_CRATE}/: {line}",
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
fn the_runner_forbids_unsafe_so_the_compiler_keeps_it_in_the_cuda_crate() {
    let main = std::fs::read_to_string("src/main.rs").unwrap();
    assert!(main.contains("#![forbid(unsafe_code)]"));
    let manifest = std::fs::read_to_string("Cargo.toml").unwrap();
    assert!(
        !manifest.contains("cudarc"),
        "the runner reaches CUDA only through the cuda crate"
    );
}

/// Helpers that import nothing of the runner, so every module may use them.
const LEAVES: &[&str] = &["files", "system", "statistics", "terminal"];

/// Every module of `src/` (the crate root aside) with the modules it may import besides the
/// leaves, in the order data walks: experiment -> plan -> protocol -> the worker (`cuda`,
/// `telemetry`, `method`, `worker`) -> the samples it sends (`store`, written by the parent,
/// `execute`) -> analysis -> compare -> report, then the command line and its commands. A module names only
/// modules above it, so no two import each other; after the worker, a stage reads only the
/// protocol's data, never CUDA or the worker's methods. `cuda`, the FFI layer, imports
/// nothing of the runner: the protocol makes its `DeviceInfo` from the driver's answer.
/// `testkit`, compiled for tests only, makes fixtures of experiments, so it follows the
/// experiment, and the stages whose tests share them name it.
const STAGES: &[(&str, &[&str])] = &[
    ("cuda", &[]),
    ("experiment", &[]),
    ("testkit", &["experiment"]),
    ("clock_lock", &["experiment"]),
    ("plan", &["experiment", "testkit", "clock_lock"]),
    ("protocol", &["experiment", "plan", "cuda"]),
    ("telemetry", &["protocol"]),
    ("method", &["experiment", "plan", "protocol", "cuda"]),
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
            "testkit",
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
        "compare",
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
            "compare",
        ],
    ),
    ("cli", &["experiment", "plan", "execute", "compare"]),
    (
        "commands",
        &[
            "experiment",
            "plan",
            "worker",
            "store",
            "execute",
            "compare",
            "report",
            "cli",
        ],
    ),
];

/// Single files allowed one module beyond their stage's, and why.
const EXCEPTIONS: &[(&str, &str, &str)] = &[
    (
        "src/store/committed_tests.rs",
        "method",
        "a test that replays the worker's budget meter on the committed runs",
    ),
    (
        "src/commands/preflight.rs",
        "cuda",
        "`plan --compile` compiles each build with NVRTC as a run does and, where there is a GPU, loads it and reads its parameters through the driver",
    ),
    (
        "src/commands/resources.rs",
        "cuda",
        "what `plan --compile` says each entry uses comes from the driver's attributes where there is a GPU",
    ),
];

/// The module of the runner each `crate::` path in `text` names, with its line: the first
/// segment of `crate::x::y`, whether in a `use` or inline, and each member of a grouped
/// `crate::{x, y::z}` (nested groups and groups over several lines included); and `cuda`
/// for each path into the CUDA layer's crate (`cuda::x`).
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("cuda::") {
        let before = text[..at].chars().next_back();
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            found.push((text[..at].matches('\n').count() + 1, "cuda".to_string()));
        }
    }
    found.extend(runner_paths(text));
    found
}

/// The module of the runner each `crate::` path in `text` names, with its line.
fn runner_paths(text: &str) -> Vec<(usize, String)> {
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

/// The module a `src/...` file belongs to: `src/worker/cell.rs` -> `worker`; the CUDA
/// layer's crate is `cuda`.
fn module_of(path: &str) -> &str {
    if path.starts_with(CUDA_CRATE) {
        return "cuda";
    }
    let inside = path.strip_prefix("src/").unwrap();
    let first = inside.split('/').next().unwrap();
    first.strip_suffix(".rs").unwrap_or(first)
}

#[test]
fn the_import_scan_sees_grouped_nested_and_inline_paths() {
    let text = "use crate::{files, store::{read, Stored}};\n\
                use crate::{\n    self,\n    plan::Cell,\n};\n\
                let d = crate::report::view::build(x);\n\
                use super::cell::run;\n\
                use cuda::{Event, Launch};\n\
                let e = cuda::synchronize(); let f = my_cuda::x(); let g = a::cuda::y;\n";
    let mut found: Vec<(usize, String)> = crate_paths(text);
    found.sort();
    let names: Vec<(usize, &str)> = found.iter().map(|(l, m)| (*l, m.as_str())).collect();
    assert_eq!(
        names,
        [
            (1, "files"),
            (1, "store"),
            (2, "plan"),
            (6, "report"),
            (8, "cuda"),
            (9, "cuda")
        ]
    );
}

#[test]
fn every_module_is_a_stage_and_names_only_stages_before_it() {
    let mut modules: Vec<String> = std::fs::read_dir("src")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "main.rs")
        .map(|name| name.strip_suffix(".rs").unwrap_or(&name).to_string())
        .chain(["cuda".to_string()])
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

/// The longest source file of `src/`, in lines, at most: about 500.
const MAX_FILE_LINES: usize = 520;

#[test]
fn no_source_file_is_over_about_500_lines() {
    for (path, text) in all() {
        let n = text.lines().count();
        assert!(
            n <= MAX_FILE_LINES,
            "{path} has {n} lines: split it where it does two jobs"
        );
    }
}

/// Functions of `src/` over 100 lines, at most.
const MAX_FUNCTIONS_OVER_100_LINES: usize = 1;

/// The longest function of `src/`, in lines, at most.
const MAX_FUNCTION_LINES: usize = 120;

/// The name of the function a line declares, if it declares one.
fn declared_fn(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    if let Some(after) = rest.strip_prefix("pub") {
        rest = match after.strip_prefix('(') {
            Some(scoped) => scoped.split_once(')')?.1,
            None => after,
        }
        .trim_start();
    }
    for qualifier in ["const ", "async ", "unsafe ", "extern \"C\" "] {
        rest = rest.strip_prefix(qualifier).unwrap_or(rest);
    }
    let name = rest.strip_prefix("fn ")?;
    name.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .filter(|n| !n.is_empty())
}

/// Each function with a body in `text`: its first line, its length in lines (from its `fn`
/// line to its closing brace, which rustfmt sets at the `fn`'s indentation) and its name.
/// A declaration without a body, or a function on one line, is left out.
fn function_lengths(text: &str) -> Vec<(usize, usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = declared_fn(line) else {
            continue;
        };
        let indent = &line[..line.len() - line.trim_start().len()];
        let signature_end = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';') || l.ends_with('}')
        });
        let Some(open) = signature_end.filter(|&j| lines[j].trim_end().ends_with('{')) else {
            continue;
        };
        let close = format!("{indent}}}");
        if let Some(end) = (open + 1..lines.len()).find(|&j| lines[j].starts_with(&close)) {
            found.push((i + 1, end - i + 1, name));
        }
    }
    found
}

#[test]
fn the_length_scan_counts_from_fn_to_its_closing_brace() {
    let text = "pub(super) fn outer(\n    a: u8,\n) -> u8 {\n    let f = |x: u8| {\n        x\n    };\n    fn inner() -> u8 {\n        1\n    }\n    f(a) + inner()\n}\n\
                trait T {\n    fn declared(&self);\n    fn short(&self) -> u8 { 1 }\n}\n\
                pub const unsafe fn raw() {\n}\n";
    assert_eq!(
        function_lengths(text),
        [(1, 11, "outer"), (7, 3, "inner"), (16, 2, "raw")]
    );
}

#[test]
fn functions_stay_short() {
    let mut functions = Vec::new();
    for (path, text) in all() {
        for (line, length, name) in function_lengths(&text) {
            functions.push((length, format!("{path}:{line} {name}")));
        }
    }
    assert!(
        functions.len() > 1000,
        "found only {} functions: is the scan right?",
        functions.len()
    );
    functions.sort();
    let long: Vec<&(usize, String)> = functions.iter().filter(|(n, _)| *n > 100).collect();
    assert!(
        long.len() <= MAX_FUNCTIONS_OVER_100_LINES,
        "{} functions over 100 lines, more than {MAX_FUNCTIONS_OVER_100_LINES}: split the new one into named steps\n{long:#?}",
        long.len()
    );
    let (lines, longest) = functions.last().unwrap();
    assert!(
        *lines <= MAX_FUNCTION_LINES,
        "{longest} has {lines} lines, more than {MAX_FUNCTION_LINES}: split it into named steps"
    );
}

/// An import within one folder: the folder, the file that imports and the file it names
/// (each by its name in the folder, the folder's front, `mod.rs`, as `mod`), and the names
/// it reaches that file by.
type Edge = (String, String, String, Vec<String>);

/// Where a file sits in the folder its `super::` names, and its name there: `src/a/b.rs` is
/// `b` of `src/a`, and so is `src/a/b/mod.rs`.
fn place(path: &str) -> (String, String) {
    let file = Path::new(path);
    let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
    let dir = file.parent().unwrap();
    match stem.as_str() {
        "mod" => (
            dir.parent().unwrap().display().to_string(),
            dir.file_name().unwrap().to_string_lossy().into_owned(),
        ),
        _ => (dir.display().to_string(), stem),
    }
}

/// The names of each folder's files (and folders of files), the front aside: `(dir, name)`.
fn files_of(files: &[(String, String)]) -> HashSet<(String, String)> {
    let mut names = HashSet::new();
    for (path, _) in files {
        let mut dir = Path::new(path).parent();
        let mut name = Path::new(path)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        while let Some(d) = dir {
            if name != "mod" {
                names.insert((d.display().to_string(), name));
            }
            name = d
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned());
            dir = d.parent();
        }
    }
    names
}

/// `text` with its inline modules (`mod tests { .. }`) blanked: a `super::` in them names
/// the file itself, not its folder. rustfmt sets the closing brace at the `mod`'s indentation.
fn without_inline_modules(text: &str) -> String {
    static OPENS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^(\s*)(?:pub(?:\([^)]*\))? )?mod \w+ \{$").unwrap());
    let mut close = None;
    let lines: Vec<&str> = text
        .lines()
        .map(|l| match &close {
            Some(end) => {
                if l == end {
                    close = None;
                }
                ""
            }
            None => match OPENS.captures(l) {
                Some(c) => {
                    close = Some(format!("{}}}", &c[1]));
                    ""
                }
                None => l,
            },
        })
        .collect();
    lines.join("\n")
}

/// The path the crate names a folder by: `src/a/b` -> `crate::a::b`.
fn crate_path(dir: &str) -> String {
    let inside = dir.strip_prefix("src").unwrap_or(dir).replace('/', "::");
    format!("crate{inside}")
}

/// A folder's front as the scan reads it: its code (inline modules blanked, the folder's own
/// path `crate::a::b::` read as `self::`), and what its `use` lines bring in by name: each
/// name, the file of the folder it comes from (`None` for one from outside the folder), and
/// whether the line re-exports it.
struct Front {
    code: String,
    uses: Vec<(String, Option<String>, bool)>,
}

impl Front {
    fn read(dir: &str, text: &str, names: &HashSet<(String, String)>) -> Front {
        static USES: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"(?m)^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]*);").unwrap());
        let code = without_inline_modules(&without_comments(text))
            .replace(&format!("{}::", crate_path(dir)), "self::");
        let mut uses = Vec::new();
        for u in USES.captures_iter(&code) {
            let mut paths = Vec::new();
            use_paths("", &u[2], &mut paths);
            for (path, alias) in paths {
                let first = first_segment(path.strip_prefix("self::").unwrap_or(&path));
                let file = names.contains(&(dir.to_string(), first.clone()));
                uses.push((alias, file.then_some(first), u.get(1).is_some()));
            }
        }
        Front { code, uses }
    }
}

/// An edge of `dir` from file `from` to file `to`, by `name`.
fn edge(dir: &str, from: &str, to: &str, name: &str) -> Edge {
    (dir.into(), from.into(), to.into(), vec![name.into()])
}

/// Each folder a file's `super::` paths name, nearest first, with the file's name there:
/// `src/a/b/x.rs` is `x` of `src/a/b` (`super::`), then `b` of `src/a` (`super::super::`).
/// The crate roots (`src/`, the CUDA crate's) are the stages' business, not the folders'.
fn places(path: &str) -> Vec<(String, String)> {
    let mut places = vec![place(path)];
    loop {
        let dir = Path::new(&places.last().unwrap().0);
        let (Some(up), Some(name)) = (dir.parent(), dir.file_name()) else {
            break;
        };
        let up = up.display().to_string();
        if !(up.starts_with("src/") || up.starts_with(&format!("{CUDA_CRATE}/"))) {
            break;
        }
        places.push((up, name.to_string_lossy().into_owned()));
    }
    places
}

/// What file `path` names of each folder above it: a file through `super::` (`super::x`,
/// `super::{x, y::z}`, or the folder's `crate::` path), and, from a folder within a folder,
/// through `super::super::` (or the outer folder's `crate::` path) as the inner folder
/// does; an item the folder's front defines (an edge to `mod`) or re-exports from a file
/// (an edge to that file). A file a `#[path]` attribute declares names the file that
/// declares it.
fn file_edges(
    (path, text): &(String, String),
    names: &HashSet<(String, String)>,
    fronts: &HashMap<String, Front>,
    declarer: Option<&String>,
) -> Vec<Edge> {
    static SUPERS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b(?:super::)+").unwrap());
    let places = places(path);
    let mut code = without_inline_modules(&without_comments(text));
    // Each folder's own `crate::` path read as the `super::`s that reach it, the nearest
    // (the longest path) first.
    for (level, (dir, _)) in places.iter().enumerate() {
        if dir != "src" {
            let supers = "super::".repeat(level + 1);
            code = code.replace(&format!("{}::", crate_path(dir)), &supers);
        }
    }
    // The crate's own paths set aside: what is left of `crate::` names the folders.
    let code = code.replace("crate::", "crate_::");
    let mut edges = Vec::new();
    for (level, (dir, name)) in places.iter().enumerate() {
        // The paths with this many `super::`s read as `crate::` paths are, the others set
        // aside.
        let code = SUPERS.replace_all(&code, |c: &regex::Captures| match c[0].len() {
            n if n == "super::".len() * (level + 1) => "crate::",
            _ => "above_::",
        });
        let declarer = declarer.filter(|_| level == 0);
        edges.extend(edges_in(
            &code,
            (dir, name),
            names,
            fronts.get(dir),
            declarer,
        ));
    }
    edges
}

/// The edges of `name`, a file (or folder) of `dir`, whose paths into `dir` `code` holds
/// as `crate::` paths.
fn edges_in(
    code: &str,
    (dir, name): (&String, &String),
    names: &HashSet<(String, String)>,
    front: Option<&Front>,
    declarer: Option<&String>,
) -> Vec<Edge> {
    let mut edges = Vec::new();
    for (_, target) in runner_paths(code) {
        if target == *name {
            continue;
        }
        if let Some(file) = declarer {
            edges.push(edge(dir, name, file, &target));
        } else if names.contains(&(dir.clone(), target.clone())) {
            edges.push(edge(dir, name, &target, &target));
        } else if let Some(front) = front {
            match front.uses.iter().find(|(alias, _, _)| *alias == target) {
                Some((_, Some(file), _)) if file != name => {
                    edges.push(edge(dir, name, file, &target))
                }
                Some(_) => {}
                None => edges.push(edge(dir, name, "mod", &target)),
            }
        }
    }
    if code.contains("crate::*") && front.is_some() && declarer.is_none() {
        edges.push(edge(dir, name, "mod", "*"));
    }
    edges
}

/// The files of `dir` its front names in its own code: `x::f()`, `self::x`, `use x::T`, or
/// a name it re-exports with `pub use x::T`; a `mod x;` line or a re-export alone is none.
fn front_edges(dir: &str, front: &Front, names: &HashSet<(String, String)>) -> Vec<Edge> {
    static LINES: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?(?:use\s+[^;]*|mod\s+\w+\s*);").unwrap()
    });
    static INLINE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?:^|[^\w:])(?:self::)?([a-z_][a-z0-9_]*)::").unwrap());
    // The front's code, its `mod x;` and `use` lines aside.
    let rest = LINES.replace_all(&front.code, "");
    let mut edges = Vec::new();
    for (alias, file, reexport) in &front.uses {
        let Some(file) = file else {
            continue;
        };
        let named = Regex::new(&format!(r"\b{alias}\b")).unwrap();
        if !reexport || named.is_match(&rest) {
            edges.push(edge(dir, "mod", file, alias));
        }
    }
    for c in INLINE.captures_iter(&rest) {
        if names.contains(&(dir.to_string(), c[1].to_string())) {
            edges.push(edge(dir, "mod", &c[1], &format!("{}::", &c[1])));
        }
    }
    edges
}

/// The folders' own imports among their files, each folder's front (`mod.rs`) among them:
/// [`file_edges`] of every file and [`front_edges`] of every front, comments and inline
/// modules (`mod tests { .. }`) left out, one edge per two files with the names it holds.
fn folder_imports(files: &[(String, String)]) -> Vec<Edge> {
    static DECLARED: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"#\[path = "([^"]+)"\]\s*(?:pub )?mod \w+;"#).unwrap());
    let names = files_of(files);
    // Each folder's front: `dir/mod.rs`, or `dir.rs` beside it (the crate root's, `src/`'s,
    // is the stages' business, not this scan's).
    let mut fronts: HashMap<String, Front> = HashMap::new();
    for (path, text) in files {
        let dir = path
            .strip_suffix("/mod.rs")
            .or_else(|| path.strip_suffix(".rs"));
        if let Some(dir) = dir.filter(|d| *d != "src" && names.iter().any(|(f, _)| f == d)) {
            fronts.insert(dir.to_string(), Front::read(dir, text, &names));
        }
    }
    // Files a `#[path]` attribute declares: their `super::` is the file that declares them.
    let mut declared_by = HashMap::new();
    for (path, text) in files {
        for c in DECLARED.captures_iter(text) {
            let dir = Path::new(path).parent().unwrap();
            declared_by.insert(dir.join(&c[1]).display().to_string(), place(path).1);
        }
    }
    let mut edges: Vec<Edge> = (files.iter())
        .filter(|(path, _)| !path.ends_with("main.rs"))
        .flat_map(|f| file_edges(f, &names, &fronts, declared_by.get(&f.0)))
        .chain(
            fronts
                .iter()
                .flat_map(|(dir, f)| front_edges(dir, f, &names)),
        )
        .collect();
    edges.sort();
    let mut merged: Vec<Edge> = Vec::new();
    for (dir, from, to, names) in edges {
        match merged.last_mut() {
            Some(last) if (&last.0, &last.1, &last.2) == (&dir, &from, &to) => {
                last.3.extend(names);
                last.3.dedup();
            }
            _ => merged.push((dir, from, to, names)),
        }
    }
    merged
}

/// Every circle of `edges` within a folder, each once, as a sentence saying what to move.
fn circles(edges: &[Edge]) -> Vec<String> {
    let mut found: Vec<Vec<&str>> = Vec::new();
    for (dir, start, _, _) in edges {
        // The shortest way from `start` back to it, breadth first.
        let mut ways: Vec<Vec<&str>> = vec![vec![start]];
        let mut seen = vec![start.as_str()];
        let mut circle = None;
        while circle.is_none() && !ways.is_empty() {
            let mut next = Vec::new();
            for way in &ways {
                let at = *way.last().unwrap();
                for (_, _, to, _) in edges.iter().filter(|(d, a, _, _)| d == dir && a == at) {
                    if to == start {
                        circle.get_or_insert_with(|| way.clone());
                    } else if !seen.contains(&to.as_str()) {
                        seen.push(to);
                        next.push([way.clone(), vec![to.as_str()]].concat());
                    }
                }
            }
            ways = next;
        }
        if let Some(mut circle) = circle {
            let least = (0..circle.len()).min_by_key(|&i| circle[i]).unwrap();
            circle.rotate_left(least);
            circle.insert(0, dir);
            if !found.contains(&circle) {
                found.push(circle);
            }
        }
    }
    found
        .into_iter()
        .map(|circle| {
            let (dir, files) = (circle[0], &circle[1..]);
            let step = |i: usize| {
                let (a, b) = (files[i], files[(i + 1) % files.len()]);
                let (.., names) = edges.iter().find(|(d, x, y, _)| d == dir && x == a && y == b).unwrap();
                format!("{a} -> {b} ({})", names.join(", "))
            };
            let ways: Vec<String> = (0..files.len()).map(step).collect();
            let fix = match files.contains(&"mod") {
                true => "move what mod.rs defines that its files name into a leaf file of the folder that imports none of them; mod.rs keeps its `mod` lines, `pub use` lines (the outside's paths stay) and code only the outside calls",
                false => "move what both need into one of them, or a third file",
            };
            format!("{dir}: {}: a circle; {fix}", ways.join(", "))
        })
        .collect()
}

#[test]
fn the_folder_scan_sees_a_circle_through_mod_rs() {
    // b names Shared, which mod.rs defines, and mod.rs calls b: a circle through mod.rs; d
    // the same through the folder's `crate::` path. No import: b's test module's `super::`,
    // d's `super::super::` (the crate root's, the stages' business), and e/mod.rs's
    // `super::Outside`, which mod.rs takes from outside.
    let files = |mod_rs: &str| {
        [
            ("src/a/mod.rs", mod_rs),
            (
                "src/a/b.rs",
                "use super::{Shared, Cc};\n#[cfg(test)]\nmod tests {\n    use super::helper;\n}\n",
            ),
            ("src/a/c.rs", "pub struct Cc;\n"),
            (
                "src/a/d.rs",
                "use crate::a::Shared;\nuse super::super::x;\n",
            ),
            ("src/a/e/mod.rs", "use super::Outside;\n"),
        ]
        .map(|(p, t)| (p.to_string(), t.to_string()))
    };
    let front = "mod b;\nmod c;\nmod d;\nmod e;\npub use c::Cc;\nuse crate::z::Outside;\n\
                 pub struct Shared(Cc);\n\
                 pub fn of() -> u8 {\n    b::rule() + self::d::rule()\n}\n";
    let edges = folder_imports(&files(front));
    let named: Vec<(&str, &str, String)> = edges
        .iter()
        .map(|(_, a, b, n)| (a.as_str(), b.as_str(), n.join(" ")))
        .collect();
    assert_eq!(
        named,
        [
            ("b", "c", "Cc".to_string()),
            ("b", "mod", "Shared".to_string()),
            ("d", "mod", "Shared".to_string()),
            ("mod", "b", "b::".to_string()),
            ("mod", "c", "Cc".to_string()),
            ("mod", "d", "d::".to_string()),
        ]
    );
    let found = circles(&edges);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with(
            "src/a: b -> mod (Shared), mod -> b (b::): a circle; move what mod.rs defines"
        ),
        "{found:?}"
    );
    // Shared in a leaf (c.rs) and a front that calls none of its files: no circle.
    let leaf =
        "mod b;\nmod c;\nmod d;\nmod e;\npub use c::{Cc, Shared};\npub fn of() -> u8 {\n    7\n}\n";
    assert_eq!(circles(&folder_imports(&files(leaf))), Vec::<String>::new());
}

#[test]
fn the_folder_scan_follows_super_super_from_a_folder_within_into_its_parents_front() {
    // In folder b of folder a, x names `super::super::Shared`, which a/mod.rs defines, and
    // `super::super::c::f`, a file of a; y names `crate::a::Other` (a's `crate::` path),
    // which a/mod.rs re-exports from c, and `super::super::super::files`, the crate root's.
    // a/mod.rs calls b: b -> mod -> b, a circle in a.
    let files =
        |front: &str| {
            [
            ("src/a/mod.rs", front),
            ("src/a/b/mod.rs", "pub mod x;\nmod y;\n"),
            (
                "src/a/b/x.rs",
                "use super::super::Shared;\npub fn rule() -> u8 {\n    super::super::c::f()\n}\n",
            ),
            (
                "src/a/b/y.rs",
                "use crate::a::Other;\nuse super::x::rule;\nuse super::super::super::files;\n",
            ),
            ("src/a/c.rs", "pub struct Other;\npub fn f() -> u8 {\n    1\n}\n"),
        ]
        .map(|(p, t)| (p.to_string(), t.to_string()))
        };
    let front = "mod b;\nmod c;\npub use c::Other;\npub struct Shared;\n\
                 pub fn of() -> u8 {\n    b::x::rule()\n}\n";
    let edges = folder_imports(&files(front));
    let named: Vec<(&str, &str, &str, String)> = edges
        .iter()
        .map(|(d, a, b, n)| (d.as_str(), a.as_str(), b.as_str(), n.join(" ")))
        .collect();
    assert_eq!(
        named,
        [
            ("src/a", "b", "c", "Other c".to_string()),
            ("src/a", "b", "mod", "Shared".to_string()),
            ("src/a", "mod", "b", "b::".to_string()),
            ("src/a/b", "y", "x", "x".to_string()),
        ]
    );
    let found = circles(&edges);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("src/a: b -> mod (Shared), mod -> b (b::): a circle"),
        "{found:?}"
    );
    // Shared in the leaf c.rs, re-exported: x imports c, and no circle is left.
    let leaf =
        "mod b;\nmod c;\npub use c::{Other, Shared};\npub fn of() -> u8 {\n    b::x::rule()\n}\n";
    assert_eq!(circles(&folder_imports(&files(leaf))), Vec::<String>::new());
}

#[test]
fn no_files_of_one_folder_import_each_other_in_a_circle() {
    let edges = folder_imports(&all());
    let found = circles(&edges);
    assert!(found.is_empty(), "{}", found.join("\n"));
    let has = |d: &str, a: &str, b: &str| {
        edges
            .iter()
            .any(|e| (e.0.as_str(), e.1.as_str(), e.2.as_str()) == (d, a, b))
    };
    assert!(
        has("src/worker", "inputs", "draw"),
        "the scan finds sibling imports: {edges:?}"
    );
    assert!(
        has("src/experiment", "knobs", "schema"),
        "the scan follows knobs/knob.rs's `super::super::` into its folder's: {edges:?}"
    );
    let (to_mod, from_mod) = (
        edges.iter().filter(|e| e.2 == "mod"),
        edges.iter().filter(|e| e.1 == "mod"),
    );
    assert!(
        to_mod.count() > 10 && from_mod.count() > 40,
        "the scan reads every mod.rs: {edges:?}"
    );
}

/// What the report may call of the analysis's free functions and its types' associated
/// ones, as `module::name`: loading and analysing a run, the runner's one median, and the
/// rules that judge two numbers (a bias, a peer's agreement), shared with the findings. Everything else it
/// reads from fields the analysis filled: the walk goes down once.
const REPORT_MAY_CALL: &[&str] = &[
    "load",
    "Analysis::of",
    "median",
    "agreement::bias",
    "agreement::within_tolerance",
    "agreement::agrees_with_peer",
];

/// What can be called of `src/analysis/`: its free functions as `module::name` (`name` for
/// the analysis's own, `mod.rs`, and what it re-exports), and its types' names.
fn analysis_items() -> (Vec<String>, Vec<String>) {
    let function = regex::Regex::new(r"(?m)^pub fn ([a-z_][a-z0-9_]*)").unwrap();
    let reexport = regex::Regex::new(r"(?m)^pub use [\w:]*::([a-z_][a-z0-9_]*);").unwrap();
    let kind = regex::Regex::new(r"(?m)^pub (?:struct|enum|type) ([A-Z][A-Za-z0-9_]*)").unwrap();
    let (mut functions, mut types) = (Vec::new(), Vec::new());
    for (path, text) in all() {
        let Some(inside) = path.strip_prefix("src/analysis/") else {
            continue;
        };
        let mut parts: Vec<&str> = inside.trim_end_matches(".rs").split('/').collect();
        if parts.last() == Some(&"mod") {
            parts.pop();
        }
        let module = parts.last().copied().unwrap_or("");
        let key = |name: &str| match module {
            "" => name.to_string(),
            m => format!("{m}::{name}"),
        };
        functions.extend(function.captures_iter(&text).map(|c| key(&c[1])));
        if module.is_empty() {
            functions.extend(reexport.captures_iter(&text).map(|c| c[1].to_string()));
        }
        types.extend(kind.captures_iter(&text).map(|c| c[1].to_string()));
    }
    (functions, types)
}

/// The paths a `use` tree names, each with the name it is used by: `a::{self, b::c as d}`
/// gives (`a`, `a`) and (`a::b::c`, `d`).
fn use_paths(prefix: &str, tree: &str, out: &mut Vec<(String, String)>) {
    let tree = tree.trim();
    let join = |p: &str| match prefix {
        "" => p.to_string(),
        _ => format!("{prefix}::{p}"),
    };
    if let Some(open) = tree.find('{') {
        let head = join(tree[..open].trim().trim_end_matches("::"));
        let inner = &tree[open + 1..tree.rfind('}').unwrap()];
        let (mut depth, mut from) = (0, 0);
        for (i, c) in inner.char_indices().chain([(inner.len(), ',')]) {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    if !inner[from..i].trim().is_empty() {
                        let (p, o) = (head.clone(), &mut *out);
                        use_paths(&p, &inner[from..i], o);
                    }
                    from = i + 1;
                }
                _ => {}
            }
        }
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p.trim(), a.trim().to_string()),
        None => (tree, tree.rsplit("::").next().unwrap_or(tree).to_string()),
    };
    match path {
        "self" => out.push((
            prefix.to_string(),
            prefix.rsplit("::").next().unwrap().into(),
        )),
        _ => out.push((join(path), alias)),
    }
}

/// `text` as the scan reads it: no comments, no tests.
fn scanned(text: &str) -> String {
    let text = without_comments(text);
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    let trailing = regex::Regex::new(r#"(?m)^([^"\n]*(?:"[^"\n]*"[^"\n]*)*)\s//.*$"#).unwrap();
    trailing.replace_all(text, "$1").into_owned()
}

/// The analysis's functions `text` (a file of the report) calls, as `module::name` (or
/// `Type::name`): through a path (`crate::analysis::counters::of(`), through a module or a
/// type it imported (`use crate::analysis::audits; audits::of(`), or by an imported name.
fn analysis_calls(text: &str, (functions, types): (&[String], &[String])) -> Vec<String> {
    let text = scanned(text);
    let known = |key: &str| {
        functions.iter().any(|f| f == key)
            || key
                .split_once("::")
                .is_some_and(|(t, _)| types.iter().any(|x| x == t))
    };
    let mut calls = Vec::new();
    // `segments` (`a::b::`) ending in `name(`: the call's key.
    let key = |segments: &str, name: &str| match segments.trim_end_matches("::").rsplit("::").next()
    {
        Some(m) if !m.is_empty() => format!("{m}::{name}"),
        _ => name.to_string(),
    };
    let call = r"\s*(?:::<[^>]*>)?\s*\(";
    let inline = regex::Regex::new(&format!(
        r"\banalysis::((?:[A-Za-z_][A-Za-z0-9_]*::)*)([a-z_][a-z0-9_]*){call}"
    ))
    .unwrap();
    calls.extend(inline.captures_iter(&text).map(|c| key(&c[1], &c[2])));
    let uses = regex::Regex::new(r"use crate::analysis::([^;]*);").unwrap();
    let mut imported = Vec::new();
    for u in uses.captures_iter(&text) {
        use_paths("", &u[1], &mut imported);
    }
    for (path, alias) in imported {
        if path.ends_with('*') {
            calls.push(format!("{path} (a glob import hides what is called)"));
            continue;
        }
        let bare = regex::Regex::new(&format!(r"(?:^|[^\w:.]){alias}{call}")).unwrap();
        if bare.is_match(&text) {
            // The function's own module and name: `fit::fit`, or `median`.
            let segments: Vec<&str> = path.rsplit("::").take(2).collect();
            calls.push(segments.into_iter().rev().collect::<Vec<_>>().join("::"));
        }
        let through = regex::Regex::new(&format!(
            r"(?:^|[^\w:.]){alias}::((?:[A-Za-z_][A-Za-z0-9_]*::)*)([a-z_][a-z0-9_]*){call}"
        ))
        .unwrap();
        for c in through.captures_iter(&text) {
            calls.push(key(&format!("{path}::{}", &c[1]), &c[2]));
        }
    }
    calls.retain(|c| known(c) || c.contains("glob"));
    calls.sort();
    calls.dedup();
    calls
}

#[test]
fn the_call_scan_sees_paths_imported_modules_types_and_names() {
    let functions: Vec<String> = ["counters::of", "fit::fit", "median", "audits::cost_share"]
        .map(String::from)
        .to_vec();
    let types = vec!["ProbeScale".to_string()];
    let text = "use crate::analysis::{audits::{self, Against}, fit::fit as fitted};\n\
                use crate::analysis::{median, probes::ProbeScale, Analysis};\n\
                use crate::analysis::fit;\n\
                let c = crate::analysis::counters::of(a);\n\
                let x = audits::cost_share(&c);\n\
                let f = fitted(&p);\n\
                let s = ProbeScale::of(v, 0.5);\n\
                let m = median(v); // crate::analysis::counters::of(b) trailing\n\
                let scope = fit::Scope::Every;\n\
                // crate::analysis::findings::of(a) in a comment\n\
                #[cfg(test)]\nmod tests { fn t() { crate::analysis::fit::fit(&p); } }\n";
    assert_eq!(
        analysis_calls(text, (&functions, &types)),
        [
            "ProbeScale::of",
            "audits::cost_share",
            "counters::of",
            "fit::fit",
            "median"
        ]
    );
}

#[test]
fn the_report_reads_what_the_analysis_filled_and_calls_only_its_rules() {
    let (functions, types) = analysis_items();
    for needed in ["load", "median", "agreement::bias", "counters::of"] {
        assert!(
            functions.iter().any(|f| f == needed),
            "{needed}: {functions:?}"
        );
    }
    for (path, text) in all() {
        if !path.starts_with("src/report/") {
            continue;
        }
        for call in analysis_calls(&text, (&functions, &types)) {
            assert!(
                REPORT_MAY_CALL.contains(&call.as_str()),
                "{path} calls the analysis's `{call}` while it words the report: have `Analysis::of` fill a field with it, and read that"
            );
        }
    }
}
