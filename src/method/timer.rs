//! One timed sample per call. Each timed region holds only what its timer names: one launch,
//! `batch` launches back to back, or one replay of a graph of launches. The synchronize that
//! ends a host-timer sample, and a `queue = "saturate"` wait kernel, lie outside it. In an
//! audited batch or graph, an event after the region's first launch reads that launch too
//! (CUPTI reads each launch anyway): a kernel that does its work only on a region's first
//! launch shows there.

use super::spans::{apart, cupti_reading, kernel_medians, Places, SoFar};
use super::wait::Saturate;
use crate::experiment::knobs::timer::TimerKind;
use crate::protocol::CuptiRecord;
use crate::statistics::median;
use cuda::{cupti, synchronize, CudaError, Event, Graph, Launch, Param, Resets};
use std::time::Instant;

/// What one timed region runs.
pub enum Body<'b> {
    /// `n` launches of the kernel, back to back. With `resets` (a batch of a kernel with
    /// `reset` buffers; per buffer set), each launch comes after the resets of the set it
    /// takes, and a reading is those pairs less the resets alone. A single launch has its
    /// resets before the region instead (none here).
    Launches { n: u64, resets: Vec<Resets<'b>> },
    /// One replay of a graph holding `n` launches.
    Graph(Graph<'b>, u64),
    /// A graph of `n` launches each after its preludes (the buffer resets, then an L2
    /// flush), and one of the `n` preludes alone: every launch meets reset buffers and a
    /// flushed L2 where the cell asks, and a reading is the pairs' replay less the preludes'.
    PreludedGraph {
        pairs: Graph<'b>,
        preludes: Graph<'b>,
        n: u64,
    },
    /// A graph of `n` flush and launch pairs with event nodes around each launch, and two
    /// graphs of `n` launches alone, one with the same nodes and one with a node before the
    /// first and after the last: a reading is the nodes' median span in the pairs less what
    /// the nodes add to a hot launch.
    NodeTimedGraph {
        pairs: Graph<'b>,
        hot_marked: Graph<'b>,
        hot: Graph<'b>,
        marks: &'b [(Event, Event)],
        whole: &'b (Event, Event),
        n: u64,
    },
}

impl Body<'_> {
    /// Launches per region: a reading is divided by this.
    pub fn launches(&self) -> u64 {
        match self {
            Body::Launches { n, .. }
            | Body::Graph(_, n)
            | Body::PreludedGraph { n, .. }
            | Body::NodeTimedGraph { n, .. } => *n,
        }
    }

    /// Launches of the kernel one timed sample makes (a node-timed graph replays its
    /// launches three times: flushed, hot between nodes, hot whole).
    pub fn kernel_launches(&self) -> u64 {
        match self {
            Body::NodeTimedGraph { n, .. } => 3 * n,
            other => other.launches(),
        }
    }

    /// Graphs the region replays, each captured with all its launches (none in a batch).
    pub fn graphs(&self) -> u64 {
        match self {
            Body::Launches { .. } => 0,
            Body::Graph(..) => 1,
            Body::PreludedGraph { .. } => 2,
            Body::NodeTimedGraph { .. } => 3,
        }
    }

    /// Enqueues the region's work (of a preluded graph: the pairs; of a batch with
    /// resets, each launch after the resets of buffer set `set`), a batch's `first` event
    /// recorded after its first launch (a graph holds its own).
    #[inline]
    fn enqueue(
        &self,
        launch: &mut Launch,
        set: usize,
        first: Option<&Event>,
    ) -> Result<(), CudaError> {
        match self {
            Body::Launches { n, resets } => {
                for i in 0..*n {
                    reset(resets, set)?;
                    launch.enqueue()?;
                    if let (0, Some(e)) = (i, first) {
                        e.record()?;
                    }
                }
                Ok(())
            }
            Body::Graph(g, _)
            | Body::PreludedGraph { pairs: g, .. }
            | Body::NodeTimedGraph { pairs: g, .. } => g.launch(),
        }
    }
}

/// Enqueues the resets of buffer set `set`, where there are any.
#[inline]
fn reset(resets: &[Resets], set: usize) -> Result<(), CudaError> {
    if let Some(list) = resets.get(set) {
        for (buf, fill) in list {
            buf.fill_with_async(*fill)?;
        }
    }
    Ok(())
}

/// Replays `graph` (behind the wait kernel, where there is one) and returns the median time,
/// in ns, between the two nodes of each pair of `marks` it recorded, and the first pair's.
fn node_median(
    saturate: &mut Option<Saturate>,
    graph: &Graph,
    marks: &[(Event, Event)],
) -> Result<(f64, f64), CudaError> {
    behind_wait(saturate, || graph.launch())?;
    synchronize()?;
    let spans = marks
        .iter()
        .map(|(a, b)| Ok(b.elapsed_ms_since(a)? as f64 * 1e6))
        .collect::<Result<Vec<f64>, CudaError>>()?;
    let first = spans.first().copied().unwrap_or(f64::NAN);
    let median =
        median(spans).ok_or_else(|| CudaError::Library("a graph without event nodes".into()))?;
    Ok((median, first))
}

/// Enqueues the wait kernel, where there is one, then `region`. A wait the host releases is
/// released once `region` is enqueued (or failed to be: the wait must end either way); of a
/// wait of a set length, one that had ended before `region` was enqueued is counted, when
/// the region's start may have met an empty queue.
#[inline]
fn behind_wait(
    saturate: &mut Option<Saturate>,
    region: impl FnOnce() -> Result<(), CudaError>,
) -> Result<(), CudaError> {
    if let Some(s) = saturate.as_mut() {
        if let Some(r) = s.release.as_mut() {
            r.ticket += 1;
            s.wait.set_param(1, Param::u64(r.ticket));
        }
        s.wait.enqueue()?;
        // Only a wait of a set length can end too soon: the event tells when it did.
        if s.release.is_none() {
            s.done.record()?;
        }
    }
    let enqueued = region();
    if let Some(s) = saturate.as_mut() {
        match &s.release {
            Some(r) => r.flag.set(r.ticket),
            None if s.done.done() => s.too_short += 1,
            None => {}
        }
    }
    enqueued
}

/// What a timer needs, created once per cell outside any timed region.
pub struct Timer<'b> {
    kind: TimerKind,
    start: Event,
    stop: Event,
    pub saturate: Option<Saturate<'b>>,
    launches_per_sample: u64,
    /// CUPTI's kernel records, while they are collected.
    collector: Option<cupti::Collector>,
    /// In an audited batch or graph read by events: the event after each region's first
    /// launch (a graph's node), and the last region's first launch, in ns from its start
    /// (NaN where none was read).
    first: Option<&'b Event>,
    pub first_ns: f64,
}

/// A cell's timed launches as its timer finally reads them.
pub struct Readings {
    pub first_ns: f64,
    pub samples_ns: Vec<f64>,
    /// The audit's regions among them (`worker::audit`), in order.
    pub audits_ns: Vec<f64>,
    /// Under CUPTI, in a region of several launches: each timed region's first launch (the
    /// first timed region's too), and each of the audit's regions'.
    pub firsts_ns: Vec<f64>,
    pub audit_firsts_ns: Vec<f64>,
    /// Under CUPTI: the gap on the GPU before each of the audit's regions (from the end of
    /// the kernel's launch before it), and the median gap before the steady samples.
    pub audit_gaps_ns: Vec<f64>,
    pub timed_gap_ns: Option<f64>,
    /// What CUPTI said beside the spans (`timer = "cupti"`).
    pub cupti: Option<CuptiRecord>,
}

impl<'b> Timer<'b> {
    /// `first`: the event a batch records after its first launch, or a graph holds as its
    /// node after it (events only).
    pub fn new(
        kind: TimerKind,
        saturate: Option<Saturate<'b>>,
        launches_per_sample: u64,
        first: Option<&'b Event>,
    ) -> Result<Timer<'b>, CudaError> {
        Ok(Timer {
            kind,
            start: Event::new()?,
            stop: Event::new()?,
            saturate,
            launches_per_sample,
            collector: None,
            first: first.filter(|_| kind == TimerKind::Events && launches_per_sample > 1),
            first_ns: f64::NAN,
        })
    }

    /// Starts collecting CUPTI's kernel records, and with `copies` its copy records (before
    /// the warm-up, so that the warm-up, not a timed launch, absorbs CUPTI's start-up).
    pub fn collect(&mut self, copies: bool) -> Result<(), CudaError> {
        self.collector = Some(cupti::Collector::start(copies)?);
        Ok(())
    }

    /// The readings of the timed launches: the values taken as they ran (host and events
    /// timers), the spans of the kernels `entries` from CUPTI's records (one per launch of
    /// the kernel and its steps, from the first's start to the last's end; averaged per
    /// sample), or NaN where the profiler's report gives them later. `audits`: the audit's
    /// regions among the timed ones (audited and decoys), each as its place among all
    /// regions (the first timed one is 0) and its reading, and `untimed` ([`Places`]).
    pub fn finish(
        &mut self,
        entries: &[String],
        first_ns: f64,
        samples_ns: Vec<f64>,
        (audits, untimed): Places,
    ) -> Result<Readings, CudaError> {
        let launches = self.launches_per_sample;
        match (self.kind, self.collector.take()) {
            (TimerKind::Cupti, Some(c)) => {
                let regions = 1 + samples_ns.len() + audits.len() + untimed.len();
                let spans = c.finish(entries, regions * launches as usize)?;
                let mut reading = cupti_reading(&spans.launches, launches);
                reading.record.kernels = spans
                    .kernels
                    .map(|k| kernel_medians(&k))
                    .unwrap_or_default();
                let split = |per: &[f64]| apart(per, (audits, untimed));
                let (audits_ns, timed) = split(&reading.per_sample);
                let (audit_gaps_ns, timed_gaps) = split(&reading.gaps);
                let (audit_firsts_ns, firsts_ns) = match launches > 1 {
                    true => split(&reading.firsts),
                    false => (Vec::new(), Vec::new()),
                };
                Ok(Readings {
                    first_ns: timed[0],
                    samples_ns: timed[1..].to_vec(),
                    audits_ns,
                    firsts_ns,
                    audit_firsts_ns,
                    audit_gaps_ns,
                    timed_gap_ns: median(timed_gaps.get(1..).unwrap_or_default().to_vec()),
                    cupti: Some(reading.record),
                })
            }
            _ => Ok(Readings {
                first_ns,
                samples_ns,
                audits_ns: audits.iter().map(|(_, t)| *t).collect(),
                firsts_ns: Vec::new(),
                audit_firsts_ns: Vec::new(),
                audit_gaps_ns: Vec::new(),
                timed_gap_ns: None,
                cupti: None,
            }),
        }
    }

    /// Between two timed regions, the regions so far as [`Timer::finish`] will read them, from
    /// CUPTI's records of the last `regions` (the first timed one, the steady ones and the
    /// audit's regions among them, each at its place): the steady samples, and the audit's
    /// regions in their order. None where the timer reads each sample as it runs, or reads
    /// them after the cell (the profiler). Single launches only (every region holds one).
    pub fn so_far(
        &self,
        entries: &[String],
        regions: usize,
        places: Places,
    ) -> Result<Option<SoFar>, CudaError> {
        let (TimerKind::Cupti, Some(c), 1) = (self.kind, &self.collector, self.launches_per_sample)
        else {
            return Ok(None);
        };
        let spans = c.so_far(entries, regions)?;
        let (audits_ns, timed) = apart(&cupti_reading(&spans.launches, 1).per_sample, places);
        let steady = timed.get(1..).unwrap_or_default().to_vec();
        Ok(Some((steady, audits_ns)))
    }

    /// Times one region on buffer set `set` and returns nanoseconds per launch; the GPU is
    /// idle again when it returns. CUPTI and profiler samples read NaN here: their values
    /// come afterwards.
    #[inline]
    pub fn time(&mut self, launch: &mut Launch, body: &Body, set: usize) -> Result<f64, CudaError> {
        let per = body.launches() as f64;
        let first = self.first;
        self.first_ns = f64::NAN;
        match body {
            // The resets alone, timed as the pairs were, are taken off.
            Body::Launches { n, resets } if !resets.is_empty() => {
                let with = self.time_region(&mut || body.enqueue(launch, set, first))?;
                self.read_first()?;
                let alone =
                    self.time_region(&mut || (0..*n).try_for_each(|_| reset(resets, set)))?;
                Ok((with - alone) / per)
            }
            // Two regions, each with its own wait kernel where the queue is saturated.
            Body::PreludedGraph {
                pairs, preludes, ..
            } => {
                let with = self.time_region(&mut || pairs.launch())?;
                self.read_first()?;
                let alone = self.time_region(&mut || preludes.launch())?;
                Ok((with - alone) / per)
            }
            // Nodes time the launches inside the replays, so no submission counts; the hot
            // graph's launches between two nodes say what the nodes around each one add.
            // Each replay waits behind the wait kernel, queued whole before it runs (where
            // the wait outlasts the submission: `too_short` counts those it did not).
            Body::NodeTimedGraph {
                pairs,
                hot_marked,
                hot,
                marks,
                whole,
                ..
            } => {
                behind_wait(&mut self.saturate, || hot.launch())?;
                synchronize()?;
                let hot_whole = whole.1.elapsed_ms_since(&whole.0)? as f64 * 1e6 / per;
                let (hot_nodes, _) = node_median(&mut self.saturate, hot_marked, marks)?;
                let (cold_nodes, cold_first) = node_median(&mut self.saturate, pairs, marks)?;
                let added = hot_nodes - hot_whole;
                self.first_ns = cold_first - added;
                Ok(cold_nodes - added)
            }
            _ => {
                let t = self.time_region(&mut || body.enqueue(launch, set, first))?;
                self.read_first()?;
                Ok(t / per)
            }
        }
    }

    /// The first launch's time in the region just timed, from its start event to the event
    /// after that launch, where the timer marks it.
    fn read_first(&mut self) -> Result<(), CudaError> {
        if let Some(e) = self.first {
            self.first_ns = e.elapsed_ms_since(&self.start)? as f64 * 1e6;
        }
        Ok(())
    }

    /// Times one region whose work `enqueue` enqueues, in nanoseconds.
    #[inline]
    fn time_region(
        &mut self,
        enqueue: &mut dyn FnMut() -> Result<(), CudaError>,
    ) -> Result<f64, CudaError> {
        match self.kind {
            TimerKind::Host => {
                let t0 = Instant::now();
                enqueue()?;
                let elapsed = t0.elapsed();
                synchronize()?;
                Ok(elapsed.as_nanos() as f64)
            }
            TimerKind::HostSync => {
                let t0 = Instant::now();
                enqueue()?;
                synchronize()?;
                Ok(t0.elapsed().as_nanos() as f64)
            }
            TimerKind::Events => {
                let (start, stop) = (&self.start, &self.stop);
                behind_wait(&mut self.saturate, || {
                    start.record()?;
                    enqueue()?;
                    stop.record()
                })?;
                self.stop.synchronize()?;
                Ok(self.stop.elapsed_ms_since(&self.start)? as f64 * 1e6)
            }
            // Their values come afterwards: CUPTI's records, or the profiler's report.
            TimerKind::Cupti | TimerKind::Profiler => {
                enqueue()?;
                synchronize()?;
                Ok(f64::NAN)
            }
        }
    }
}
