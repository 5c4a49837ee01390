//! Runs the experiment's peers: each peer program once per process and sweep point where
//! the plan has a cell of its variant. A peer's process i at a point runs right after the
//! fresh process i of the first cell of its variant there, so that the two meet the GPU and
//! the host as alike as a schedule can make them; what no fresh process precedes (a variant
//! in a shared process, more peer processes than the cell's, cells done before a resume) runs
//! after the last cell. Its reading is taken from its output.

use super::INTERRUPTED;
use crate::experiment::{peer, point_label, Experiment, Point};
use crate::plan::Cell;
use crate::protocol::Claiming;
use crate::store::PeerRow;
use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The longest a peer process may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// The peers' readings so far, and which of their processes have run.
pub struct Peers<'a> {
    exp: &'a Experiment,
    cells: &'a [Cell],
    rows: Vec<PeerRow>,
    /// (peer, point, process) that have run.
    ran: HashSet<(usize, usize, u32)>,
    spent: Duration,
    /// Where the run's parts share one queue (`--claims`): each peer process runs in the
    /// part that claims it first, of those that ran a cell of its variant at its point.
    claiming: Option<Claiming>,
}

impl<'a> Peers<'a> {
    pub fn new(exp: &'a Experiment, cells: &'a [Cell]) -> Self {
        Peers {
            exp,
            cells,
            rows: Vec::new(),
            ran: HashSet::new(),
            spent: Duration::ZERO,
            claiming: None,
        }
    }

    /// These peers, run by a part of a run whose parts share a queue.
    pub fn claiming(self, claiming: Option<Claiming>) -> Self {
        Peers { claiming, ..self }
    }

    /// The peer processes that stand beside `cell`'s process `process` and have not run.
    fn beside(&self, cell: &Cell, process: u32) -> Vec<(usize, usize, u32)> {
        let mut due = Vec::new();
        for (p, peer) in self.exp.peers.iter().enumerate() {
            if peer.variant != cell.variant {
                continue;
            }
            for (i, point) in self.exp.points.iter().enumerate() {
                let run = (p, i, process);
                if at(point, cell) && self.pending(run) {
                    due.push(run);
                }
            }
        }
        due
    }

    /// Whether process `process` of peer `p` at point `i` is one the peer has, with a
    /// command at that point, and has not run.
    fn pending(&self, (p, i, process): (usize, usize, u32)) -> bool {
        let peer = &self.exp.peers[p];
        process < peer.processes
            && peer.commands[i].is_some()
            && !self.ran.contains(&(p, i, process))
    }

    /// Whether a peer process stands beside `cell`'s process `process` and has not run.
    pub fn due(&self, cell: &Cell, process: u32) -> bool {
        !self.beside(cell, process).is_empty()
    }

    /// Runs the peer processes that stand beside `cell`'s process `process`.
    pub fn run_beside(&mut self, cell: &Cell, process: u32) {
        let started = Instant::now();
        for run in self.beside(cell, process) {
            self.run(run);
        }
        self.spent += started.elapsed();
    }

    /// Runs the processes still to run, in process order, at the points where the plan has
    /// a cell of the peer's variant; every reading in the order they ran, and the seconds
    /// the peers took in all.
    pub fn finish(mut self) -> (Vec<PeerRow>, f64) {
        let started = Instant::now();
        let most = self.exp.peers.iter().map(|p| p.processes).max();
        for process in 0..most.unwrap_or(0) {
            for (p, peer) in self.exp.peers.iter().enumerate() {
                for (i, point) in self.exp.points.iter().enumerate() {
                    let planned = (self.cells.iter())
                        .any(|c| c.variant == peer.variant && at(point, c) && self.ran_here(c));
                    let run = (p, i, process);
                    if planned && self.pending(run) {
                        self.run(run);
                    }
                }
            }
        }
        self.spent += started.elapsed();
        (self.rows, self.spent.as_secs_f64())
    }

    /// Whether this part ran `cell` (every part's own, unless the parts share a queue): a
    /// peer left to the end runs where a cell of its variant and point ran.
    fn ran_here(&mut self, cell: &Cell) -> bool {
        (self.claiming.as_mut()).is_none_or(|c| c.holds(cell.index).unwrap_or(false))
    }

    /// Process `process` of peer `p` at point `i`.
    fn run(&mut self, (p, i, process): (usize, usize, u32)) {
        if INTERRUPTED.load(Ordering::SeqCst) {
            return;
        }
        let peer = &self.exp.peers[p];
        let Some(command) = peer.commands[i].as_ref() else {
            return;
        };
        self.ran.insert((p, i, process));
        // A key no cell id can be: ids hold no NUL.
        let key = format!("peer\0{p}\0{i}\0{process}");
        let (time_ns, note) = match self.claiming.as_ref().map(|c| c.claims.take(&key)) {
            Some(Ok(false)) => return,
            Some(Err(e)) => (None, format!("cannot claim it in the run's queue: {e}")),
            _ => match run_one(self.exp, peer, command) {
                Ok(ns) => (Some(ns), String::new()),
                Err(why) => (None, why.to_string()),
            },
        };
        self.rows.push(PeerRow {
            peer: peer.name.clone(),
            point: point_label(&self.exp.points[i]),
            process,
            time_ns,
            note,
        });
    }
}

/// Peer commands `runner plan` lists at most, per peer (as it lists at most 2,000 cells);
/// every program is named, whatever the count.
const MAX_LISTED: usize = 2000;

/// What the peers would run beside `cells`, for `runner plan`: they start programs, so the
/// plan names each program and the command at each point (words shell-quoted, so that an
/// odd character shows).
pub fn describe(exp: &Experiment, cells: &[Cell]) -> String {
    let quote = |w: &str| shlex::try_quote(w).map_or_else(|_| format!("{w:?}"), |q| q.into_owned());
    let mut out = String::new();
    for peer in &exp.peers {
        let commands: Vec<(String, &Vec<String>)> = (exp.points.iter().zip(&peer.commands))
            .filter(|(point, _)| (cells.iter()).any(|c| c.variant == peer.variant && at(point, c)))
            .filter_map(|(point, command)| Some((point_label(point), command.as_ref()?)))
            .collect();
        if commands.is_empty() {
            continue;
        }
        let mut programs: Vec<String> = Vec::new();
        for (_, command) in &commands {
            let program = peer::program(&exp.path, &command[0]).display().to_string();
            if !programs.contains(&program) {
                programs.push(program);
            }
        }
        out += &format!(
            "  peer {} beside {}: {} process(es) at each of {} point(s), running {}\n",
            peer.name,
            peer.variant,
            peer.processes,
            commands.len(),
            programs
                .iter()
                .map(|p| quote(p))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for (label, command) in commands.iter().take(MAX_LISTED) {
            let words: Vec<String> = command.iter().map(|w| quote(w)).collect();
            out += &format!("    {label}: {}\n", words.join(" "));
        }
        if commands.len() > MAX_LISTED {
            out += &format!(
                "    ... and {} more point(s)\n",
                commands.len() - MAX_LISTED
            );
        }
    }
    out
}

/// Whether `cell` lies at the experiment's `point` (a kernel's own axes extend its points).
fn at(point: &Point, cell: &Cell) -> bool {
    point.iter().all(|kv| cell.point.contains(kv))
}

/// Why a peer's process gave no reading: the note of its row in the run folder. Each cause
/// is part of the message, not a source.
#[derive(Debug, thiserror::Error)]
enum NoPeerReading {
    #[error("skipped: cannot start {} ({1})", .0.display())]
    Start(PathBuf, std::io::Error),
    #[error("cannot read {}'s output: {1}", .0.display())]
    Output(PathBuf, std::io::Error),
    #[error("killed after {}s", TIMEOUT.as_secs())]
    Killed,
    #[error("{} ({1}): {}", .0.display(), .2.trim())]
    Exit(PathBuf, ExitStatus, String),
    #[error(transparent)]
    Read(#[from] peer::NoReading),
}

/// One process of a peer: its reading in ns, or why there is none.
fn run_one(exp: &Experiment, p: &peer::Peer, command: &[String]) -> Result<f64, NoPeerReading> {
    let program = peer::program(&exp.path, &command[0]);
    let child = Command::new(&program)
        .args(&command[1..])
        .envs(p.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| NoPeerReading::Start(program.clone(), e))?;
    // Its output is read as it comes (a thread waits for it), so a talkative program
    // cannot block on a full pipe; one that overruns is killed.
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(TIMEOUT) {
        Ok(out) => out.map_err(|e| NoPeerReading::Output(program.clone(), e))?,
        Err(_) => {
            if let Some(pid) = i32::try_from(pid)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            return Err(NoPeerReading::Killed);
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        return Err(NoPeerReading::Exit(program, out.status, err));
    }
    Ok(p.reads.time_ns(&text)?)
}
