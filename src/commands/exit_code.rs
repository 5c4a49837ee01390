//! The exit code a command's result gives, and the mistake in a command line that gives 64:
//! a leaf of the folder, so that the handlers and the front dispatching them both import it.

use crate::cli::{exit, Unwritten};
use std::process::ExitCode;

/// A mistake in the command line that clap cannot see.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Usage(String);

pub(super) fn usage(message: &str) -> anyhow::Error {
    Usage(message.to_string()).into()
}

/// The exit code: 0 when done, 130 after an interrupt (its report still written; 143 and
/// 129 where SIGTERM and SIGHUP stopped a run, see [`ended`]), 64 for a wrong command
/// line, 141 without a word where standard output's reader went away (`| head`), 1 on any
/// other error (a full disk under standard output too).
pub(super) fn finish(result: anyhow::Result<bool>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::from(exit::OK),
        Ok(false) => ExitCode::from(exit::INTERRUPTED),
        Err(e) if e.downcast_ref::<Unwritten>().is_some_and(Unwritten::closed) => {
            ExitCode::from(exit::BROKEN_PIPE)
        }
        Err(e) => {
            // A stderr that takes nothing (a full disk) leaves the exit code to say it.
            let _ =
                std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("error: {e:#}\n"));
            ExitCode::from(match e.is::<Usage>() {
                true => exit::USAGE,
                false => exit::ERROR,
            })
        }
    }
}
