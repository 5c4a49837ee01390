//! A worker never outlives the runner that started it: a runner killed outright (SIGKILL,
//! the OOM killer, a second Ctrl-C) would otherwise leave it running its cells on the GPU
//! for nobody, in its own process group. The kernel sends the worker SIGKILL when its
//! parent dies (the parent-death signal, asked for at its start); the runner's pid, which
//! the runner passes (`__worker --parent PID`), closes the race of a runner that died
//! before that; and before each cell the worker checks that the runner is still there.

use crate::files;
use rustix::process::{getppid, set_parent_process_death_signal, Pid, Signal};
use std::path::Path;

/// Ancestors looked through for the runner: ncu, its launcher, a shell.
const MAX_DEPTH: usize = 16;

/// The runner that started this worker.
pub struct Parent {
    runner: Pid,
}

impl Parent {
    /// Asks the kernel for SIGKILL when the parent dies, where the parent is the runner
    /// (`runner`: its pid as passed, else this process's parent); None where the runner
    /// is already gone. Under Nsight Compute the parent is ncu, and the signal follows it.
    pub fn watch(runner: Option<u32>) -> Option<Parent> {
        let parent = getppid();
        let runner = match runner {
            Some(pid) => Pid::from_raw(i32::try_from(pid).ok()?)?,
            None => parent?,
        };
        if parent == Some(runner) {
            // Where the kernel refuses, the check before each cell still stands.
            let _ = set_parent_process_death_signal(Some(Signal::KILL));
        }
        let watched = Parent { runner };
        watched.alive().then_some(watched)
    }

    /// Whether the runner is still this worker's parent or an ancestor: an orphan is
    /// adopted by init or a subreaper, never by a process that was not its ancestor.
    pub fn alive(&self) -> bool {
        let mut pid = getppid();
        for _ in 0..MAX_DEPTH {
            match pid {
                Some(p) if p == self.runner => return true,
                Some(p) if p != Pid::INIT => pid = parent_of(p),
                _ => return false,
            }
        }
        false
    }

    /// Ends the worker at once where the runner is gone: nobody would read its cells.
    pub fn leave_if_gone(&self) {
        if !self.alive() {
            crate::terminal::tell("the runner that started this worker is gone: stopping");
            std::process::exit(1);
        }
    }
}

/// `pid`'s parent, from `/proc/PID/stat`: the field after the state, which follows the
/// command's name in parentheses (a name that may hold spaces and parentheses itself).
fn parent_of(pid: Pid) -> Option<Pid> {
    let path = format!("/proc/{}/stat", pid.as_raw_pid());
    let stat = files::read(Path::new(&path), 4096).ok()?;
    let stat = String::from_utf8_lossy(&stat);
    let after_name = &stat[stat.rfind(')')? + 1..];
    let ppid = after_name.split_whitespace().nth(1)?.parse().ok()?;
    Pid::from_raw(ppid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_its_parent_and_init_as_ancestors_and_not_itself() {
        let me = Pid::from_raw(std::process::id() as i32).unwrap();
        assert_eq!(parent_of(me), getppid());
        let parent = Parent {
            runner: getppid().unwrap(),
        };
        assert!(parent.alive());
        let itself = Parent { runner: me };
        assert!(!itself.alive(), "a process is not its own ancestor");
    }
}
