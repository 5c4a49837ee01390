//! One launch read by CUDA events behind a wait kernel, less their reading of an empty kernel
//! behind the same wait: what the GPU took for it, without the host's launch, which events
//! on an idle queue would hold (the weaker audit's launch; each launch alone after an audited
//! region of several, which a kernel that shares a region's work out among its launches
//! must do whole).

use super::super::failure::{during, Failure};
use super::super::kernels::KernelKey;
use super::super::session::Session;
use crate::experiment::knobs::timer::TimerKind;
use crate::method::timer::{Body, Timer};
use crate::method::wait::Saturate;
use crate::statistics::median;
use cuda::{DeviceBuffer, Dims, Function, Launch, Param};

/// How long the wait kernel ahead of the launch spins: far longer than the host takes to
/// enqueue an event, a launch and an event; where the host still took longer (seen once on an
/// H200, for a region of a copy in, a kernel and a copy out), the launch is timed again behind
/// a wait twenty times as long.
const WAITS_NS: [u64; 2] = [50_000, 1_000_000];
/// Readings of an empty kernel the events' floor is the median of.
const FLOOR_READINGS: usize = 3;

/// The single launches checked on audited regions' draws (`among::checks`): how many ran,
/// each one's reading where its wait held it, and the wait kernel they are read behind (made
/// at the first).
#[derive(Default)]
pub(super) struct LaunchesAlone {
    pub(super) ran: u64,
    pub(super) read_ns: Vec<f64>,
    pub(super) timer: Option<BehindAWait>,
}

/// The wait kernel, the empty one and the events' floor behind each wait (read at its first
/// use, then kept: it is the events' own, not the kernel's).
pub(super) struct BehindAWait {
    spin: Function,
    empty: Function,
    wait_out: DeviceBuffer,
    floors_ns: [Option<f64>; 2],
}

impl BehindAWait {
    /// Loads the wait and empty kernels. The empty kernel's first launch loads it here, so
    /// that nothing but the wait lies between what a caller runs first and the launch.
    pub(super) fn new(s: &mut Session) -> Result<BehindAWait, Failure> {
        let spin = s.kernels.function(KernelKey::Spin, &mut s.timeline)?;
        let empty = s.kernels.function(KernelKey::Empty, &mut s.timeline)?;
        let mut bare = Launch::new(&empty, Dims::ONE, &[]);
        bare.enqueue().map_err(during("audit: the events' floor"))?;
        Ok(BehindAWait {
            spin,
            empty,
            wait_out: DeviceBuffer::alloc(4)?,
            floors_ns: [None; 2],
        })
    }

    /// `launch` read once behind the wait, `before` run just before it (the resets, the
    /// flush: the timed launches' state; the events' floor, read at the first use, comes
    /// first); where the host outlasted the wait, again behind the longer one, `before` run
    /// again. The reading less the floor, and whether the last wait still ran dry (the
    /// reading then holds the host's launch).
    pub(super) fn time(
        &mut self,
        launch: &mut Launch,
        mut before: impl FnMut() -> Result<(), Failure>,
        what: &'static str,
    ) -> Result<(f64, bool), Failure> {
        let one = Body::Launches {
            n: 1,
            resets: vec![],
        };
        let mut reading = (0.0, true);
        for (at, wait_ns) in WAITS_NS.into_iter().enumerate() {
            let values = [Param::Buffer(&self.wait_out), Param::u64(wait_ns)];
            let wait = Saturate::new(Launch::new(&self.spin, Dims::ONE, &values))?;
            let mut events = Timer::new(TimerKind::Events, Some(wait), 1, None)?;
            let floor = match self.floors_ns[at] {
                Some(ns) => ns,
                None => {
                    let mut bare = Launch::new(&self.empty, Dims::ONE, &[]);
                    let floor: Vec<f64> = (0..FLOOR_READINGS)
                        .map(|_| events.time(&mut bare, &one, 0))
                        .collect::<Result<_, _>>()
                        .map_err(during("audit: the events' floor"))?;
                    *self.floors_ns[at].insert(median(floor).unwrap_or_default())
                }
            };
            before()?;
            let ns = events.time(launch, &one, 0).map_err(during(what))?;
            let dry = events.saturate.as_ref().is_some_and(|w| w.too_short > 0);
            reading = ((ns - floor).max(0.0), dry);
            if !dry {
                break;
            }
        }
        Ok(reading)
    }
}
