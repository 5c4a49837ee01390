//! A cell's second step: its launch made ready to time, with its parameters per buffer set,
//! the L2 flush, the graphs or batch one timed region runs, the timer and the warm-up launch;
//! and each timed region's turn (buffer set, fresh data, resets, flush).

use super::assemble::{add_steps, copy_launch, dims_of, taken};
use super::buffers::{Buffers, Prepare};
use super::failure::{during, Failure};
use super::kernels::KernelKey;
use super::prepare::{Code, Data, ReadyCell};
use super::session::Session;
use super::timeline::Timeline;
use crate::experiment::knobs::flushed_graph::FlushedGraph;
use crate::experiment::knobs::{
    cache::{Cache, FlushMethod},
    launches::Launches,
    queue::Queue,
    timer::TimerKind,
    warmup::WarmupKernel,
};
use crate::method::{
    flush::{Flush, FlushBuffer},
    timer::{Body, Timer},
    wait::{Saturate, RELEASE_TIMEOUT_NS},
};
use crate::plan::Cell;
use cuda::{
    self, AccessWindow, BeforeEachLaunch, CudaError, DeviceBuffer, Dims, Event, Function, Graph,
    HostFlag, Launch, Marks, Param,
};
use std::time::Instant;

/// What the timed launches use beside the buffers, made once per cell: the flush buffer
/// and kernel, the event pairs of a node-timed graph, the wait kernel's output.
pub(super) struct TimingSetup {
    flush: Option<(FlushBuffer, FlushMethod, Option<Function>)>,
    /// Event nodes around each launch of a flushed graph, and around all of a hot one.
    marks: Vec<(Event, Event)>,
    whole: Option<(Event, Event)>,
    /// The event after a region's first launch, in an audited batch or graph read by events.
    first: Option<Event>,
    /// The wait kernel's output: one float nobody reads (a wait of a set length), or the
    /// count of waits that gave up on the host (one the host releases, through `release`).
    wait_out: DeviceBuffer,
    release: Option<HostFlag>,
}

impl TimingSetup {
    /// `among`: whether regions sit among the cell's timed launches (its batches and graphs
    /// then read their first launch apart: an event after it, in every region, timed too,
    /// costs a replay of 20 a few µs on an H200; a cell audited otherwise carries none).
    pub(super) fn make(s: &mut Session, cell: &Cell, among: bool) -> Result<TimingSetup, Failure> {
        let knobs = &cell.knobs;
        let flush = match knobs.cache {
            Cache::Hot => None,
            Cache::Flush { bytes, method } => {
                let kernel = match KernelKey::flush(method) {
                    Some(key) => Some(s.kernels.function(key, &mut s.timeline)?),
                    None => None,
                };
                Some((FlushBuffer::alloc(bytes as usize)?, method, kernel))
            }
        };
        let (marks, whole) = match (knobs.launches, knobs.flushed_graph) {
            (Launches::Graph(n), FlushedGraph::EventNodes) if flush.is_some() => (
                (0..n)
                    .map(|_| Ok((Event::new()?, Event::new()?)))
                    .collect::<Result<Vec<_>, CudaError>>()?,
                Some((Event::new()?, Event::new()?)),
            ),
            _ => (Vec::new(), None),
        };
        let several = knobs.launches.count() > 1 && knobs.timer == TimerKind::Events;
        Ok(TimingSetup {
            flush,
            marks,
            whole,
            first: match among && several {
                true => Some(Event::new()?),
                false => None,
            },
            wait_out: {
                let out = DeviceBuffer::alloc(4)?;
                out.fill(0)?;
                out
            },
            release: match knobs.queue {
                Queue::Saturate { wait_us: None } => Some(HostFlag::new()?),
                _ => None,
            },
        })
    }
}

/// The cell's launch ready to time: its parameters per buffer set, the L2 flush, what one
/// timed region runs, the timer and the warm-up launch.
pub(super) struct Armed<'b> {
    pub(super) params: Vec<Vec<Param<'b>>>,
    /// The names CUPTI finds the cell's launches by: the kernel's, its steps', its copies'.
    pub(super) entries: Vec<String>,
    pub(super) launch: Launch<'b>,
    /// The L2 flush, where the cell asks for one.
    pub(super) flush: Option<Flush<'b>>,
    /// Whether a flush precedes each timed region (a graph captures its own).
    flush_each: bool,
    pub(super) body: Body<'b>,
    /// The audit's regions where they hold fewer launches than a timed one (see
    /// [`Armed::time_audit_region`]), made at the first.
    short: Option<Body<'b>>,
    /// What a timed region holds, and what the shorter regions are made with.
    launches: Launches,
    setup: &'b TimingSetup,
    pub(super) timer: Timer<'b>,
    /// A warm-up kernel other than the measured one (`warmup_kernel = "empty"`).
    pub(super) warm: Option<Launch<'b>>,
    /// The L2 set aside and the window `l2_persist` set, in words, for the record.
    pub(super) window: Option<String>,
    /// Timed regions so far: which buffer set and fresh data the next one takes.
    turn: usize,
}

impl<'b> Armed<'b> {
    pub(super) fn arm(
        s: &mut Session,
        ready: ReadyCell<'b>,
        setup: &'b TimingSetup,
    ) -> Result<Armed<'b>, Failure> {
        let ReadyCell { cell, code, data } = ready;
        let (knobs, spec) = (&cell.knobs, &cell.launch);
        let params: Vec<Vec<Param>> = data.sets.iter().map(|b| b.params(&spec.args)).collect();
        let dims = dims_of(spec);
        let mine = taken(&params[0], code.takes.as_deref());
        let launch = match (code.own_copy, &code.lazy, &code.func) {
            (Some(op), ..) => copy_launch(op, &params[0], 0, 1)?,
            (None, Some((kernel, _)), _) => Launch::lazy(kernel.clone(), dims, &mine),
            (None, None, Some(func)) => Launch::new(func, dims, &mine),
            (None, None, None) => unreachable!("a kernel is loaded or lazy"),
        };
        let mut launch = match &code.takes {
            Some(from) => launch.taking(from.clone()),
            None => launch,
        };
        if let Some(def) = &code.def {
            add_steps(&mut launch, def, spec, &params[0], &code.steps)?;
        }
        let window = match &knobs.l2_persist.0 {
            Some(name) => {
                let (window, said) = persisted(name, code, data)?;
                launch.set_window(window);
                Some(said)
            }
            None => None,
        };
        // CUPTI finds the cell's copies among its records as it finds kernels, by name.
        let mut entries = code.entries.clone();
        entries.extend(launch.copy_records());
        let mut flush = match &setup.flush {
            None => None,
            Some((buf, method, kernel)) => {
                Some(buf.flush(*method, kernel.as_ref(), s.facts.sm_count)?)
            }
        };
        let body = timed_body(
            knobs.launches,
            setup,
            data,
            &params,
            &mut launch,
            &mut flush,
        )?;
        let flush_each = matches!(body, Body::Launches { .. } | Body::Graph(..));
        let saturate = saturate(s, knobs.queue, setup)?;
        let timer = Timer::new(
            knobs.timer,
            saturate,
            knobs.launches.count(),
            setup.first.as_ref(),
        )?;
        let warm = warm_launch(s, knobs.warmup.kernel, code)?;
        Ok(Armed {
            params,
            entries,
            launch,
            flush,
            flush_each,
            body,
            short: None,
            launches: knobs.launches,
            setup,
            timer,
            warm,
            window,
            turn: 0,
        })
    }

    /// Times the next region: the buffer set and fresh data it takes, its resets and the
    /// flush (all outside the timer's region), then the region itself; ns per launch.
    /// `stage`, for an audited region: what it does to the set's buffers after any fresh
    /// data and before the resets and flush (the audit's inputs copied in).
    pub(super) fn time_next(
        &mut self,
        data: &'b Data,
        starts: &mut Starts,
        timeline: Option<&mut Timeline>,
        what: &'static str,
        stage: Option<Prepare>,
    ) -> Result<f64, Failure> {
        let launches = self.body.launches();
        self.time_body(data, starts, timeline, (what, stage), launches)
    }

    /// Makes the body of the audit's regions of `launches` launches where that is fewer than
    /// a timed region's and not made yet (see [`Armed::time_audit_region`]): a shorter batch,
    /// or a graph of its own captured.
    pub(super) fn audit_body(&mut self, data: &'b Data, launches: u64) -> Result<(), Failure> {
        let short = launches != self.body.launches();
        if short && self.short.as_ref().map(Body::launches) != Some(launches) {
            let count = self.launches.with_count(launches);
            let body = timed_body(
                count,
                self.setup,
                data,
                &self.params,
                &mut self.launch,
                &mut self.flush,
            );
            self.short = Some(body.map_err(|f| f.during("audit: a shorter region made"))?);
        }
        Ok(())
    }

    /// Times one of the audit's regions as [`Armed::time_next`] times a timed one, after
    /// `stage` where there is one, holding `launches` launches: fewer than a timed region
    /// where `plan::audit_rounds::region_launches` says so ([`Armed::audit_body`]).
    pub(super) fn time_audit_region(
        &mut self,
        data: &'b Data,
        starts: &mut Starts,
        (what, stage): (&'static str, Option<Prepare>),
        launches: u64,
    ) -> Result<f64, Failure> {
        self.audit_body(data, launches)?;
        self.time_body(data, starts, None, (what, stage), launches)
    }

    /// Launches of the kernel a region of `launches` makes (see [`Body::kernel_launches`]).
    pub(super) fn kernel_launches_of(&self, launches: u64) -> u64 {
        self.body.kernel_launches() / self.body.launches().max(1) * launches
    }

    /// Times a region of `launches`: the timed body, or the audit's shorter one of that count.
    fn time_body(
        &mut self,
        data: &'b Data,
        starts: &mut Starts,
        timeline: Option<&mut Timeline>,
        (what, stage): (&'static str, Option<Prepare>),
        launches: u64,
    ) -> Result<f64, Failure> {
        let batch = matches!(self.body, Body::Launches { .. });
        let mut set = 0;
        if self.params.len() > 1 && batch {
            set = self.turn % self.params.len();
            for (i, v) in self.params[set].iter().enumerate() {
                self.launch.set_param(i, *v);
            }
            self.turn += 1;
        }
        if !data.fresh.is_empty() {
            data.sets[0]
                .refill(&data.fresh[self.turn % data.fresh.len()])
                .map_err(during("copying fresh inputs"))?;
            if self.params.len() == 1 {
                self.turn += 1;
            }
        }
        if let Some(stage) = stage {
            stage(&data.sets[set])?;
            // The copy is done before any timer starts: a host timer's clock would run
            // while it is still on the GPU.
            cuda::synchronize().map_err(during("audit: copying inputs in"))?;
        }
        // A graph or a batch holds its own resets; a flush ends with a synchronize, as a
        // reset before the region must.
        let reset = batch && self.body.launches() == 1 && data.sets[set].resets();
        if reset {
            data.sets[set].reset().map_err(during("buffer reset"))?;
        }
        match self.flush.as_mut().filter(|_| self.flush_each) {
            Some(f) => {
                f.run().map_err(during("L2 flush"))?;
                if let Some(t) = timeline {
                    t.mark("L2 flush");
                }
            }
            None if reset => cuda::synchronize().map_err(during("buffer reset"))?,
            None => {}
        }
        starts.push();
        // A region of `launches`: a timed one, or the audit's shorter one made for it.
        let body = match self.short.as_ref() {
            Some(short) if short.launches() == launches => short,
            _ => &self.body,
        };
        let reading = self.timer.time(&mut self.launch, body, set);
        starts.ended();
        reading.map_err(during(what))
    }
}

/// When each timed region began, in µs on the host clock since the cell's samples began.
pub(super) struct Starts {
    origin: Instant,
    pub(super) at: Vec<f64>,
    /// Each region's host time in its timer, ns: its launch, its kernel and the synchronize
    /// after it (under CUPTI the audit's cue to read its records, `confirm::host_spread_wide`).
    pub(super) host_ns: Vec<f64>,
    began: Instant,
}

impl Starts {
    pub(super) fn new(origin: Instant, capacity: usize) -> Starts {
        Starts {
            origin,
            at: Vec::with_capacity(capacity),
            host_ns: Vec::with_capacity(capacity),
            began: origin,
        }
    }

    fn push(&mut self) {
        self.began = Instant::now();
        let at = self.began.duration_since(self.origin);
        self.at.push(at.as_secs_f64() * 1e6);
    }

    fn ended(&mut self) {
        self.host_ns.push(self.began.elapsed().as_nanos() as f64);
    }
}

/// What one timed region runs: `launches` back to back (a batch after each set's resets),
/// or a graph of them, preluded by the resets and the flush, or read by event nodes.
fn timed_body<'b>(
    launches: Launches,
    setup: &'b TimingSetup,
    data: &'b Data,
    params: &[Vec<Param<'b>>],
    launch: &mut Launch<'b>,
    flush: &mut Option<Flush<'b>>,
) -> Result<Body<'b>, Failure> {
    let resets: Vec<_> = data.sets.iter().map(Buffers::reset_list).collect();
    let has_resets = data.sets[0].resets();
    let first = setup.first.as_ref().map_or(Marks::None, Marks::AfterFirst);
    Ok(match (launches, setup.whole.as_ref()) {
        // With `rotate`, the graph's launches take the buffer sets in turn; with a flush
        // or resets, each comes after them, and the graph is read by event nodes around
        // its launches or against a graph of what comes before them alone.
        (Launches::Graph(n), Some(whole)) => {
            let f = flush.as_mut().expect("event nodes come with a flush");
            // The audit's shorter graph reads its own launches' pairs only.
            let marks = &setup.marks[..(n as usize).min(setup.marks.len())];
            let before = || BeforeEachLaunch {
                resets: &[],
                flush: None,
            };
            Body::NodeTimedGraph {
                pairs: Graph::capture(
                    launch,
                    n,
                    params,
                    BeforeEachLaunch {
                        resets: &[],
                        flush: Some(f.prelude()),
                    },
                    Marks::EachLaunch(marks),
                )?,
                hot_marked: Graph::capture(launch, n, params, before(), Marks::EachLaunch(marks))?,
                hot: Graph::capture(launch, n, params, before(), Marks::Whole(whole))?,
                marks,
                whole,
                n,
            }
        }
        (Launches::Graph(n), None) if flush.is_some() || has_resets => {
            let before = BeforeEachLaunch {
                resets: &resets,
                flush: flush.as_mut().map(Flush::prelude),
            };
            let pairs = Graph::capture(launch, n, params, before, first)?;
            let before = BeforeEachLaunch {
                resets: &resets,
                flush: flush.as_mut().map(Flush::prelude),
            };
            Body::PreludedGraph {
                pairs,
                preludes: Graph::capture_before(before, n)?,
                n,
            }
        }
        (Launches::Graph(n), None) => Body::Graph(
            Graph::capture(launch, n, params, BeforeEachLaunch::nothing(), first)?,
            n,
        ),
        (other, _) => {
            let n = other.count();
            let batched = n > 1 && has_resets;
            Body::Launches {
                n,
                resets: if batched { resets } else { vec![] },
            }
        }
    })
}

/// `queue = "saturate"`: the wait kernel enqueued before each timed region, which the host
/// releases once the region is enqueued, or which spins `queue_wait_us`.
fn saturate<'b>(
    s: &mut Session,
    queue: Queue,
    setup: &'b TimingSetup,
) -> Result<Option<Saturate<'b>>, Failure> {
    Ok(match (queue, setup.release.as_ref()) {
        (Queue::Idle, _) => None,
        (Queue::Saturate { wait_us: None }, Some(flag)) => {
            let wait = s.kernels.function(KernelKey::Release, &mut s.timeline)?;
            let values = [
                Param::Buffer(flag.buffer()),
                Param::u64(0),
                Param::u64(RELEASE_TIMEOUT_NS),
                Param::Buffer(&setup.wait_out),
            ];
            let launch = Launch::new(&wait, Dims::ONE, &values);
            Some(Saturate::released_by(launch, flag, &setup.wait_out)?)
        }
        (Queue::Saturate { wait_us }, _) => {
            let spin = s.kernels.function(KernelKey::Spin, &mut s.timeline)?;
            let ns = wait_us.unwrap_or_default() * 1000;
            let values = [Param::Buffer(&setup.wait_out), Param::u64(ns)];
            Some(Saturate::new(Launch::new(&spin, Dims::ONE, &values))?)
        }
    })
}

/// The warm-up's launch where it is not the measured kernel's own.
fn warm_launch<'b>(
    s: &mut Session,
    kernel: WarmupKernel,
    code: &Code,
) -> Result<Option<Launch<'b>>, Failure> {
    Ok(match (kernel, &code.lazy) {
        (WarmupKernel::Same, _) => None,
        // The post's empty kernel shares the measured kernel's module (a prebuilt module
        // has none: the built-in one stands in).
        (WarmupKernel::Empty, Some((_, Some(empty)))) => {
            Some(Launch::lazy(empty.clone(), Dims::ONE, &[]))
        }
        (WarmupKernel::Empty, _) => Some(Launch::new(
            &s.kernels.function(KernelKey::Empty, &mut s.timeline)?,
            Dims::ONE,
            &[],
        )),
    })
}

/// The access-policy window `l2_persist` names: the buffer's slot in the launch, its bytes
/// (at most the largest window a launch may set), at the hit ratio the L2 set aside for it
/// allows (the set-aside lasts the cell: `cell::run` lets it go); and what was set, said.
fn persisted(name: &str, code: &Code, data: &Data) -> Result<(AccessWindow, String), Failure> {
    let def = (code.def.as_ref())
        .ok_or_else(|| "l2_persist on a kernel without arguments".to_string())?;
    let arg = (def.args.iter())
        .position(|a| a.name == name)
        .ok_or_else(|| format!("l2_persist: the kernel has no argument `{name}`"))?;
    let buffer = (data.sets[0].buffer(arg))
        .ok_or_else(|| format!("l2_persist: `{name}` is not a buffer"))?;
    let slot = match &code.takes {
        Some(from) => (from.iter().position(|&f| f == arg))
            .ok_or_else(|| format!("l2_persist: the kernel does not take `{name}`"))?,
        None => arg,
    };
    let (set_aside, largest) = cuda::set_aside_l2(buffer.bytes())?;
    let bytes = buffer.bytes().min(largest);
    let hit_ratio = (set_aside as f32 / bytes.max(1) as f32).min(1.0);
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    let said = format!(
        "L2 {:.1} MiB set aside; `{name}` window {:.1} MiB of {:.1} MiB at hit ratio {hit_ratio:.2}",
        mib(set_aside),
        mib(bytes),
        mib(buffer.bytes())
    );
    let window = AccessWindow {
        slot,
        bytes,
        hit_ratio,
    };
    Ok((window, said))
}
