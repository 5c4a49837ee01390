//! `timer`: how a sample's time is taken.

use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerKind {
    /// Host clock around the launch call only: measures the enqueue (the post's "wrong" timer).
    Host,
    /// Host clock around the launch and a context synchronize.
    HostSync,
    /// CUDA events recorded on the stream before and after the launch.
    #[default]
    Events,
    /// The kernel's own start and end on the GPU, from CUPTI's activity records.
    Cupti,
    /// Nsight Compute's `gpu__time_duration` of each launch, the worker run under `ncu`.
    Profiler,
}

impl TimerKind {
    /// The timers the floor reads an empty kernel with.
    pub const ALL: [TimerKind; 5] = [
        TimerKind::Host,
        TimerKind::HostSync,
        TimerKind::Events,
        TimerKind::Cupti,
        TimerKind::Profiler,
    ];

    pub fn key(self) -> &'static str {
        match self {
            TimerKind::Host => "host",
            TimerKind::HostSync => "host_sync",
            TimerKind::Events => "events",
            TimerKind::Cupti => "cupti",
            TimerKind::Profiler => "profiler",
        }
    }

    /// Whether a sample's value is known as soon as it is taken (not from records later).
    pub fn reads_each_sample(self) -> bool {
        !matches!(self, TimerKind::Cupti | TimerKind::Profiler)
    }
}

impl Knob for TimerKind {
    const KEYS: &'static [Key] = &[Key::set(
        "timer",
        r#""events""#,
        r#""host" (around the launch call only) | "host_sync" | "events" | "cupti": the
        kernel's span from CUPTI activity records (with steps, `then`: from the first
        launch's start to the last's end) (libcupti from RUNNER_CUPTI, the CUDA toolkit or
        LD_LIBRARY_PATH) | "profiler": Nsight Compute's gpu__time_duration per launch and its
        SM clock, for cycles (the worker runs under ncu, --clock-control none; skipped, with
        a note, without ncu)"#,
    )];
    const ASPECT: Aspect = Aspect::Timer;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        Ok(layer.get("timer")?.unwrap_or_default())
    }

    fn describe(&self) -> Option<String> {
        Some(
            match self {
                TimerKind::Host => "host timer around the launch call (no sync)",
                TimerKind::HostSync => "host timer around launch + context synchronize",
                TimerKind::Events => "CUDA events around the launch",
                TimerKind::Cupti => "the kernel's span from CUPTI activity records",
                TimerKind::Profiler => "Nsight Compute's gpu__time_duration of each launch",
            }
            .into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn events_by_default_and_a_typo_lists_the_timers() {
        assert_eq!(read::<TimerKind>("").unwrap(), TimerKind::Events);
        assert_eq!(
            read::<TimerKind>("timer = \"cupti\"").unwrap(),
            TimerKind::Cupti
        );
        let e = read::<TimerKind>("timer = \"evnts\"").unwrap_err().to_string();
        assert!(e.contains("evnts") && e.contains("host_sync"), "{e}");
    }
}
