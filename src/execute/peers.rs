//! Runs the experiment's peers after its cells: each peer program once per process and
//! sweep point, round-robin so drift spreads evenly, its reading taken from its output.

use super::INTERRUPTED;
use crate::experiment::{peer, point_label, Experiment};
use crate::store::PeerRow;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The longest a peer process may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// Every peer reading of the experiment, in the order they ran.
pub fn run_all(exp: &Experiment) -> Vec<PeerRow> {
    let mut rows = Vec::new();
    let most = exp.peers.iter().map(|p| p.processes).max().unwrap_or(0);
    for process in 0..most {
        for p in exp.peers.iter().filter(|p| process < p.processes) {
            let at = exp.points.iter().zip(&p.commands);
            for (point, command) in at.filter_map(|(pt, c)| Some((pt, c.as_ref()?))) {
                if INTERRUPTED.load(Ordering::SeqCst) {
                    return rows;
                }
                let (time_ns, note) = match run_one(exp, p, command) {
                    Ok(ns) => (Some(ns), String::new()),
                    Err(why) => (None, why),
                };
                rows.push(PeerRow {
                    peer: p.name.clone(),
                    point: point_label(point),
                    process,
                    time_ns,
                    note,
                });
            }
        }
    }
    rows
}

/// One process of a peer: its reading in ns, or why there is none.
fn run_one(exp: &Experiment, p: &peer::Peer, command: &[String]) -> Result<f64, String> {
    let program = peer::program(&exp.path, &command[0]);
    let child = Command::new(&program)
        .args(&command[1..])
        .envs(p.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("skipped: cannot start {} ({e})", program.display()))?;
    // Its output is read as it comes (a thread waits for it), so a talkative program
    // cannot block on a full pipe; one that overruns is killed.
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(TIMEOUT) {
        Ok(out) => out.map_err(|e| format!("cannot read {}'s output: {e}", program.display()))?,
        Err(_) => {
            if let Some(pid) = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            return Err(format!("killed after {}s", TIMEOUT.as_secs()));
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{} ({}): {}",
            program.display(),
            out.status,
            err.trim()
        ));
    }
    p.reads.time_ns(&text)
}
