//! `runner compare OLD NEW`: the cells of two runs set against each other, as a gate.

use super::exit_code::finish;
use crate::cli::{exit, say};
use crate::{compare, report};
use std::path::Path;
use std::process::ExitCode;

/// `runner compare`: exit 0 when every cell of OLD compared and none got slower beyond
/// the threshold, 2 when one got slower, 4 when NEW lacks a cell OLD measured or a cell of
/// NEW did not end as its kernel expects (failed, suspect, impossible; before 2), 1 on
/// error.
pub(super) fn compare(
    old: &Path,
    new: &Path,
    threshold: f64,
    floor: f64,
    json: Option<&Path>,
) -> ExitCode {
    let said = report::run_compare(old, new, threshold, floor, json)
        .and_then(|c| say(&c.markdown).map(|()| c).map_err(Into::into));
    match said {
        Ok(c) if c.gate == compare::Gate::Pass => ExitCode::from(exit::OK),
        Ok(c) if c.gate == compare::Gate::Slower => ExitCode::from(exit::SLOWER),
        Ok(c) => {
            crate::terminal::tell(&format!(
                "error: the comparison is incomplete: {}",
                c.incomplete
            ));
            ExitCode::from(exit::INCOMPLETE)
        }
        Err(e) => finish(Err(e)),
    }
}
