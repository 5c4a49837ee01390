//! The scheduler against stand-in workers (shell scripts): crashes, hangs, malformed output.
use super::*;
use crate::protocol::Status;
use crate::store::PeerRow;
use crate::system;
use crate::testkit::{self, EMPTY_KERNEL};
use std::collections::HashMap;

/// Where a stand-in run went and whether it finished.
struct Outcome {
    dir: std::path::PathBuf,
    complete: bool,
}

/// Each stored cell's status, error and what failed.
fn statuses(dir: &Path) -> HashMap<usize, (Status, Option<String>, Option<FailureKind>)> {
    let text = crate::store::stored_records(dir);
    text.lines()
        .map(|l| {
            let r: CellRecord = serde_json::from_str(l).unwrap();
            (r.cell, (r.status, r.error, r.failure))
        })
        .collect()
}

fn meta() -> RunMeta {
    serde_json::from_value(serde_json::json!({
        "experiment_path": "e.toml", "experiment_sha256": "", "git": null,
        "runner_version": "test", "started_utc": "", "finished_utc": null,
        "complete": false, "host": system::host(), "device": null, "startup": null
    }))
    .unwrap()
}

/// An experiment of three shared cells (a, b, c) whose variant `b` has a short timeout.
fn experiment(dir: &Path) -> Experiment {
    let text = r#"
[experiment]
title = "stand-in"
[[kernel]]
name = "k"
source = "k.cu"
entry = "k"
grid = [1]
block = [1]
[[variant]]
name = "a"
[[variant]]
name = "b"
timeout = "1s"
[[variant]]
name = "c"
[report]
floor = false
"#;
    testkit::experiment_in(dir, &[("k.cu", EMPTY_KERNEL)], text)
}

/// A stand-in worker: reports each cell of its job as a one-sample success, except that
/// it does `on_b` when it reaches cell 1 (variant `b`).
fn stand_in(on_b: &str) -> WorkerProgram {
    let script = format!(
        r#"job=$(cat)
for c in $(printf %s "$job" | grep -o '"cell":[0-9]*' | cut -d: -f2); do
  if [ "$c" = 1 ]; then {on_b}; fi
  echo "{{\"type\":\"cell\",\"cell\":$c,\"id\":\"x\",\"process\":0,\"status\":\"ok\",\"first_ns\":2.0,\"samples_ns\":[1.0],\"wall_s\":0.0}}"
done"#
    );
    WorkerProgram::new("sh", &["-c", &script])
}

fn run_with(on_b: &str) -> (tempfile::TempDir, Outcome) {
    run_edited(on_b, |text| text.to_string())
}

/// Runs the stand-in experiment, its text changed by `edit`, with the stand-in worker.
fn run_edited(on_b: &str, edit: impl Fn(&str) -> String) -> (tempfile::TempDir, Outcome) {
    run_part(on_b, edit, None)
}

/// As `run_edited`, as part of a run whose parts share the queue `claims` (`--claims`).
fn run_part(
    on_b: &str,
    edit: impl Fn(&str) -> String,
    claims: Option<&crate::protocol::Claims>,
) -> (tempfile::TempDir, Outcome) {
    let tmp = tempfile::tempdir().unwrap();
    let first = experiment(tmp.path());
    let exp = testkit::experiment_in(tmp.path(), &[], &edit(&first.text));
    let plan = Plan::new(&exp).unwrap();
    let dir = tmp.path().join("out");
    let mut meta = meta();
    meta.shard = claims.map(|claims| crate::store::ShardCells {
        shard: "0/2".parse().unwrap(),
        cells: plan.cells.iter().map(|c| c.id.clone()).collect(),
        claims: Some(claims.clone()),
    });
    let lock = crate::store::new_run_folder(&dir, false).unwrap();
    let mut writer = Writer::create(&lock, &exp, &meta).unwrap();
    let program = stand_in(on_b);
    let complete = Scheduler::new(&exp, &plan, &mut writer, &mut meta, &program)
        .unwrap()
        .run_all(&HashSet::new(), &mut Peers::new(&exp, &plan.cells))
        .unwrap();
    (tmp, Outcome { dir, complete })
}

#[test]
fn a_worker_that_crashes_fails_its_cell_and_a_new_one_runs_the_rest() {
    let (_tmp, out) = run_with("kill -9 $$");
    assert!(out.complete);
    let s = statuses(&out.dir);
    assert_eq!(s[&0].0, Status::Ok);
    assert_eq!(s[&1].0, Status::Failed);
    let why = s[&1].1.as_deref().unwrap();
    assert!(
        why.contains("worker process ended") && why.contains("9"),
        "{why}"
    );
    assert_eq!(s[&1].2, Some(FailureKind::WorkerLost));
    assert_eq!(
        (s[&0].2, s[&2].2),
        (None, None),
        "no failure where none failed"
    );
    assert_eq!(s[&2].0, Status::Ok, "the cell after the crash still ran");
}

#[test]
fn a_worker_that_a_signal_ends_while_the_runner_gets_none_fails_its_cell() {
    // Slurm signals the runner with its worker; one signalled alone is a failed cell.
    let (_tmp, out) = run_with("kill -TERM $$");
    assert!(out.complete);
    let s = statuses(&out.dir);
    assert_eq!(s[&1].0, Status::Failed);
    let why = s[&1].1.as_deref().unwrap();
    assert!(why.contains("signal: 15"), "{why}");
    assert_eq!(s[&1].2, Some(FailureKind::WorkerLost));
    assert_eq!(s[&2].0, Status::Ok, "the cell after it still ran");
}

#[test]
fn a_part_stores_neither_a_cell_its_worker_found_taken_nor_a_failure_of_another_parts_cell() {
    let queue = tempfile::tempdir().unwrap();
    let claims = |part: &str| crate::protocol::Claims {
        dir: queue.path().to_path_buf(),
        part: part.into(),
    };
    // The stand-in claims nothing: this part holds cells a and c as its worker's claims
    // would leave them (the cells are keyed by their ids).
    for cell in ["k/a", "k/c"] {
        assert!(claims("0/2").take(cell).unwrap());
    }
    // A worker that dies in cell b before claiming it: its failure is not this part's to
    // record, and cell b is left to the other part.
    let (_tmp, out) = run_part("kill -9 $$", |t| t.to_string(), Some(&claims("0/2")));
    let s = statuses(&out.dir);
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!((s[&0].0, s[&2].0), (Status::Ok, Status::Ok));
    assert_eq!(claims("1/2").holder("k/b").unwrap(), None);
    // Another part holds cell b: no worker is asked to run it, and a worker that finds it
    // taken says so.
    assert!(claims("1/2").take("k/b").unwrap());
    let taken = r#"echo '{"type":"taken","cell":1,"process":0}'; continue"#;
    for on_b in [taken, "kill -9 $$"] {
        let (_tmp, out) = run_part(on_b, |t| t.to_string(), Some(&claims("0/2")));
        assert!(out.complete, "{on_b}");
        let s = statuses(&out.dir);
        assert_eq!(s.len(), 2, "{on_b}: {s:?}");
        assert_eq!((s[&0].0, s[&2].0), (Status::Ok, Status::Ok), "{on_b}");
    }
}

#[test]
fn a_worker_is_told_the_runner_it_must_not_outlive() {
    let program = WorkerProgram::this_binary().unwrap();
    let pid = std::process::id().to_string();
    assert_eq!(program.args, ["__worker", "--parent", pid.as_str()]);
}

#[test]
fn a_worker_that_hangs_is_killed_at_the_cell_timeout() {
    let started = std::time::Instant::now();
    let (_tmp, out) = run_with("sleep 60");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "not killed in time"
    );
    let s = statuses(&out.dir);
    assert_eq!(s[&0].0, Status::Ok);
    assert_eq!(s[&1].0, Status::Failed);
    let why = s[&1].1.as_deref().unwrap();
    assert!(
        why.contains("timeout of 1s") && why.contains("killed"),
        "{why}"
    );
    assert_eq!(s[&1].2, Some(FailureKind::Timeout));
    assert_eq!(s[&2].0, Status::Ok);
}

#[test]
fn profiler_cells_are_skipped_with_a_note_where_ncu_is_missing() {
    if profiler::ncu().is_some() {
        crate::terminal::tell("SKIPPED: this machine has ncu");
        return;
    }
    let (_tmp, out) = run_edited("true", |text| {
        text.replace("name = \"b\"\n", "name = \"b\"\ntimer = \"profiler\"\n")
    });
    assert!(out.complete);
    let dir = out.dir;
    let s = statuses(&dir);
    assert_eq!(s[&0].0, Status::Ok);
    assert_eq!(s[&1].0, Status::Skipped);
    assert!(s[&1].1.as_deref().unwrap().contains("ncu"), "{:?}", s[&1]);
    assert_eq!(s[&1].2, None, "a skipped cell did not fail");
    assert_eq!(s[&2].0, Status::Ok);
}

#[test]
fn counters_are_skipped_with_a_note_where_ncu_is_missing_and_the_cell_still_times() {
    if profiler::ncu().is_some() {
        crate::terminal::tell("SKIPPED: this machine has ncu");
        return;
    }
    let (_tmp, out) = run_edited("true", |text| {
        text.replace(
            "name = \"b\"\n",
            "name = \"b\"\ncounters = [\"dram__bytes_read.sum\"]\n",
        )
    });
    assert!(out.complete);
    let text = crate::store::stored_records(&out.dir);
    let records: Vec<CellRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let b = records.iter().find(|r| r.cell == 1).unwrap();
    assert_eq!(b.status, Status::Ok, "the timed run is not held back");
    let why = b
        .counters
        .as_ref()
        .and_then(|c| c.error.as_deref())
        .unwrap();
    assert!(why.contains("ncu") && why.starts_with("skipped"), "{why}");
    assert!(records
        .iter()
        .filter(|r| r.cell != 1)
        .all(|r| r.counters.is_none()));
}

#[test]
fn malformed_worker_output_stops_the_run_with_a_message() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = experiment(tmp.path());
    let plan = Plan::new(&exp).unwrap();
    let mut meta = meta();
    let lock = crate::store::new_run_folder(&tmp.path().join("out"), false).unwrap();
    let mut writer = Writer::create(&lock, &exp, &meta).unwrap();
    let program = WorkerProgram::new("sh", &["-c", "cat >/dev/null; echo not-json"]);
    let err = Scheduler::new(&exp, &plan, &mut writer, &mut meta, &program)
        .unwrap()
        .run_all(&HashSet::new(), &mut Peers::new(&exp, &plan.cells))
        .unwrap_err();
    assert!(format!("{err:#}").contains("malformed message"), "{err:#}");
}

/// A stand-in worker that logs its start, the end of its input (where a worker goes on to
/// the device) and its exit (half a second after its last cell) to `log`.
fn logging_worker(log: &Path) -> WorkerProgram {
    let script = format!(
        r#"echo "start $$" >> {log}
job=$(cat)
echo "job $$" >> {log}
echo "cell $$ $(printf %s "$job" | grep -o '"cell":[0-9]*' | head -1 | tr -dc 0-9)" >> {log}
for r in $(printf %s "$job" | grep -o '"cell":[0-9]*,"process":[0-9]*' | tr -d '"a-z'); do
  c=${{r%%,*}}; p=${{r##*:}}; c=${{c#:}}
  echo "{{\"type\":\"cell\",\"cell\":$c,\"id\":\"x\",\"process\":$p,\"status\":\"ok\",\"first_ns\":2.0,\"samples_ns\":[1.0],\"wall_s\":0.0}}"
done
exec >&-
sleep 0.5
echo "exit $$" >> {log}"#,
        log = log.display()
    );
    WorkerProgram::new("sh", &["-c", &script])
}

/// The stand-in experiment with variant `a` in `processes` fresh processes and `extra`
/// appended to its text.
fn fresh_experiment(dir: &Path, processes: u32, extra: &str) -> Experiment {
    let exp = experiment(dir);
    let text = exp.text.replace(
        "[[variant]]\nname = \"a\"",
        &format!("[[variant]]\nname = \"a\"\nfresh_process = true\nprocesses = {processes}"),
    ) + extra;
    testkit::experiment_in(dir, &[], &text)
}

/// A peer beside `variant` in `processes` processes that logs "peer" to `log`.
fn logging_peer(variant: &str, processes: u32, log: &Path) -> String {
    format!(
        "[[peer]]\nname = \"p\"\nvariant = \"{variant}\"\nreads = \"took: {{ms}}ms\"\nprocesses = {processes}\ncommand = [\"sh\", \"-c\", \"echo peer $$ >> {}; echo took: 1ms\"]\n",
        log.display()
    )
}

/// Runs `exp`'s cells with the logging worker and then the peers still to run: the log as
/// the cells left it, and the peers' rows.
fn run_with_peers(exp: &Experiment, dir: &Path, log: &Path) -> (String, Vec<PeerRow>) {
    let plan = Plan::new(exp).unwrap();
    let (out, mut meta) = (dir.join("out"), meta());
    let lock = crate::store::new_run_folder(&out, false).unwrap();
    let mut writer = Writer::create(&lock, exp, &meta).unwrap();
    let mut peers = Peers::new(exp, &plan.cells);
    Scheduler::new(exp, &plan, &mut writer, &mut meta, &logging_worker(log))
        .unwrap()
        .run_all(&HashSet::new(), &mut peers)
        .unwrap();
    let after_cells = std::fs::read_to_string(log).unwrap();
    (after_cells, peers.finish().0)
}

#[test]
fn a_peer_runs_each_process_right_after_the_fresh_process_it_stands_beside() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("log");
    // Variants a (cell 0) and c (cell 2) in two fresh processes each; b (cell 1) shared.
    let exp = fresh_experiment(tmp.path(), 2, &logging_peer("a", 3, &log));
    let text = exp.text.replace(
        "[[variant]]\nname = \"c\"",
        "[[variant]]\nname = \"c\"\nfresh_process = true\nprocesses = 2",
    );
    let exp = testkit::experiment_in(tmp.path(), &[], &text);
    let (_, rows) = run_with_peers(&exp, tmp.path(), &log);
    assert_eq!(
        rows.iter().map(|r| r.process).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert!(rows.iter().all(|r| r.time_ns == Some(1e6)), "{rows:?}");
    // Each worker receives its cells once the one before has exited; a peer process runs
    // once a's process has exited, before c's; the third after the last cell.
    let order: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| match l.split(' ').collect::<Vec<_>>()[..] {
            ["cell", _, c] => Some(format!("cell {c}")),
            ["exit", _] => Some("exit".into()),
            ["peer", _] => Some("peer".into()),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "cell 1", "exit", "cell 0", "exit", "peer", "cell 2", "exit", "cell 0", "exit", "peer",
            "cell 2", "exit", "peer"
        ],
        "{order:?}"
    );
}

#[test]
fn a_peer_beside_a_shared_process_runs_after_the_last_cell() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("log");
    let exp = fresh_experiment(tmp.path(), 2, &logging_peer("b", 2, &log));
    let (after_cells, rows) = run_with_peers(&exp, tmp.path(), &log);
    assert!(!after_cells.contains("peer"));
    assert_eq!(rows.iter().map(|r| r.process).collect::<Vec<_>>(), [0, 1]);
}

#[test]
fn parts_that_share_a_queue_run_each_peer_process_once() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("log");
    let exp = fresh_experiment(tmp.path(), 2, &logging_peer("b", 3, &log));
    let plan = Plan::new(&exp).unwrap();
    let queue = tempfile::tempdir().unwrap();
    let claiming = |name: &str| {
        let claims = crate::protocol::Claims {
            dir: queue.path().to_path_buf(),
            part: name.into(),
        };
        crate::protocol::Claiming::of_plan(claims, &plan)
    };
    let peers = |name: &str| Peers::new(&exp, &plan.cells).claiming(Some(claiming(name)));
    // Nobody ran variant b's cell yet: its peers are left to whoever does.
    assert!(peers("0/2").finish().0.is_empty());
    // Part 1/2 ran it: its peers are part 1/2's, each process once.
    assert!(claiming("1/2").may_run(1).unwrap());
    let first = peers("0/2").finish().0;
    let second = peers("1/2").finish().0;
    assert!(first.is_empty(), "{first:?}");
    assert_eq!(
        second.iter().map(|r| r.process).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    let log = std::fs::read_to_string(&log).unwrap();
    assert_eq!(log.lines().count(), 3, "{log}");
}

#[test]
fn a_fresh_process_starts_while_the_previous_one_exits_and_waits_for_its_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let exp = fresh_experiment(tmp.path(), 2, "");
    let plan = Plan::new(&exp).unwrap();
    let log = tmp.path().join("log");
    let program = logging_worker(&log);
    let (dir, mut meta) = (tmp.path().join("out"), meta());
    let lock = crate::store::new_run_folder(&dir, false).unwrap();
    let mut writer = Writer::create(&lock, &exp, &meta).unwrap();
    Scheduler::new(&exp, &plan, &mut writer, &mut meta, &program)
        .unwrap()
        .run_all(&HashSet::new(), &mut Peers::new(&exp, &plan.cells))
        .unwrap();
    let lines: Vec<(String, String)> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            let (what, pid) = l.split_once(' ').unwrap();
            (what.to_string(), pid.to_string())
        })
        .collect();
    let at = |what: &str, pid: &str| {
        lines
            .iter()
            .position(|(w, p)| w == what && p == pid)
            .unwrap()
    };
    let pids: Vec<String> = lines
        .iter()
        .filter(|(w, _)| w == "start")
        .map(|(_, p)| p.clone())
        .collect();
    assert_eq!(
        pids.len(),
        3,
        "two fresh processes and one shared: {lines:?}"
    );
    for pair in pids.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert!(
            at("start", after) < at("exit", before),
            "did not start during the exit: {lines:?}"
        );
        assert!(
            at("exit", before) < at("job", after),
            "released before the exit: {lines:?}"
        );
    }
    let workers = meta.workers.unwrap();
    assert_eq!(workers.processes, 3);
    assert!(workers.exit_s >= 3.0 * 0.5, "{workers:?}");
}
