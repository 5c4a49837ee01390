//! `queue`, `queue_wait_us`: the stream's state when a timed launch is enqueued.

use super::timer::TimerKind;
use super::knob::{Aspect, Key, Knob, Layer};
use crate::experiment::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Queue {
    /// Nothing: the start event fires as soon as it is enqueued, launch latency included.
    #[default]
    Idle,
    /// A device-side wait kernel first, so the timed launch is queued when its start event
    /// fires; `wait_us: None`: the host releases it once the timed region is enqueued (as
    /// NVBench's blocking kernel), else it spins that long.
    Saturate { wait_us: Option<u64> },
}

impl Queue {
    /// Whether a reading under `timer` holds the host's launch time: a host timer's always,
    /// events' on an idle queue, where the start event fires before the launch arrives.
    /// That time moves between runs by about a microsecond, whatever the kernel.
    pub fn reading_holds_launch_time(self, timer: TimerKind) -> bool {
        match timer {
            TimerKind::Host | TimerKind::HostSync => true,
            TimerKind::Events => self == Queue::Idle,
            TimerKind::Cupti | TimerKind::Profiler => false,
        }
    }

    /// What `runner plan`'s cell table adds to the timed region: the wait kernel before it.
    pub fn plan_text(self) -> Option<String> {
        match self {
            Queue::Idle => None,
            Queue::Saturate { wait_us: Some(w) } => Some(format!("+{w}µs wait")),
            Queue::Saturate { wait_us: None } => Some("+wait".into()),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum QueueKind {
    Idle,
    Saturate,
}

/// The longest wait kernel, in µs (ten seconds).
pub const MAX_QUEUE_WAIT_US: i64 = 10_000_000;

impl Knob for Queue {
    const KEYS: &'static [Key] = &[
        Key::set(
            "queue",
            r#""idle""#,
            r#"or "saturate": a wait kernel first, so the timed launch is queued when its start
            event fires (events only)"#,
        ),
        Key::commented(
            "queue_wait_us",
            "500",
            "the wait's length; default: none, the host releases the wait once the timed launch is enqueued",
        ),
    ];
    const ASPECT: Aspect = Aspect::Method;

    fn read(layer: &Layer) -> Result<Self, ConfigError> {
        let wait_us = layer.int("queue_wait_us", 1..=MAX_QUEUE_WAIT_US)?.map(|n| n as u64);
        match layer.get("queue")?.unwrap_or(QueueKind::Idle) {
            QueueKind::Idle => match wait_us {
                Some(_) => Err(layer.err_at(
                    "queue_wait_us",
                    "queue_wait_us needs queue = \"saturate\"",
                )),
                None => Ok(Queue::Idle),
            },
            QueueKind::Saturate => {
                let timer: TimerKind = layer.get("timer")?.unwrap_or_default();
                if timer != TimerKind::Events {
                    return Err(layer
                        .err_at(
                            "queue",
                            format!(
                                "queue = \"saturate\" needs timer = \"events\", not \"{}\"",
                                timer.key()
                            ),
                        )
                        .with_hint("a host timer would time the wait kernel too"));
                }
                Ok(Queue::Saturate { wait_us })
            }
        }
    }

    fn describe(&self) -> Option<String> {
        match self {
            Queue::Idle => None,
            Queue::Saturate { wait_us: Some(w) } => Some(format!("behind a {w} µs wait kernel")),
            Queue::Saturate { wait_us: None } => Some("behind a wait kernel".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::read;
    use super::*;

    #[test]
    fn only_host_timers_and_events_on_an_idle_queue_hold_the_launch_time() {
        let saturated = Queue::Saturate { wait_us: None };
        assert!(Queue::Idle.reading_holds_launch_time(TimerKind::Events));
        assert!(Queue::Idle.reading_holds_launch_time(TimerKind::HostSync));
        assert!(!saturated.reading_holds_launch_time(TimerKind::Events));
        assert!(!Queue::Idle.reading_holds_launch_time(TimerKind::Cupti));
        assert!(!Queue::Idle.reading_holds_launch_time(TimerKind::Profiler));
    }

    #[test]
    fn a_saturated_queue_needs_events_and_a_wait_needs_saturation() {
        assert_eq!(
            read::<Queue>("queue = \"saturate\"\nqueue_wait_us = 500").unwrap(),
            Queue::Saturate { wait_us: Some(500) }
        );
        assert!(read::<Queue>("queue = \"saturate\"\ntimer = \"host\"").is_err());
        assert!(read::<Queue>("queue_wait_us = 5").is_err());
    }
}
