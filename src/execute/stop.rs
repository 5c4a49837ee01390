//! Stopping a run by a signal. SIGINT (Ctrl-C), SIGTERM (`kill`, Slurm's `scancel` and time
//! limit, systemd) and SIGHUP (a closed terminal) each stop the run after the cells that
//! finished: the worker is killed, the report of those cells is written, and the folder
//! resumes with `--resume`. A second signal stops the runner at once.

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Set by the first signal: the run stops starting work, keeps what finished and says it
/// is incomplete.
pub(super) static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The number of the signal that set [`INTERRUPTED`].
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// How long a runner whose worker a stopping signal ended waits for that signal to reach
/// it too: Slurm and systemd signal every process of a job at once, and a cell the stop
/// cut short must be left to the resume, not stored as failed.
const SAME_SIGNAL_WAIT: Duration = Duration::from_secs(1);

/// A signal that stops a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Interrupt,
    Terminate,
    HangUp,
}

impl Stop {
    fn of(signal: i32) -> Option<Stop> {
        match signal {
            SIGINT => Some(Stop::Interrupt),
            SIGTERM => Some(Stop::Terminate),
            SIGHUP => Some(Stop::HangUp),
            _ => None,
        }
    }

    /// The signal, to pass on to the runners a run started (`--devices`).
    pub(super) fn signal(self) -> rustix::process::Signal {
        use rustix::process::Signal;
        match self {
            Stop::Interrupt => Signal::INT,
            Stop::Terminate => Signal::TERM,
            Stop::HangUp => Signal::HUP,
        }
    }

    fn number(self) -> i32 {
        self.signal().as_raw()
    }

    pub fn name(self) -> &'static str {
        match self {
            Stop::Interrupt => "SIGINT",
            Stop::Terminate => "SIGTERM",
            Stop::HangUp => "SIGHUP",
        }
    }

    /// The status a shell gives a process the signal ended, 128 + its number: 130, 143
    /// and 129, so that a script sees the signal whether the runner stopped itself or not.
    pub fn exit_code(self) -> u8 {
        128 + self.number() as u8
    }

    /// How the runner says it stopped.
    pub fn said(self) -> String {
        match self {
            Stop::Interrupt => "interrupted".into(),
            other => format!("stopped by {}", other.name()),
        }
    }
}

/// The signal that stopped this run, if one did.
pub fn stopped() -> Option<Stop> {
    match INTERRUPTED.load(Ordering::SeqCst) {
        true => Stop::of(SIGNAL.load(Ordering::SeqCst)),
        false => None,
    }
}

/// SIGINT, SIGTERM and SIGHUP stop the run after the cells that finished; a second one
/// stops the runner at once.
pub(super) fn stop_on_signals() -> Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("cannot install the handlers of SIGINT, SIGTERM and SIGHUP")?;
    std::thread::spawn(move || {
        for signal in signals.forever() {
            if let Some(stop) = Stop::of(signal) {
                on_signal(stop);
            }
        }
    });
    Ok(())
}

/// The first signal asks the run to stop; the next ends the runner (its workers die with
/// it: they are set to, `worker::parent`).
fn on_signal(stop: Stop) {
    if INTERRUPTED.load(Ordering::SeqCst) {
        crate::terminal::tell(&format!("{} again: stopping now", stop.name()));
        std::process::exit(stop.exit_code().into());
    }
    SIGNAL.store(stop.number(), Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
    match stop {
        Stop::Interrupt => crate::terminal::tell(
            "interrupted: stopping after the finished cells (Ctrl-C again to quit now)",
        ),
        other => crate::terminal::tell(&format!(
            "{}: stopping after the finished cells (a second signal quits now)",
            other.name()
        )),
    }
}

/// Whether the run is stopping, counting a process that `status` says a stopping signal
/// ended (a worker, a priming process) as stopped with the run where the runner gets
/// the signal within [`SAME_SIGNAL_WAIT`].
pub(super) fn stopping(status: Option<&ExitStatus>) -> bool {
    let signalled = status.and_then(|s| s.signal()).and_then(Stop::of).is_some();
    let start = Instant::now();
    while signalled && !INTERRUPTED.load(Ordering::SeqCst) && start.elapsed() < SAME_SIGNAL_WAIT {
        std::thread::sleep(Duration::from_millis(10));
    }
    INTERRUPTED.load(Ordering::SeqCst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_signal_exits_as_a_shell_reports_it() {
        let codes = [Stop::Interrupt, Stop::Terminate, Stop::HangUp].map(Stop::exit_code);
        assert_eq!(codes, [130, 143, 129]);
        assert_eq!(Stop::of(SIGTERM), Some(Stop::Terminate));
        assert_eq!(Stop::of(signal_hook::consts::SIGKILL), None);
        assert_eq!(Stop::HangUp.said(), "stopped by SIGHUP");
    }
}
