//! The run's progress bar: cells done, and the time left by the plan's estimate, refined
//! as runs end; what a cell reports on the way is said above it.

use crate::plan::cost::seconds;
use indicatif::{ProgressBar, ProgressState, ProgressStyle};

/// A bar that counts the plan's estimate in milliseconds, each run by its weight.
pub fn bar() -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {prefix} cells, {left} {msg}")
            .expect("valid template")
            .with_key("left", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                let (done, all) = (s.pos() as f64 / 1e3, s.len().unwrap_or(0) as f64 / 1e3);
                let _ = write!(w, "{}", left(done, all, s.elapsed().as_secs_f64()));
            })
            .progress_chars("=> "),
    );
    bar
}

/// NVRTC's warnings where a cell compiled its kernel, on standard error above the bar:
/// once per build a process compiles (a run's later processes read the image), as its
/// record keeps them.
pub fn say_compile_warnings(bar: &ProgressBar, cell: &str, warnings: &[String]) {
    if !warnings.is_empty() {
        bar.suspend(|| {
            crate::terminal::tell(&format!(
                "warning: NVRTC warned compiling the kernel of {cell}:\n  {}",
                warnings.join("\n  ")
            ))
        });
    }
}

/// The time left, `done` of `all` estimated seconds done after `elapsed`: until a first run
/// ends the plan's estimate less the time gone, then the estimate of what is left scaled by
/// how the runs so far went against theirs.
fn left(done: f64, all: f64, elapsed: f64) -> String {
    let rest = (all - done).max(0.0);
    match done > 0.0 {
        false => format!(
            "about {} left by the plan",
            seconds((all - elapsed).max(0.0))
        ),
        true => format!("about {} left", seconds(rest * elapsed / done)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_is_the_plans_until_a_run_ends_then_scaled_by_how_runs_went() {
        assert_eq!(left(0.0, 100.0, 10.0), "about 90.0 s left by the plan");
        // A quarter of the estimate done in twice its time: the rest takes twice as long too.
        assert_eq!(left(25.0, 100.0, 50.0), "about 2.5 min left");
        assert_eq!(left(100.0, 100.0, 80.0), "about 0.0 s left");
    }
}
