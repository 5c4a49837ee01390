//! The runner's findings in every committed report, recomputed apart from the code that
//! wrote them: from the run's `summary.csv`, samples (zstd or gzip), `peers.csv`, `run.json`,
//! `cells.jsonl` and `experiment.toml`, and the report's trust and cells tables. Each number
//! a finding states must be what the data gives, to the digits it shows, and each claim
//! (the largest, the most, how many) must hold over the trusted cells.

mod common;
use regex::{Captures, Regex};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

const TIME: &str = r"-?[\d.]+ (?:ns|µs|ms|s)";

/// A committed run, read back as plain data.
struct Run {
    dir: PathBuf,
    report: String,
    /// Each cell's headline median (steady, else first launches), ns; and whether its
    /// headline is its first launches.
    medians: HashMap<String, (f64, bool)>,
    /// The trust table: cell -> (verdict, as expected, why).
    untrusted: HashMap<String, (String, bool, String)>,
    exp: toml::Value,
    meta: serde_json::Value,
}

impl Run {
    fn load(dir: &Path) -> Run {
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        let mut medians = HashMap::new();
        let mut summary = csv::Reader::from_path(dir.join("summary.csv")).unwrap();
        for row in summary.records() {
            let row = row.unwrap();
            let (id, phase, median) = (&row[0], &row[1], row[4].parse::<f64>().unwrap());
            if phase == "steady" || !medians.contains_key(id) {
                medians.insert(id.to_string(), (median, phase == "first"));
            }
        }
        let mut untrusted = HashMap::new();
        for line in report.lines().take_while(|l| !l.starts_with("## ")) {
            let cols: Vec<&str> = line.split(" | ").collect();
            if line.starts_with("| ") && cols.len() >= 4 && cols[1] != "verdict" && cols[1] != "---"
            {
                let why = cols[3..].join(" | ");
                let why = why.trim_end_matches(" |").replace("\\|", "|");
                let expected = cols[2] == "yes";
                untrusted.insert(
                    cols[0][2..].to_string(),
                    (cols[1].to_string(), expected, why),
                );
            }
        }
        let exp = std::fs::read_to_string(dir.join("experiment.toml")).unwrap();
        let meta = std::fs::read_to_string(dir.join("run.json")).unwrap();
        Run {
            dir: dir.to_path_buf(),
            report,
            medians,
            untrusted,
            exp: toml::from_str(&exp).unwrap(),
            meta: serde_json::from_str(&meta).unwrap(),
        }
    }

    /// The generated findings: those under "Computed by the runner", or every bullet of
    /// the section where no person wrote any.
    fn findings(&self) -> Vec<String> {
        let section = self.report.split("\n## Findings\n").nth(1).unwrap();
        let section = section.split("\n## ").next().unwrap();
        let generated = section
            .split("### Computed by the runner\n")
            .last()
            .unwrap();
        // A long finding is wrapped: its further lines are indented under the bullet.
        let mut bullets: Vec<String> = Vec::new();
        for line in generated.lines() {
            match (
                line.strip_prefix("- "),
                line.strip_prefix("  "),
                bullets.last_mut(),
            ) {
                (Some(first), _, _) => bullets.push(first.to_string()),
                (None, Some(more), Some(last)) => {
                    last.push(' ');
                    last.push_str(more);
                }
                _ => {}
            }
        }
        bullets
    }

    /// The trusted cells' medians: every measured cell with a headline, less those the
    /// trust table lists.
    fn trusted(&self) -> impl Iterator<Item = (&str, f64)> {
        (self.medians.iter())
            .filter(|(id, _)| !id.starts_with("floor/") && !self.untrusted.contains_key(*id))
            .map(|(id, (m, _))| (id.as_str(), *m))
    }

    /// A raw file of the run as text, whichever way it is stored: zstd frames (`.zst`,
    /// runs since zstd), gzip members (`.gz`) or plain.
    fn raw(&self, name: &str) -> String {
        let path = |ext: &str| self.dir.join(format!("{name}{ext}"));
        let mut text = String::new();
        if let Ok(file) = std::fs::File::open(path(".zst")) {
            zstd::stream::read::Decoder::new(file)
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
        } else if let Ok(file) = std::fs::File::open(path(".gz")) {
            flate2::read::MultiGzDecoder::new(file)
                .read_to_string(&mut text)
                .unwrap();
        } else {
            text = std::fs::read_to_string(path("")).unwrap();
        }
        text
    }

    fn median(&self, id: &str) -> f64 {
        assert!(!self.untrusted.contains_key(id), "{id} is not trusted");
        self.medians.get(id).unwrap_or_else(|| panic!("no {id}")).0
    }

    /// Variant `v` of the experiment flushes L2 (its own `cache`, else `[defaults]`').
    fn flushes(&self, v: &str) -> bool {
        let variants = self.exp["variant"].as_array().unwrap();
        let table = variants
            .iter()
            .find(|t| t["name"].as_str() == Some(v))
            .unwrap();
        let cache = table
            .get("cache")
            .or_else(|| self.exp.get("defaults")?.get("cache"));
        cache.and_then(|c| c.as_str()) == Some("flush")
    }

    /// Each cell's headline samples.
    fn samples(&self) -> HashMap<String, Vec<f64>> {
        let text = self.raw("samples.csv");
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let heads = reader.headers().unwrap().clone();
        let at = |name: &str| heads.iter().position(|h| h == name).unwrap();
        let (cell, phase, time) = (at("cell"), at("phase"), at("time_ns"));
        let mut out: HashMap<String, Vec<f64>> = HashMap::new();
        for row in reader.records() {
            let row = row.unwrap();
            let first = self.medians.get(&row[cell]).is_some_and(|m| m.1);
            if (&row[phase] == "first") == first {
                out.entry(row[cell].to_string())
                    .or_default()
                    .push(row[time].parse().unwrap());
            }
        }
        out
    }
}

/// A cell's id: `kernel/point/variant`, or `kernel/variant` without a sweep.
fn id(kernel: &str, point: Option<&str>, variant: &str) -> String {
    match point {
        Some(p) => format!("{kernel}/{p}/{variant}"),
        None => format!("{kernel}/{variant}"),
    }
}

/// A cell id's parts: (kernel, point, variant).
fn parts(id: &str) -> (&str, &str, &str) {
    let (kernel, rest) = id.split_once('/').unwrap();
    match rest.rsplit_once('/') {
        Some((point, variant)) => (kernel, point, variant),
        None => (kernel, "", rest),
    }
}

/// The value a printed number stands for and half its last digit.
fn printed(text: &str) -> (f64, f64) {
    let text = text.trim_start_matches('+');
    let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
    (
        text.parse().unwrap(),
        0.5 * 10f64.powi(-(decimals as i32)) + 1e-9,
    )
}

/// `225.2 µs` in ns, and half its last digit.
fn time(text: &str) -> (f64, f64) {
    let (number, unit) = text.split_once(' ').unwrap();
    let scale = match unit {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        u => panic!("unit {u}"),
    };
    let (v, tol) = printed(number);
    (v * scale, tol * scale)
}

fn assert_time(text: &str, ns: f64, what: &str) {
    let (v, tol) = time(text);
    assert!((v - ns).abs() <= tol, "{what}: {text} is not {ns} ns");
}

fn assert_number(text: &str, value: f64, what: &str) {
    let (v, tol) = printed(text);
    assert!((v - value).abs() <= tol, "{what}: {text} is not {value}");
}

/// A percentage `+4.6%` against a fraction.
fn assert_pct(text: &str, fraction: f64, what: &str) {
    assert_number(text.trim_end_matches('%'), fraction * 100.0, what);
}

fn re(pattern: &str) -> Regex {
    Regex::new(&pattern.replace("TIME", TIME)).unwrap()
}

/// A kind of finding's check, given its sentence's parts.
type Rule = fn(&Run, &Captures);

/// A tuned kernel's trusted cell: the tuned parameter's value, its median and its id.
type Tuned<'a> = (String, f64, &'a str);

/// Checks one finding against the run; false where it is of no known kind.
fn check(run: &Run, f: &str) -> bool {
    let rules: [(&str, Rule); 19] = [
        (
            r"^Hardware counters (?:confirm the declared `bytes` of all (?P<all>\d+) checked cells?: (?P<agree>\d+) agree with the bytes DRAM moved \(within 10%\) and the caches served (?P<cached>\d+)|contradict the declared `bytes` of (?P<m>\d+) of (?P<n>\d+) checked cells? \(⚠ in the counters table\); at `(?P<id>[^`]+)` (?P<how>no cache level was asked for them|DRAM moved more than declared): (?P<decl>[\d.]+) MB declared, L1 or L2 at most (?P<cache>[\d.]+) MB \((?P<cr>[\d.]+)x\), DRAM (?P<dram>[\d.]+) MB \((?P<dr>[\d.]+)x\))\.$",
            bytes,
        ),
        (
            r"^`(?P<k>[^`]+)`(?:, written to be caught,)? (?P<w>failed|suspect|impossible|passed) at (?:its (?P<one>one) cell|all (?P<all>\d+) cells?|(?P<c>\d+) of its (?P<n>\d+) cells?) \((?P<cells>[^()]*)\): (?P<why>.+)\.$",
            untrusted,
        ),
        (
            r"^(?:All (?P<all>\d+)|(?P<c>\d+) of the (?P<n>\d+)) cells of the (?P<k>\d+) kernels? written to be caught \(`expect = .caught.`\) were caught: (?P<by>.+)\.$",
            caught,
        ),
        (
            r"^`(?P<k>[^`]+)` (?:is |runs as fast as |against )(?P<head>.*?)`(?P<b>[^`]+)`(?P<tail>.*?); (?:at (?P<p>[^()]+) \((?P<v>[^)]+)\)|under (?P<v2>\S+)): (?P<t1>TIME) against (?P<t2>TIME), (?P<r>[\d.]+)x (?P<dir>faster|slower)(?: \(95% interval (?P<lo>[\d.]+)x to (?P<hi>[\d.]+)x(?P<one>: it holds 1x)?\))?\.$",
            speedup,
        ),
        (
            r"^`(?P<k>[^`]+)` reaches (?P<rate>[\d.]+) (?P<ru>GB/s|TFLOP/s), (?P<share>[\d.]+)% of the (?P<peak>[\d.]+) (?:GB/s|TFLOP/s) (?P<name>DRAM|host link|FP32|FP64|FP16 \(without tensor cores\)|BF16 \(without tensor cores\)|(?:FP16|BF16|TF32|FP8 E4M3|FP8 E5M2) tensor-core \(dense\)|INT8 tensor-core \(dense, operations\)|[^()`]+ \([^()`]+\)) peak, (?:at (?P<p>[^()]+) \((?P<v>[^)]+)\)|under (?P<v2>[^:]+)): (?P<amount>[\d.]+) (?P<prefix>[kMGT]?)(?:B|FLOP) in (?P<t>TIME)(?:; at no trusted point must all its bytes cross DRAM .*)?\.$",
            peak,
        ),
        (
            r"^The fastest `(?P<param>[^`]+)` for `(?P<k>[^`]+)` is (?P<val>\S+), (?:under its one variant|under (?P<w1>\d+) of (?P<g1>\d+) variants|in (?P<w2>\d+) of (?P<g2>\d+) groups \(a variant at a value of the other parameters\)); it wins by most at (?P<p>[^()]+) \((?P<v>[^)]+)\): (?P<t1>TIME) against (?P<t2>TIME) with `[^`]+` = (?P<slow>\S+) \((?P<r>[\d.]+)x\)\.$",
            best,
        ),
        (
            r"^`(?P<param>[^`]+)` barely matters to `(?P<k>[^`]+)`: its fastest and slowest value are within (?P<pct>[\d.]+)% of each other (?:under every variant|in every group), at most (?P<r>[\d.]+)x apart\.$",
            barely,
        ),
        (
            r"^`(?P<a>[^`]+)` (?:reads (?P<range>\S+(?: to \S+)?) against `(?P<b>[^`]+)`|and `(?P<b2>[^`]+)` agree within 2%) (?:over (?P<n>\d+) cells(?:: (?P<range2>\S+(?: to \S+)?))?; the largest is for|for) `(?P<k>[^`]+)`(?: at (?P<p>[^:]+))?: (?:(?P<range3>\S+), )?(?P<t1>TIME) against (?P<t2>TIME)(?: \(`[^`]+`: .*?\))?(?:; flushed reads faster than hot at (?P<cf>\d+) cells?(?P<why>: .*)?)?\.$",
            difference,
        ),
        (
            r"^`(?P<m>[^`]+)` is (?P<io>within|outside) max\(1%, 0\.5 µs\) of `(?P<r>[^`]+)` at (?:all (?P<all>\d+) cells?|(?P<c>\d+) of (?P<n>\d+) cells): from (?P<lo>[+-]TIME) \((?P<lop>[+-][\d.]+%)\) for `(?P<k1>[^`]+)`(?: at (?P<p1>.+?))? to (?P<hi>[+-]TIME) \((?P<hip>[+-][\d.]+%)\) for `(?P<k2>[^`]+)`(?: at (?P<p2>.+?))?\.$",
            bias,
        ),
        (
            r"^(?P<x>\d+) of (?P<y>\d+) methods are within max\(1%, 0\.5 µs\) of their reference at every cell: (?P<list>.+)\.$",
            bias_within,
        ),
        (
            r"^`(?P<v>[^`]+)` (?:agrees with|differs from) the peer `(?P<peer>[^`]+)` \(.*\) (?:within|beyond) max\((?P<tp>\d+)%, (?P<tu>\d+) µs\) at (?:all (?P<all>\d+) points?|(?P<a>\d+) of (?P<n>\d+) points?); the largest difference is (?P<pct>[+-][\d.]+%), for `(?P<k>[^`]+)`(?: at (?P<p>[^:]+))?: (?P<t1>TIME) against (?P<t2>TIME)\.$",
            peer,
        ),
        (
            r"^`(?P<k>[^`]+)` takes (?P<r>[\d.]+)x (?P<dir>less|more) energy a launch than `(?P<b>[^`]+)`(?: over (?P<n>\d+) cells \((?P<lo>[\d.]+)x to (?P<hi>[\d.]+)x its baseline's\))?; at (?P<p>[^()]+) \((?P<v>[^)]+)\): (?P<j1>[\d.]+) mJ against (?P<j2>[\d.]+) mJ, at (?P<w1>[\d.]+) W against (?P<w2>[\d.]+) W \(the board's, by NVML's counter, ±(?P<u>\d+)%\)\.$",
            energy,
        ),
        (
            r"^(?P<n>\d+) of (?P<of>\d+) trusted cells are flagged \((?P<list>[^()]*)\); `(?P<id>[^`]+)`: (?P<flags>.+)\.$",
            flagged,
        ),
        (
            r#"^(?P<n>\d+) of (?P<of>\d+) trusted cells stopped at the per-cell budget before their sample count \((?P<list>[^()]*)\); `(?P<id>[^`]+)`: (?P<why>.+) \(`budget = "none"` takes every sample\)\.$"#,
            stopped,
        ),
        (
            r"^`(?P<k>[^`]+)`(?: at (?P<p>\S+))? reads (?P<t1>TIME) (?:at (?P<p1>.+?) to (?P<t2>TIME) at (?P<p2>.+?) under `(?P<v>[^`]+)` over (?P<n>\d+) cells|under `(?P<v1>[^`]+)` to (?P<t4>TIME) under `(?P<v4>[^`]+)`|at (?P<p5>\S+) \((?P<v5>[^)]+)\)|under (?P<v6>\S+))(?:; its variants read(?: at \S+)? (?P<t3a>TIME) \(`(?P<v3a>[^`]+)`\) to (?P<t3b>TIME) \(`(?P<v3b>[^`]+)`\))?\.$",
            range,
        ),
        (
            r"^The audits took more than 5% of the time of (?P<n>\d+) of (?P<of>\d+) audited cells, the most (?P<share>[\d.]+%) of `(?P<k>[^`]+)`(?: at (?P<p>[^()]+))? \((?P<v>[^)]+)\): (?P<cost>TIME) of (?P<wall>TIME)(?:, (?P<checks>TIME) of it checking audited regions against (?:its Python reference(?: on the host)?|its reference kernel|the reference) \(.*\)|, (?P<regions>TIME) of it the first round's regions, (?:which are|whose floor is) never left out \(more samples spread them\)|, (?P<staging>TIME) of it staging the audit's draws|(?P<weaker>: the weaker audit's one launch after the samples, and its check))?\.$",
            audit_cost,
        ),
        (
            r"^In (?P<n>\d+) of (?P<of>\d+) audited cells a kernel could skip over a quarter of its work where timed and pass, up to (?P<limit>[\d.]+%) at `(?P<k>[^`]+)`(?: at (?P<p>[^()]+))? \((?P<v>[^)]+)\)(?:\. (?P<idle>\d+) (?:is a batch|are batches) on an idle queue: .*|: .*)\.$",
            wide_limits,
        ),
        (
            r"^In (?P<n>\d+) of (?P<of>\d+) trusted cells the timed launches split into two behaviors: `(?P<k>[^`]+)`(?: at (?P<p>[^()]+) \((?P<v>[^)]+)\)| under (?P<v2>\S+)) spans an interquartile range of (?P<iqr>TIME) about its median of (?P<m>TIME), its tightest half (?P<h>TIME)(?:; the audit's limit there is (?P<limit>[\d.]+%))?\. Its median reads one of them\.$",
            split,
        ),
        (
            r"^(?P<t>\d+) of (?P<n>\d+) cells trusted: no finding to draw\.$",
            nothing,
        ),
    ];
    for (pattern, rule) in rules {
        if let Some(c) = re(pattern).captures(f) {
            rule(run, &c);
            return true;
        }
    }
    false
}

/// A cell's energy over its steady samples, its runs together: joules, seconds, launches.
fn energy_of(run: &Run, id: &str) -> (f64, f64, f64) {
    let text = common::stored_text(&run.dir, "cells.jsonl");
    let mut sum = (0.0, 0.0, 0.0);
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        if r["id"] == id {
            let e = &r["energy"];
            sum.0 += e["joules"].as_f64().unwrap();
            sum.1 += e["seconds"].as_f64().unwrap();
            sum.2 += e["launches"].as_f64().unwrap();
        }
    }
    sum
}

fn energy(run: &Run, c: &Captures) {
    let (k, b, p, v) = (&c["k"], &c["b"], c["p"].trim(), &c["v"]);
    let (mine, theirs) = (
        energy_of(run, &format!("{k}/{p}/{v}")),
        energy_of(run, &format!("{b}/{p}/{v}")),
    );
    let per = |e: (f64, f64, f64)| e.0 / e.2;
    let near = |shown: &str, value: f64, what: &str| {
        let shown: f64 = shown.parse().unwrap();
        assert!(
            (shown - value).abs() <= 5e-4 * value.abs(),
            "{k} against {b}: {what} {shown} is not {value}"
        );
    };
    near(&c["j1"], per(mine) * 1e3, "its mJ a launch");
    near(&c["j2"], per(theirs) * 1e3, "the baseline's mJ a launch");
    near(&c["w1"], mine.0 / mine.1, "its W");
    near(&c["w2"], theirs.0 / theirs.1, "the baseline's W");
    let ratio = per(theirs) / per(mine);
    let shown = match &c["dir"] {
        "less" => ratio,
        _ => 1.0 / ratio,
    };
    assert!(
        (c["r"].parse::<f64>().unwrap() - shown).abs() <= 0.005 + 1e-9,
        "{k}: ratio"
    );
    let counter = 100.0 * (0.1 / mine.1).max(0.1 / theirs.1);
    assert_eq!(
        c["u"].parse::<f64>().unwrap(),
        counter.round(),
        "{k}: the counter's share"
    );
}

fn untrusted(run: &Run, c: &Captures) {
    let (k, w) = (&c["k"], &c["w"]);
    let listed: Vec<&str> = c["cells"].split(", ").filter(|x| *x != "…").collect();
    let rows: Vec<&String> = (run.untrusted.iter())
        .filter(|(id, (v, expected, _))| {
            parts(id).0 == k && !expected && (v == w || (w == "passed" && v == "ok"))
        })
        .map(|(id, _)| id)
        .collect();
    let of = (run.medians.keys().chain(run.untrusted.keys()))
        .filter(|id| parts(id).0 == k)
        .collect::<HashSet<_>>()
        .len();
    let (n, of_printed) = match (c.name("one"), c.name("all")) {
        (Some(_), _) => ("1", "1"),
        (_, Some(all)) => (all.as_str(), all.as_str()),
        _ => (&c["c"], &c["n"]),
    };
    assert_eq!(n.parse::<usize>().unwrap(), rows.len(), "{k} {w}");
    assert_eq!(of_printed.parse::<usize>().unwrap(), of, "{k}'s cells");
    let first = format!("{k}/{}", listed[0]);
    // The report wraps prose, so compare the words.
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let why = words(c["why"].trim_end_matches('…'));
    let stored = words(&run.untrusted[&first].2);
    // A cell written to be caught that passed gives its reason after the word, as the
    // table does.
    let stored = stored.strip_prefix("passed: ").unwrap_or(&stored);
    assert!(stored.starts_with(&why), "{first}: {why}");
}

fn caught(run: &Run, c: &Captures) {
    let kernels: Vec<&str> = (run.exp["kernel"].as_array().unwrap().iter())
        .filter(|k| k.get("expect").and_then(|e| e.as_str()) == Some("caught"))
        .filter_map(|k| k["name"].as_str())
        .collect();
    assert_eq!(c["k"].parse::<usize>().unwrap(), kernels.len());
    let theirs = |id: &&String| kernels.contains(&parts(id).0);
    let cells: HashSet<&String> = run
        .medians
        .keys()
        .chain(run.untrusted.keys())
        .filter(theirs)
        .collect();
    let total = c.name("all").or(c.name("n")).unwrap().as_str();
    assert_eq!(total.parse::<usize>().unwrap(), cells.len());
    for by in c["by"].split(", ") {
        let (n, word) = by.split_once(' ').unwrap();
        let found = (run.untrusted.iter())
            .filter(|(id, (v, expected, _))| theirs(id) && *expected && v == word)
            .count();
        assert_eq!(n.parse::<usize>().unwrap(), found, "{word}");
    }
}

fn speedup(run: &Run, c: &Captures) {
    let (k, b) = (&c["k"], &c["b"]);
    // Each trusted cell of k against b's cell of the same variant at its point (b may
    // lack k's own axes).
    let base = |point: &str, v: &str| {
        let theirs = run
            .trusted()
            .map(|(id, _)| id)
            .filter(|id| parts(id).0 == b && parts(id).2 == v);
        let within = |q: &str| q.split(' ').all(|kv| point.split(' ').any(|x| x == kv));
        theirs
            .filter(|id| within(parts(id).1))
            .max_by_key(|id| parts(id).1.len())
            .map(str::to_string)
    };
    let ratios: Vec<(String, f64)> = (run.trusted())
        .filter(|(id, _)| parts(id).0 == k)
        .filter_map(|(id, ns)| {
            let (_, p, v) = parts(id);
            Some((id.to_string(), run.median(&base(p, v)?) / ns))
        })
        .collect();
    let lo = ratios.iter().map(|r| r.1).fold(f64::MAX, f64::min);
    let hi = ratios.iter().map(|r| r.1).fold(f64::MIN, f64::max);
    let count = |f: &dyn Fn(f64) -> bool| ratios.iter().filter(|r| f(r.1)).count();
    let (faster, slower) = (count(&|r| r > 1.02), count(&|r| r < 0.98));
    let (head, tail) = (&c["head"], &c["tail"]);
    let numbers: Vec<f64> = (re(r"(\d+\.\d\d)x").captures_iter(&format!("{head}{tail}")))
        .map(|m| m[1].parse().unwrap())
        .collect();
    let close = |shown: f64, value: f64, what: &str| {
        assert!(
            (shown - value).abs() <= 0.005 + 1e-9,
            "{k} against {b}: {what} {shown} is not {value}"
        );
    };
    let alike = ratios.len() - faster - slower;
    if let Some(mixed) = tail.strip_prefix(": ") {
        // Faster, slower and alike cells, each where there are some.
        let count = |pattern: &str| {
            re(pattern).captures(mixed).map(|m| {
                (
                    m[1].parse::<usize>().unwrap(),
                    m.get(2).map(|x| x.as_str().parse::<f64>().unwrap()),
                )
            })
        };
        let f = count(r"faster at (\d+) of \d+ cells \(up to ([\d.]+)x\)");
        let s = count(r"slower at (\d+)(?: of \d+ cells)? \(up to ([\d.]+)x\)");
        let a = count(r"within 2% at (\d+)$");
        assert_eq!(
            (
                f.map_or(0, |f| f.0),
                s.map_or(0, |s| s.0),
                a.map_or(0, |a| a.0)
            ),
            (faster, slower, alike)
        );
        if let Some((_, Some(up))) = f {
            close(up, hi, "faster up to");
        }
        if let Some((_, Some(up))) = s {
            close(up, 1.0 / lo, "slower up to");
        }
    } else if tail.starts_with(", within 2%:") {
        assert_eq!(alike, ratios.len());
        close(numbers[0], lo, "lowest");
        close(numbers[1], hi, "highest");
    } else if let Some(n) = re(r"over (\d+) cells").captures(tail) {
        assert_eq!(
            n[1].parse::<usize>().unwrap(),
            ratios.len(),
            "{k} against {b}"
        );
        if head.contains("slower") {
            assert_eq!(slower, ratios.len());
            close(numbers[0], 1.0 / hi, "least slower");
            close(numbers[1], 1.0 / lo, "most slower");
        } else {
            assert_eq!(faster, ratios.len());
            close(numbers[0], lo, "least faster");
            close(numbers[1], hi, "most faster");
        }
    } else {
        assert_eq!(ratios.len(), 1);
    }
    // The detail: the cell of the largest effect, its medians, its interval within what
    // any medians of its samples can give.
    let v = c.name("v").or(c.name("v2")).unwrap().as_str();
    let cell = id(k, c.name("p").map(|p| p.as_str()), v);
    let other = base(parts(&cell).1, v).unwrap();
    let (kn, bn) = (run.median(&cell), run.median(&other));
    assert_time(&c["t1"], kn, &cell);
    assert_time(&c["t2"], bn, &other);
    let strongest = ratios.iter().map(|r| r.1.ln().abs()).fold(0.0, f64::max);
    assert!(
        ((bn / kn).ln().abs() - strongest).abs() < 1e-12,
        "{cell} is not the largest effect"
    );
    let slower = &c["dir"] == "slower";
    assert_number(&c["r"], if slower { kn / bn } else { bn / kn }, "speed-up");
    if let (Some(l), Some(h)) = (c.name("lo"), c.name("hi")) {
        let samples = run.samples();
        let (ks, bs) = (&samples[&cell], &samples[&other]);
        let min = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min);
        let max = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
        let (rmin, rmax) = (min(bs) / max(ks), max(bs) / min(ks));
        let (rmin, rmax) = if slower {
            (1.0 / rmax, 1.0 / rmin)
        } else {
            (rmin, rmax)
        };
        let (l, h) = (printed(l.as_str()).0, printed(h.as_str()).0);
        assert!(
            rmin - 0.005 <= l && l <= h && h <= rmax + 0.005,
            "{cell}: [{l}, {h}] outside [{rmin}, {rmax}]"
        );
        // An interval that holds 1 says so; one that does not may still print an end of
        // 1.00 (1.002 rounded).
        match c.name("one") {
            Some(_) => assert!(l <= 1.0 && 1.0 <= h, "{cell}: [{l}, {h}]"),
            None => assert!(!(l < 1.0 && 1.0 < h), "{cell}: [{l}, {h}]"),
        }
    }
}

/// The device's peak the finding names, from `run.json`'s facts (compute capability 9.0's
/// lanes), in GB/s or TFLOP/s; None for the host link.
fn device_peak(run: &Run, name: &str) -> Option<f64> {
    let d = &run.meta["device"];
    let f = |key: &str| d[key].as_f64().unwrap();
    assert_eq!(d["compute_capability"], "9.0", "the test knows 9.0's lanes");
    let lanes = |n: f64| f("sm_count") * f("sm_clock_max_mhz") * 1e6 * n * 2.0 / 1e12;
    // A peak a kernel states first: its name may begin as a built-in type's does.
    if let Some(ops) = declared(run, name) {
        return Some(lanes(ops / 2.0));
    }
    match name {
        "DRAM" => Some(2.0 * f("mem_clock_max_mhz") * 1e6 * f("mem_bus_width_bits") / 8.0 / 1e9),
        "FP32" => Some(lanes(128.0)),
        "FP64" => Some(lanes(64.0)),
        // The tensor cores' dense peaks: the H100 SXM data sheet's 989 TFLOP/s FP16 (495
        // TF32, 1979 FP8 and INT8) on 132 SMs at 1830 MHz, per SM per clock.
        n if n.starts_with("FP16 tensor") || n.starts_with("BF16 tensor") => Some(lanes(2048.0)),
        n if n.starts_with("TF32 tensor") => Some(lanes(1024.0)),
        n if n.starts_with("FP8") || n.starts_with("INT8") => Some(lanes(4096.0)),
        n if n.starts_with("FP16") || n.starts_with("BF16") => Some(lanes(256.0)),
        _ => None,
    }
}

/// Operations per SM per clock of the peak named `name` that a kernel of the run states
/// (`peak = { per_sm_clock, name }`).
fn declared(run: &Run, name: &str) -> Option<f64> {
    let kernels = run.exp.get("kernel")?.as_array()?;
    kernels.iter().find_map(|k| {
        let peak = k.get("peak")?;
        (peak.get("name")?.as_str()?.trim() == name).then_some(())?;
        let per = peak.get("per_sm_clock")?;
        per.as_float().or(per.as_integer().map(|i| i as f64))
    })
}

fn peak(run: &Run, c: &Captures) {
    let v = c.name("v").or(c.name("v2")).unwrap().as_str();
    let cell = id(&c["k"], c.name("p").map(|p| p.as_str()), v);
    let ns = run.median(&cell);
    assert_time(&c["t"], ns, &cell);
    let scale = match &c["prefix"] {
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => 1.0,
    };
    let (amount, tol) = printed(&c["amount"]);
    let unit = if &c["ru"] == "GB/s" { 1e9 } else { 1e12 };
    let rate = amount * scale / (ns * 1e-9) / unit;
    let (shown, _) = printed(&c["rate"]);
    assert!(
        (shown - rate).abs() <= rate * (tol / amount + 1e-3),
        "{cell}: {shown} against {rate}"
    );
    let (peak, _) = printed(&c["peak"]);
    if let Some(device) = device_peak(run, &c["name"]) {
        assert_number(&c["peak"], device, "peak");
    }
    // The share of the rate shown, to its digits and the rounding of the amount and peak.
    let (share, tol) = printed(&c["share"]);
    let expect = rate / peak * 100.0;
    assert!(
        (share - expect).abs() <= tol + expect * 2e-3,
        "{cell}: {share}% is not {expect}%"
    );
}

/// A kernel's trusted cells grouped by variant and the other parameters than `param`:
/// each group's (value, ns).
fn groups<'a>(run: &'a Run, k: &str, param: &str) -> Vec<Vec<Tuned<'a>>> {
    let mut groups: HashMap<(String, String), Vec<Tuned>> = HashMap::new();
    for (id, ns) in run.trusted().filter(|(id, _)| parts(id).0 == k) {
        let (_, point, v) = parts(id);
        let (mine, others): (Vec<&str>, Vec<&str>) = point
            .split(' ')
            .partition(|kv| kv.starts_with(&format!("{param}=")));
        let value = mine[0].split_once('=').unwrap().1.to_string();
        groups
            .entry((v.to_string(), others.join(" ")))
            .or_default()
            .push((value, ns, id));
    }
    groups.into_values().filter(|g| g.len() > 1).collect()
}

fn best(run: &Run, c: &Captures) {
    let all = groups(run, &c["k"], &c["param"]);
    // A value wins a group where its median is the group's least (two may tie).
    let least = |g: &[Tuned]| g.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
    let wins_of = |v: &str| {
        (all.iter())
            .filter(|g| g.iter().any(|t| t.0 == v && t.1 == least(g)))
            .count()
    };
    let wins = wins_of(&c["val"]);
    let most = (all.iter().flatten()).map(|t| wins_of(&t.0)).max().unwrap();
    assert_eq!(wins, most, "{} wins most", &c["val"]);
    if let Some(w) = c.name("w1").or(c.name("w2")) {
        assert_eq!(w.as_str().parse::<usize>().unwrap(), wins);
        assert_eq!(
            c.name("g1")
                .or(c.name("g2"))
                .unwrap()
                .as_str()
                .parse::<usize>()
                .unwrap(),
            all.len()
        );
    }
    let cell = id(&c["k"], Some(&c["p"]), &c["v"]);
    let slow = cell.replace(
        &format!("{}={}", &c["param"], &c["val"]),
        &format!("{}={}", &c["param"], &c["slow"]),
    );
    assert_time(&c["t1"], run.median(&cell), &cell);
    assert_time(&c["t2"], run.median(&slow), &slow);
    assert_number(&c["r"], run.median(&slow) / run.median(&cell), "margin");
}

fn barely(run: &Run, c: &Captures) {
    let spread = (groups(run, &c["k"], &c["param"]).iter())
        .map(|g| {
            let ns: Vec<f64> = g.iter().map(|x| x.1).collect();
            ns.iter().copied().fold(f64::MIN, f64::max)
                / ns.iter().copied().fold(f64::MAX, f64::min)
        })
        .fold(1.0, f64::max);
    assert!(spread <= 1.02);
    assert_number(&c["r"], spread, "spread");
    assert_number(&c["pct"], (spread - 1.0) * 100.0, "spread %");
}

fn difference(run: &Run, c: &Captures) {
    let a = &c["a"];
    let b = c.name("b").or(c.name("b2")).unwrap().as_str();
    let diffs: Vec<(String, f64)> = (run.trusted())
        .filter(|(id, _)| parts(id).2 == a)
        .filter_map(|(id, ns)| {
            let (k, p, _) = parts(id);
            let other = id_of(k, p, b);
            let theirs = run.trusted().find(|(x, _)| *x == other)?.1;
            Some((id.to_string(), (ns - theirs) / theirs))
        })
        .collect();
    let range = c
        .name("range")
        .or(c.name("range2"))
        .or(c.name("range3"))
        .unwrap()
        .as_str();
    let ends: Vec<&str> = range.split(" to ").collect();
    let lo = diffs.iter().map(|d| d.1).fold(f64::MAX, f64::min);
    let hi = diffs.iter().map(|d| d.1).fold(f64::MIN, f64::max);
    assert_eq!(
        c.name("n").map_or(1, |n| n.as_str().parse().unwrap()),
        diffs.len(),
        "{a} against {b}"
    );
    assert_pct(ends[0], if ends.len() == 2 { lo } else { hi }, "lowest");
    assert_pct(ends[ends.len() - 1], hi, "highest");
    let cell = id(&c["k"], c.name("p").map(|p| p.as_str()), a);
    let largest = diffs.iter().map(|d| d.1.abs()).fold(0.0, f64::max);
    let this = diffs.iter().find(|d| d.0 == cell).unwrap().1;
    assert!(
        (this.abs() - largest).abs() < 1e-12,
        "{cell} is not the largest"
    );
    assert_time(&c["t1"], run.median(&cell), &cell);
    assert_time(&c["t2"], run.median(&cell_as(&cell, b)), b);
    if let Some(n) = c.name("cf") {
        let cold_is_a = run.flushes(a);
        let faster = (diffs.iter())
            .filter(|d| {
                if cold_is_a {
                    d.1 < -0.02
                } else {
                    d.1 > 1.0 / 0.98 - 1.0
                }
            })
            .count();
        assert_eq!(
            n.as_str().parse::<usize>().unwrap(),
            faster,
            "flushed faster"
        );
    }
}

fn id_of(k: &str, p: &str, v: &str) -> String {
    id(k, (!p.is_empty()).then_some(p), v)
}

fn cell_as(cell: &str, variant: &str) -> String {
    let (k, p, _) = parts(cell);
    id_of(k, p, variant)
}

/// Each (kernel and point, method) cell's bias against its reference: (cell, ns, fraction).
fn biases(run: &Run, m: &str, r: &str) -> Vec<(String, f64, f64)> {
    (run.trusted())
        .filter(|(id, _)| parts(id).2 == m)
        .filter_map(|(id, ns)| {
            let other = cell_as(id, r);
            let reference = run.trusted().find(|(x, _)| *x == other)?.1;
            Some((id.to_string(), ns - reference, (ns - reference) / reference))
        })
        .collect()
}

fn within(ns: f64, f: f64) -> bool {
    ns.abs() <= 500.0 || f.abs() <= 0.01
}

fn bias(run: &Run, c: &Captures) {
    let all = biases(run, &c["m"], &c["r"]);
    let inside = all.iter().filter(|b| within(b.1, b.2)).count();
    let (n, stated) = match c.name("all") {
        Some(n) => (
            n.as_str().parse::<usize>().unwrap(),
            if &c["io"] == "within" { all.len() } else { 0 },
        ),
        None => (c["n"].parse().unwrap(), c["c"].parse().unwrap()),
    };
    assert_eq!(n, all.len());
    let count = if &c["io"] == "within" {
        inside
    } else {
        all.len() - inside
    };
    assert_eq!(
        stated,
        if c.name("all").is_some() {
            inside
        } else {
            count
        }
    );
    let lo = all.iter().min_by(|x, y| x.1.total_cmp(&y.1)).unwrap();
    let hi = all.iter().max_by(|x, y| x.1.total_cmp(&y.1)).unwrap();
    for (end, pct, k, p, b) in [("lo", "lop", "k1", "p1", lo), ("hi", "hip", "k2", "p2", hi)] {
        assert_eq!(
            id(&c[k], c.name(p).map(|p| p.as_str()), &c["m"]),
            b.0,
            "{end}"
        );
        assert_time(c[end].trim_start_matches('+'), b.1, end);
        assert_pct(&c[pct], b.2, pct);
    }
}

fn bias_within(run: &Run, c: &Captures) {
    let report = run.exp["report"]["bias"].as_array().unwrap();
    let pairs: Vec<(&str, &str)> = (report.iter())
        .map(|p| (p[0].as_str().unwrap(), p[1].as_str().unwrap()))
        .filter(|(m, r)| !biases(run, m, r).is_empty())
        .collect();
    assert_eq!(c["y"].parse::<usize>().unwrap(), pairs.len());
    let everywhere = (pairs.iter())
        .filter(|(m, r)| biases(run, m, r).iter().all(|b| within(b.1, b.2)))
        .count();
    assert_eq!(c["x"].parse::<usize>().unwrap(), everywhere);
    let item =
        re(r"`(?P<m>[^`]+)` \((?P<lo>[+-]TIME) to (?P<hi>[+-]TIME) against `(?P<r>[^`]+)`\)");
    for i in item.captures_iter(&c["list"]) {
        let all = biases(run, &i["m"], &i["r"]);
        assert!(all.iter().all(|b| within(b.1, b.2)), "{}", &i["m"]);
        let lo = all.iter().map(|b| b.1).fold(f64::MAX, f64::min);
        let hi = all.iter().map(|b| b.1).fold(f64::MIN, f64::max);
        assert_time(i["lo"].trim_start_matches('+'), lo, "lowest bias");
        assert_time(i["hi"].trim_start_matches('+'), hi, "highest bias");
    }
}

fn peer(run: &Run, c: &Captures) {
    let mut readings: HashMap<String, Vec<f64>> = HashMap::new();
    let mut peers = csv::Reader::from_path(run.dir.join("peers.csv")).unwrap();
    for row in peers.records().map(Result::unwrap) {
        if row[0] == c["peer"] {
            if let Ok(t) = row[3].parse::<f64>() {
                readings.entry(row[1].to_string()).or_default().push(t);
            }
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    };
    let theirs: HashMap<String, f64> = readings.into_iter().map(|(p, v)| (p, median(v))).collect();
    // The runner's trusted cells of the variant, by point label (a lone parameter's value).
    let cells: Vec<(String, f64, f64, bool)> = (run.trusted())
        .filter(|(id, _)| parts(id).2 == &c["v"])
        .filter_map(|(id, ns)| {
            let label = parts(id).1.split_once('=')?.1;
            Some((id.to_string(), ns, *theirs.get(label)?, run.medians[id].1))
        })
        .collect();
    let agree = |(_, ours, theirs, first): &(String, f64, f64, bool)| {
        let d = (ours - theirs).abs();
        if *first {
            d <= (0.1 * theirs).max(20e3)
        } else {
            d <= (0.01 * theirs).max(2e3)
        }
    };
    let (a, n) = match c.name("all") {
        Some(n) => (0, n.as_str().parse::<usize>().unwrap()),
        None => (c["a"].parse().unwrap(), c["n"].parse().unwrap()),
    };
    assert_eq!(
        (a, n),
        (cells.iter().filter(|x| agree(x)).count(), cells.len()),
        "{}",
        &c["peer"]
    );
    let first = cells[0].3;
    assert_eq!(
        (&c["tp"], &c["tu"]),
        if first { ("10", "20") } else { ("1", "2") }
    );
    let off = |x: &(String, f64, f64, bool)| ((x.1 - x.2) / x.2).abs();
    let largest = cells
        .iter()
        .max_by(|x, y| off(x).total_cmp(&off(y)))
        .unwrap();
    assert_eq!(
        id(&c["k"], c.name("p").map(|p| p.as_str()), &c["v"]),
        largest.0
    );
    assert_pct(&c["pct"], (largest.1 - largest.2) / largest.2, "difference");
    assert_time(&c["t1"], largest.1, "ours");
    assert_time(&c["t2"], largest.2, "theirs");
}

fn stopped(run: &Run, c: &Captures) {
    let cells = run.raw("cells.jsonl");
    let trusted: HashSet<&str> = run.trusted().map(|(id, _)| id).collect();
    let mut stops: HashMap<String, serde_json::Value> = HashMap::new();
    for line in cells.lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let (Some(id), why) = (record["id"].as_str(), &record["stopped"]) else {
            continue;
        };
        // Older folders store the sentence, newer ones the reason's numbers.
        let budget = (why.as_str()).map_or(why["by"] == "budget", |s| s.starts_with("budget:"));
        if budget && trusted.contains(id) {
            stops.entry(id.to_string()).or_insert_with(|| why.clone());
        }
    }
    assert_eq!(c["n"].parse::<usize>().unwrap(), stops.len());
    assert_eq!(c["of"].parse::<usize>().unwrap(), trusted.len());
    let why = &stops[&c["id"]];
    match why.as_str() {
        Some(sentence) => assert_eq!(sentence, &c["why"]),
        None => {
            let after = format!("after {} of {} samples", why["samples"], why["planned"]);
            assert!(c["why"].contains(&after), "{}: {why}", &c["why"]);
        }
    }
}

/// A cell's audits from `cells.jsonl`, its runs together.
#[derive(Default, Clone, Copy)]
struct AuditTimes {
    cost: f64,
    wall: f64,
    regions: f64,
    checks: f64,
    weaker: bool,
}

/// Each audited cell's audits from `cells.jsonl`, its runs together.
fn audits_of(run: &Run) -> HashMap<String, AuditTimes> {
    let mut cells: HashMap<String, AuditTimes> = HashMap::new();
    let mut audited: HashSet<String> = HashSet::new();
    for line in run.raw("cells.jsonl").lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(id) = record["id"].as_str() else {
            continue;
        };
        let audit = &record["audit"];
        if !audit["among"].is_null() || !audit["weaker"].is_null() {
            audited.insert(id.to_string());
        }
        let sum = cells.entry(id.to_string()).or_default();
        let seconds = |field: &str| audit[field].as_f64().unwrap_or(0.0);
        sum.cost += seconds("cost_s");
        sum.wall += record["wall_s"].as_f64().unwrap_or(0.0);
        sum.regions += seconds("regions_s");
        sum.checks += seconds("checks_s");
        sum.weaker |= !audit["weaker"].is_null();
    }
    cells.retain(|id, _| audited.contains(id));
    cells
}

fn audit_cost(run: &Run, c: &Captures) {
    let trusted: HashSet<&str> = run.trusted().map(|(id, _)| id).collect();
    let audits = audits_of(run);
    let audited: Vec<(&String, &AuditTimes)> = (audits.iter())
        .filter(|(id, _)| trusted.contains(id.as_str()))
        .collect();
    let over: Vec<_> = (audited.iter())
        .filter(|(_, a)| a.cost / a.wall > 0.05 && a.cost >= 0.1)
        .collect();
    assert_eq!(c["n"].parse::<usize>().unwrap(), over.len());
    assert_eq!(c["of"].parse::<usize>().unwrap(), audited.len());
    let cell = id_of(&c["k"], c.name("p").map_or("", |p| p.as_str()), &c["v"]);
    let a = audits[&cell];
    let most = (over.iter())
        .map(|(_, a)| a.cost / a.wall)
        .fold(0.0, f64::max);
    assert_eq!(a.cost / a.wall, most, "{cell} is not the costliest");
    assert_pct(&c["share"], a.cost / a.wall, &cell);
    assert_time(&c["cost"], a.cost * 1e9, &cell);
    assert_time(&c["wall"], a.wall * 1e9, &cell);
    // The part it names is the one that took most: the checks, the regions or the rest,
    // staging; the weaker audit's, or none where the run recorded no parts.
    let staging = (a.cost - a.regions - a.checks).max(0.0);
    let largest = a.checks.max(a.regions).max(staging);
    let named = [
        ("checks", a.checks),
        ("regions", a.regions),
        ("staging", staging),
    ]
    .into_iter()
    .find(|(name, _)| c.name(name).is_some());
    match named {
        Some((name, seconds)) => {
            assert!(
                !a.weaker && seconds == largest,
                "{cell}: {name} did not take most"
            );
            assert_time(&c[name], seconds * 1e9, &cell);
        }
        None if c.name("weaker").is_some() => assert!(a.weaker, "{cell}: not the weaker audit"),
        None => assert!(
            !a.weaker && a.regions + a.checks == 0.0,
            "{cell}: its parts are recorded"
        ),
    }
}

/// Each audited cell's detection limit as `cells.md`'s Audits table shows it, in percent.
fn detection_limits(run: &Run) -> HashMap<String, f64> {
    let text = std::fs::read_to_string(run.dir.join("cells.md")).unwrap();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.starts_with("| cell | audit |"));
    let header: Vec<&str> = lines.next().unwrap().split(" | ").collect();
    let at = header.iter().position(|h| *h == "detection limit").unwrap();
    (lines.skip(1).take_while(|l| l.starts_with("| ")))
        .filter_map(|l| {
            let cols: Vec<&str> = l.split(" | ").collect();
            let limit = cols[at].trim_end_matches('%').parse().ok()?;
            Some((cols[0][2..].to_string(), limit))
        })
        .collect()
}

/// Each trusted cell's steady samples, as they were taken.
fn steady_samples(run: &Run) -> HashMap<String, Vec<f64>> {
    let text = run.raw("samples.csv");
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let heads = reader.headers().unwrap().clone();
    let at = |name: &str| heads.iter().position(|h| h == name).unwrap();
    let (cell, phase, time) = (at("cell"), at("phase"), at("time_ns"));
    let trusted: HashSet<&str> = run.trusted().map(|(id, _)| id).collect();
    let mut out: HashMap<String, Vec<f64>> = HashMap::new();
    for row in reader.records() {
        let row = row.unwrap();
        if &row[phase] == "steady" && trusted.contains(&row[cell]) {
            (out.entry(row[cell].to_string()).or_default()).push(row[time].parse().unwrap());
        }
    }
    out.retain(|_, t| t.len() >= 2);
    out
}

/// A quantile of `sorted` by linear interpolation between ranks.
fn linear(sorted: &[f64], q: f64) -> f64 {
    let at = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo as f64)
}

/// What `spreads` gives.
type Spreads = (f64, f64, f64, f64);

/// Median, interquartile range, shortest half (no narrower than the smallest step between
/// two values) and the upper quartile of successive steps (by nearest rank), of samples in
/// the order taken.
fn spreads(taken: &[f64]) -> Spreads {
    let mut sorted = taken.to_vec();
    sorted.sort_by(f64::total_cmp);
    let half = sorted.len().div_ceil(2);
    let width = (sorted.windows(half).map(|w| w[half - 1] - w[0])).fold(f64::INFINITY, f64::min);
    let resolution = (sorted.windows(2).map(|w| w[1] - w[0]))
        .filter(|d| *d > 0.0)
        .fold(f64::INFINITY, f64::min);
    let shortest = if resolution.is_finite() {
        width.max(resolution)
    } else {
        width
    };
    let mut steps: Vec<f64> = taken.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    steps.sort_by(f64::total_cmp);
    let step = steps[((steps.len() - 1) as f64 * 0.75).round() as usize];
    let median = linear(&sorted, 0.5);
    (
        median,
        linear(&sorted, 0.75) - linear(&sorted, 0.25),
        shortest,
        step,
    )
}

fn split(run: &Run, c: &Captures) {
    let samples = steady_samples(run);
    let splits = |(median, iqr, half, step): Spreads| {
        step >= iqr / 2.0 && 4.0 * half < iqr && iqr > (0.02 * median).max(500.0)
    };
    let split: Vec<(&String, Spreads)> = (samples.iter())
        .map(|(id, t)| (id, spreads(t)))
        .filter(|(_, s)| splits(*s))
        .collect();
    let what = run.dir.display().to_string();
    assert_eq!(c["n"].parse::<usize>().unwrap(), split.len(), "{what}");
    assert_eq!(c["of"].parse::<usize>().unwrap(), samples.len(), "{what}");
    let v = c.name("v").or(c.name("v2")).unwrap().as_str();
    let cell = id_of(&c["k"], c.name("p").map_or("", |p| p.as_str()), v);
    let share = |s: &Spreads| s.1 / s.0;
    let widest = split.iter().map(|(_, s)| share(s)).fold(0.0, f64::max);
    let (_, s) = split.iter().find(|(id, _)| **id == cell).unwrap();
    assert_eq!(share(s), widest, "{cell} is not the widest");
    assert_time(&c["m"], s.0, &cell);
    assert_time(&c["iqr"], s.1, &cell);
    assert_time(&c["h"], s.2, &cell);
    if let Some(limit) = c.name("limit") {
        let limits = detection_limits(run);
        assert_number(limit.as_str().trim_end_matches('%'), limits[&cell], &cell);
    }
}

/// Variant `v`'s key `key` (its own, else `[defaults]`').
fn knob<'a>(run: &'a Run, v: &str, key: &str) -> Option<&'a toml::Value> {
    let variants = run.exp["variant"].as_array().unwrap();
    let table = variants.iter().find(|t| t["name"].as_str() == Some(v))?;
    table.get(key).or_else(|| run.exp.get("defaults")?.get(key))
}

fn wide_limits(run: &Run, c: &Captures) {
    let trusted: HashSet<&str> = run.trusted().map(|(id, _)| id).collect();
    let limits: Vec<(String, f64)> = (detection_limits(run).into_iter())
        .filter(|(id, _)| trusted.contains(id.as_str()))
        .collect();
    // The table shows a limit to a tenth of a percent: one shown as 25.0% may be over.
    let wide: Vec<&(String, f64)> = limits.iter().filter(|(_, l)| *l >= 25.0).collect();
    let surely = wide.iter().filter(|(_, l)| *l > 25.0).count();
    let n: usize = c["n"].parse().unwrap();
    assert!(
        (surely..=wide.len()).contains(&n),
        "{}: {n} over a quarter, not {surely} to {}",
        run.dir.display(),
        wide.len()
    );
    assert_eq!(
        c["of"].parse::<usize>().unwrap(),
        limits.len(),
        "{}",
        run.dir.display()
    );
    let cell = id_of(&c["k"], c.name("p").map_or("", |p| p.as_str()), &c["v"]);
    let widest = wide.iter().map(|(_, l)| *l).fold(0.0, f64::max);
    let (_, limit) = wide.iter().find(|(id, _)| *id == cell).unwrap();
    assert_eq!(*limit, widest, "{cell} is not the widest");
    assert_number(c["limit"].trim_end_matches('%'), *limit, &cell);
    // Batches timed by events on an idle queue.
    let idle = (wide.iter())
        .filter(|(id, _)| {
            let v = parts(id).2;
            let batch = knob(run, v, "batch")
                .and_then(|b| b.as_integer())
                .unwrap_or(1);
            let timer = knob(run, v, "timer")
                .and_then(|t| t.as_str())
                .unwrap_or("events");
            let queue = knob(run, v, "queue")
                .and_then(|q| q.as_str())
                .unwrap_or("idle");
            batch > 1 && timer == "events" && queue == "idle"
        })
        .count();
    let told = c.name("idle").map_or(0, |n| n.as_str().parse().unwrap());
    assert_eq!(told, idle, "{cell}: batches on an idle queue");
    // Cells audited among their timed launches that held no decoy: the band alone judged them.
    let records = common::stored_text(&run.dir, "cells.jsonl");
    let band = (wide.iter())
        .filter(|(id, _)| {
            let among = (records.lines())
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .filter(|r| r["id"] == id.as_str())
                .filter_map(|r| r["audit"]["among"].as_object().cloned());
            let count = |a: &serde_json::Map<String, serde_json::Value>, k: &str| {
                a.get(k).and_then(|v| v.as_array()).map_or(0, Vec::len)
            };
            let (audited, decoys) = among.fold((0, 0), |(n, d), a| {
                (n + count(&a, "positions"), d + count(&a, "decoy_positions"))
            });
            audited > 0 && decoys == 0
        })
        .count();
    let said = re(r" (\d+) had too few samples for a decoy \(60 afford one\)\.$")
        .captures(&c[0])
        .map_or(0, |b| b[1].parse().unwrap());
    assert_eq!(said, band, "{cell}: cells the band alone judged");
}

fn flagged(run: &Run, c: &Captures) {
    // The cells table, wherever the report keeps it; its flags less the probe's and the
    // timer's, which findings leave to the table.
    let mut text = run.report.clone();
    text += &std::fs::read_to_string(run.dir.join("cells.md")).unwrap_or_default();
    let table = text
        .split("\n| cell | runs |")
        .nth(1)
        .expect("a cells table");
    let mut flags: HashMap<&str, String> = HashMap::new();
    let rows = table.lines().skip(2).take_while(|l| l.starts_with("| "));
    for line in rows {
        let cols: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        if let (Some(id), Some(last)) = (cols.first(), cols.last()) {
            if let Some(f) = last.strip_prefix("⚠ ") {
                let kept: Vec<&str> = (f.split("; "))
                    .filter(|x| {
                        !x.starts_with("probed SM clock") && !x.starts_with("GPU timer ran")
                    })
                    .collect();
                if !kept.is_empty() && run.medians.contains_key(*id) {
                    flags.insert(id, kept.join("; "));
                }
            }
        }
    }
    let trusted: Vec<&str> = run.trusted().map(|(id, _)| id).collect();
    let flagged = trusted.iter().filter(|id| flags.contains_key(**id)).count();
    assert_eq!(c["n"].parse::<usize>().unwrap(), flagged);
    assert_eq!(c["of"].parse::<usize>().unwrap(), trusted.len());
    assert_eq!(flags[&c["id"]], &c["flags"]);
}

fn range(run: &Run, c: &Captures) {
    let k = &c["k"];
    if let Some(v) = c.name("v") {
        let under: Vec<(&str, f64)> = run
            .trusted()
            .filter(|(id, _)| parts(id).0 == k && parts(id).2 == v.as_str())
            .collect();
        assert_eq!(c["n"].parse::<usize>().unwrap(), under.len());
        let lo = under.iter().min_by(|x, y| x.1.total_cmp(&y.1)).unwrap();
        let hi = under.iter().max_by(|x, y| x.1.total_cmp(&y.1)).unwrap();
        assert_time(&c["t1"], lo.1, lo.0);
        assert_time(&c["t2"], hi.1, hi.0);
        // The point named holds the extreme; in a tie, any of the points that share it.
        let at = |p: &str, want: f64| under.iter().any(|(id, ns)| parts(id).1 == p && *ns == want);
        assert!(at(&c["p1"], lo.1) && at(&c["p2"], hi.1), "{}", &c[0]);
    } else if let Some(v1) = c.name("v1") {
        let p = c.name("p").map(|p| p.as_str());
        assert_time(
            &c["t1"],
            run.median(&id(k, p, v1.as_str())),
            "fastest variant",
        );
        assert_time(&c["t4"], run.median(&id(k, p, &c["v4"])), "slowest variant");
    } else {
        let v = c.name("v5").or(c.name("v6")).unwrap().as_str();
        assert_time(
            &c["t1"],
            run.median(&id(k, c.name("p5").map(|p| p.as_str()), v)),
            "the cell",
        );
    }
    if let (Some(a), Some(b)) = (c.name("v3a"), c.name("v3b")) {
        let last = |v: &str| {
            (run.trusted())
                .filter(|(id, _)| parts(id).0 == k && parts(id).2 == v)
                .count()
        };
        assert!(last(a.as_str()) > 0 && last(b.as_str()) > 0);
    }
}

/// The report's counters table of declared against measured bytes: cell -> (declared,
/// DRAM, L2, L1 in MB, its words).
fn bytes_table(run: &Run) -> HashMap<String, (f64, f64, f64, f64, String)> {
    let mut rows = HashMap::new();
    let table = run
        .report
        .split("| cell | cache | declared |")
        .nth(1)
        .unwrap();
    for line in table.lines().skip(2).take_while(|l| l.starts_with("| ")) {
        let cols: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        let mb = |i: usize| cols[i].parse::<f64>().unwrap();
        rows.insert(
            cols[0].to_string(),
            (mb(2), mb(3), mb(4), mb(5), cols[8].to_string()),
        );
    }
    rows
}

/// DRAM bytes (read plus written) of a cell's counter pass, from `cells.jsonl`.
fn counted_dram(run: &Run, id: &str) -> f64 {
    let text = run.raw("cells.jsonl");
    let value = |r: &serde_json::Value, name: &str| -> f64 {
        (r["counters"]["values"].as_array().unwrap().iter())
            .find(|v| v["name"] == name)
            .unwrap()["value"]
            .as_f64()
            .unwrap()
    };
    (text.lines())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["id"] == id && r["counters"]["values"].is_array())
        .map(|r| value(&r, "dram__bytes_read.sum") + value(&r, "dram__bytes_write.sum"))
        .unwrap()
}

fn bytes(run: &Run, c: &Captures) {
    let rows = bytes_table(run);
    let marked = rows.values().filter(|r| r.4.starts_with('⚠')).count();
    let with = |word: &str| rows.values().filter(|r| r.4.starts_with(word)).count();
    if let Some(all) = c.name("all") {
        assert_eq!(all.as_str().parse::<usize>().unwrap(), rows.len());
        assert_eq!(marked, 0);
        assert_eq!(c["agree"].parse::<usize>().unwrap(), with("agrees"));
        assert_eq!(c["cached"].parse::<usize>().unwrap(), with("served"));
        return;
    }
    assert_eq!(c["m"].parse::<usize>().unwrap(), marked);
    assert_eq!(c["n"].parse::<usize>().unwrap(), rows.len());
    let (declared, dram, l2, l1, words) = &rows[&c["id"]];
    assert!(words.starts_with('⚠'), "{words}");
    assert_number(&c["decl"], *declared, "declared MB");
    assert_number(&c["cache"], l1.max(*l2), "cache MB");
    assert_number(&c["dram"], *dram, "DRAM MB");
    // The table's DRAM bytes are the counter pass's own.
    assert_number(
        &c["dram"],
        counted_dram(run, &c["id"]) / 1e6,
        "counted DRAM MB",
    );
    // Ratios of the table's rounded megabytes: within a unit of their last digit.
    let ratio = |text: &str, r: f64| assert!((text.parse::<f64>().unwrap() - r).abs() <= 0.011);
    ratio(&c["cr"], l1.max(*l2) / declared);
    ratio(&c["dr"], dram / declared);
    match &c["how"] {
        "DRAM moved more than declared" => assert!(dram / declared > 1.1),
        _ => assert!(*declared > 1.1 * l1.max(*l2)),
    }
}

fn nothing(run: &Run, c: &Captures) {
    assert_eq!(c["t"].parse::<usize>().unwrap(), run.trusted().count());
}

/// Every committed run folder.
fn committed() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut todo = vec![PathBuf::from("reports")];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.join("run.json").exists() {
                dirs.push(p);
            } else if p.is_dir() {
                todo.push(p);
            }
        }
    }
    dirs.sort();
    dirs
}

#[test]
fn every_number_of_the_committed_reports_findings_is_what_their_data_gives() {
    let mut checked = 0;
    for dir in committed() {
        let run = Run::load(&dir);
        let findings = run.findings();
        assert!(
            (1..=10).contains(&findings.len()),
            "{}: {} findings",
            dir.display(),
            findings.len()
        );
        for f in &findings {
            assert!(
                f.chars().count() <= 300,
                "{}: over 300 characters: {f}",
                dir.display()
            );
            let known = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&run, f)));
            match known {
                Ok(true) => checked += 1,
                Ok(false) => panic!("{}: a finding of no known kind: {f}", dir.display()),
                Err(_) => panic!("{}: does not hold: {f}", dir.display()),
            }
        }
    }
    assert!(checked >= 150, "{checked} findings checked");
}
