//! `queue = "saturate"`'s wait kernel, before each timed region so that the region's work is
//! already queued when its start event fires: one the host releases once the region is
//! enqueued (NVBench's blocking kernel), or one of a set length. The timer enqueues it
//! (`timer::behind_wait`).

use cuda::{CudaError, DeviceBuffer, Event, HostFlag, Launch};

/// A wait kernel enqueued before each timed region, so the region's work is already queued
/// when its start event fires (seed 002's sleep kernel; NVBench's blocking kernel): one the
/// host releases once the region is enqueued, or one of a set length.
pub struct Saturate<'b> {
    pub wait: Launch<'b>,
    pub(super) done: Event,
    pub(super) release: Option<Release<'b>>,
    /// Of a wait of a set length, timed regions (replays, for a graph read in parts) whose
    /// wait had ended before their work was enqueued (too short a wait).
    pub too_short: u64,
}

/// What releases a wait kernel from the host: the flag it polls, the ticket last written
/// (each region's wait ends once the flag reaches its own), and the device's count of the
/// waits that gave up on the host (`RELEASE_TIMEOUT_NS`).
pub(super) struct Release<'b> {
    pub(super) flag: &'b HostFlag,
    pub(super) ticket: u64,
    timeouts: &'b DeviceBuffer,
}

/// How long a wait for the host's release spins before it gives up (and is counted): far
/// longer than enqueueing any region takes, short enough that a host that died leaves no
/// kernel spinning for long.
pub const RELEASE_TIMEOUT_NS: u64 = 100_000_000;

impl<'b> Saturate<'b> {
    /// A wait of a set length (its second parameter, in ns).
    pub fn new(wait: Launch<'b>) -> Result<Saturate<'b>, CudaError> {
        Ok(Saturate {
            wait,
            done: Event::new()?,
            release: None,
            too_short: 0,
        })
    }

    /// A wait the host releases through `flag`; `timeouts` (zeroed) counts the waits that
    /// gave up on it.
    pub fn released_by(
        wait: Launch<'b>,
        flag: &'b HostFlag,
        timeouts: &'b DeviceBuffer,
    ) -> Result<Saturate<'b>, CudaError> {
        Ok(Saturate {
            release: Some(Release {
                flag,
                ticket: 0,
                timeouts,
            }),
            ..Saturate::new(wait)?
        })
    }

    /// Whether the host releases the wait.
    pub fn released(&self) -> bool {
        self.release.is_some()
    }

    /// The regions whose wait went wrong: too short for a wait of a set length; for one the
    /// host releases, those that gave up on the host (read from the device, after the
    /// samples).
    pub fn missed(&self) -> Result<u64, CudaError> {
        match &self.release {
            None => Ok(self.too_short),
            Some(r) => {
                let bytes = r.timeouts.download()?;
                Ok(u64::from(u32::from_ne_bytes(
                    bytes[..4].try_into().expect("a 4-byte count"),
                )))
            }
        }
    }
}
