//! `runner plan --probe` against first runs on the H100 (`reports/plan-probe`). For each
//! experiment it keeps what the probe read (`probes/NAME.txt`, `plan --probe --verbose`'s
//! output) and the first run's own time and run.json (`runs/NAME.txt`, `runs/NAME.json`),
//! each run from a folder without `reports/`. This code computes both first-run estimates,
//! the model's and the probed one, from the experiment as it is and the probe's readings;
//! each must hold the range `runner plan` states, and `table.md` is what it computes
//! (`UPDATE_DOCS=1 cargo test probe_table` writes it again).

use crate::experiment::{DeviceFacts, Experiment, Sources};
use crate::plan::cost::{Estimate, MODEL_RANGE, PROBE_RANGE};
use crate::plan::probe::ProbePlan;
use crate::plan::Plan;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

const DIR: &str = "reports/plan-probe";

/// `  probe/ID: 12.3 µs a launch ...` lines: ns per launch by probe cell id.
fn readings(probe_output: &str) -> HashMap<String, f64> {
    (probe_output.lines())
        .filter_map(|l| {
            let (id, rest) = l.trim().split_once(": ")?;
            let us: f64 = rest.split(" µs a launch").next()?.parse().ok()?;
            Some((id.to_string(), us * 1e3))
        })
        .collect()
}

/// `ran for 12.3 s; ...`: the run's own time, in seconds.
fn ran_s(run_output: &str) -> f64 {
    let line = (run_output.lines()).find_map(|l| l.strip_prefix("ran for "));
    let (value, unit) = (line.and_then(|l| l.split(';').next()))
        .and_then(|t| t.split_once(' '))
        .expect("the run's `ran for` line");
    let value: f64 = value.parse().expect("a number of seconds or minutes");
    match unit {
        "min" => value * 60.0,
        _ => value,
    }
}

#[test]
fn the_probed_estimate_holds_its_range_of_each_first_run() {
    let mut names: Vec<String> = std::fs::read_dir(Path::new(DIR).join("probes"))
        .expect("reports/plan-probe/probes")
        .map(|e| e.unwrap().path())
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .collect();
    names.sort();
    let read = |part: &str| std::fs::read_to_string(Path::new(DIR).join(part)).unwrap();
    let mut table = String::from("| experiment | GPU | commit | plan | plan --probe | first run | run / plan | run / probed | probe took |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n");
    let (mut rows, mut misses) = (0, Vec::new());
    for name in &names {
        let path = format!("experiments/{name}.toml");
        let run: serde_json::Value =
            serde_json::from_str(&read(&format!("runs/{name}.json"))).unwrap();
        let sha = format!("{:x}", Sha256::digest(std::fs::read(&path).unwrap()));
        if run["experiment_sha256"].as_str() != Some(sha.as_str()) {
            println!("{name}: the experiment changed since its first run here; left out");
            continue;
        }
        let exp = Experiment::load_set(
            Path::new(&path),
            &DeviceFacts::nominal(),
            Sources::Read,
            &[],
        )
        .unwrap();
        let plan = Plan::new(&exp).unwrap();
        let probe_output = read(&format!("probes/{name}.txt"));
        let by_id = readings(&probe_output);
        let probe = ProbePlan::new(&plan);
        let readings_ns: Vec<Option<f64>> = (probe.plan.cells.iter())
            .map(|c| by_id.get(&c.id).copied())
            .collect();
        assert!(
            readings_ns.iter().all(Option::is_some),
            "{name}: a probe cell has no reading"
        );
        let model = Estimate::new(&exp, &plan, &HashMap::new()).total_s(&plan);
        let probed = Estimate::probed(&exp, &plan, &HashMap::new(), &probe.measured(&readings_ns))
            .total_s(&plan);
        let ran = ran_s(&read(&format!("runs/{name}.txt")));
        let took = (probe_output.lines())
            .find_map(|l| l.split(" on the device in ").nth(1))
            .unwrap_or("–");
        let gpu = run["device"]["name"].as_str().unwrap_or("–");
        let commit: String = (run["git"]["commit"].as_str().unwrap_or("–").chars())
            .take(7)
            .collect();
        let _ = writeln!(
            table,
            "| {name} | {gpu} | {commit} | {model:.1} s | {probed:.1} s | {ran:.1} s | {:.2} | {:.2} | {took} |",
            ran / model,
            ran / probed
        );
        if !(MODEL_RANGE.0..=MODEL_RANGE.1).contains(&(ran / model)) {
            misses.push(format!(
                "{name}: the model said {model:.1} s, the run took {ran:.1} s"
            ));
        }
        if !(PROBE_RANGE.0..=PROBE_RANGE.1).contains(&(ran / probed)) {
            misses.push(format!(
                "{name}: the probe said {probed:.1} s, the run took {ran:.1} s"
            ));
        }
        rows += 1;
    }
    println!("{table}");
    assert!(misses.is_empty(), "{misses:#?}");
    assert!(rows >= 8, "only {rows} experiments in {DIR}");
    let file = Path::new(DIR).join("table.md");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&file, &table).unwrap();
    }
    let kept = std::fs::read_to_string(&file).unwrap_or_default();
    assert_eq!(
        kept,
        table,
        "{} is stale: UPDATE_DOCS=1 cargo test probe_table",
        file.display()
    );
}
