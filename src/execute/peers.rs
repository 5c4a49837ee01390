//! Runs the experiment's peers: each peer program once per process and sweep point. Process
//! i of every peer runs right after the cells' fresh processes of round i (the rest after
//! the last cell), so that a peer meets the GPU and the host as the cells it is compared
//! with do, not minutes later; its reading is taken from its output.

use super::INTERRUPTED;
use crate::experiment::{peer, point_label, Experiment};
use crate::store::PeerRow;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The longest a peer process may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The peers' readings so far, and which of their processes are still to run.
pub struct Peers<'a> {
    exp: &'a Experiment,
    rows: Vec<PeerRow>,
    /// The first process index not run yet.
    next: u32,
    spent: Duration,
}

impl<'a> Peers<'a> {
    pub fn new(exp: &'a Experiment) -> Self {
        Peers {
            exp,
            rows: Vec::new(),
            next: 0,
            spent: Duration::ZERO,
        }
    }

    /// Whether some peer's process `process` has not run yet.
    pub fn due(&self, process: u32) -> bool {
        self.next <= process && self.exp.peers.iter().any(|p| process < p.processes)
    }

    /// Runs every peer's processes up to `process` (inclusive) that have not run yet.
    pub fn run_through(&mut self, process: u32) {
        let started = Instant::now();
        while self.next <= process && !INTERRUPTED.load(Ordering::SeqCst) {
            self.run_process(self.next);
            self.next += 1;
        }
        self.spent += started.elapsed();
    }

    /// Runs the processes still to run; every reading in the order they ran, and the
    /// seconds the peers took in all.
    pub fn finish(mut self) -> (Vec<PeerRow>, f64) {
        let most = self
            .exp
            .peers
            .iter()
            .map(|p| p.processes)
            .max()
            .unwrap_or(0);
        if most > self.next {
            self.run_through(most - 1);
        }
        (self.rows, self.spent.as_secs_f64())
    }

    /// Process `process` of every peer that has one, at each of its points.
    fn run_process(&mut self, process: u32) {
        for p in self.exp.peers.iter().filter(|p| process < p.processes) {
            let at = self.exp.points.iter().zip(&p.commands);
            for (point, command) in at.filter_map(|(pt, c)| Some((pt, c.as_ref()?))) {
                if INTERRUPTED.load(Ordering::SeqCst) {
                    return;
                }
                let (time_ns, note) = match run_one(self.exp, p, command) {
                    Ok(ns) => (Some(ns), String::new()),
                    Err(why) => (None, why),
                };
                self.rows.push(PeerRow {
                    peer: p.name.clone(),
                    point: point_label(point),
                    process,
                    time_ns,
                    note,
                });
            }
        }
    }
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
