//! A cell's first step: the kernel's code (loaded into the cell's own module, or left to
//! load at its first launch) and its inputs and buffers.

use super::assemble::{check_params, sizes, StepCode};
use super::buffers::{refuse_managed_beyond_free, Buffers, Poison};
use super::compiler::{Build, CompileCost};
use super::failure::Failure;
use super::inputs::{seeds_of, shares, HostInputs};
use super::kernels::KernelKey;
use super::session::Session;
use super::stash::Stash;
use crate::experiment::knobs::first_launch::FirstLaunch;
use crate::experiment::{CopyOp, Kernel};
use crate::plan::Cell;
use crate::protocol::{CellRecord, Telemetry};
use cuda::{DeviceBuffer, Function, LazyFunction};
use std::time::Instant;

/// What compiling the cell's kernel cost, where this cell compiled it: the time, and
/// NVRTC's warnings, kept with the cell (a warning says what the code does that its
/// author may not know, and it is otherwise lost with the log).
fn record_compile(rec: &mut CellRecord, compiled: Option<CompileCost>) {
    if let Some(c) = compiled {
        rec.compile_ms = Some(c.ms);
        rec.compile_warnings = c.warnings;
    }
}

/// A cell with its code and data made ready: what each later step of the cell reads
/// (arming, sampling, the audit), passed as one.
#[derive(Clone, Copy)]
pub(super) struct ReadyCell<'b> {
    pub(super) cell: &'b Cell,
    pub(super) code: &'b Code,
    pub(super) data: &'b Data,
}

impl<'b> ReadyCell<'b> {
    /// The cell's kernel: every checked or audited cell has one.
    pub(super) fn kernel(&self) -> Result<&'b Kernel, Failure> {
        (self.code.def.as_ref()).ok_or_else(|| Failure::from("the cell has no kernel".to_string()))
    }
}

/// The kernel as a cell launches it: loaded now, or (lazy) compiled now and loaded by its
/// first launch; a `[[copy]]` has no code.
pub(super) struct Code {
    pub(super) func: Option<Function>,
    /// The lazily loaded kernel, and the empty kernel of its module where it has one.
    pub(super) lazy: Option<(LazyFunction, Option<LazyFunction>)>,
    /// The names CUPTI finds the kernel's launches by: the kernel's, its steps'.
    pub(super) entries: Vec<String>,
    pub(super) steps: StepCode,
    pub(super) takes: Option<Vec<usize>>,
    pub(super) own_copy: Option<CopyOp>,
    pub(super) def: Option<Kernel>,
}

impl Code {
    pub(super) fn prepare(
        s: &mut Session,
        cell: &Cell,
        rec: &mut CellRecord,
    ) -> Result<Code, Failure> {
        let (knobs, spec, timeline) = (&cell.knobs, &cell.launch, &mut s.timeline);
        let def = cell.kernel.map(|k| s.kernels.def(k).clone());
        let takes = def.as_ref().and_then(|d| d.takes.clone());
        let own_copy = def.as_ref().and_then(|d| d.copy);
        let mut code = Code {
            func: None,
            lazy: None,
            entries: vec![],
            steps: StepCode::Loaded(vec![]),
            takes,
            own_copy,
            def,
        };
        match (cell.kernel, knobs.first_launch) {
            _ if own_copy.is_some() => {}
            (Some(k), FirstLaunch::Lazy) => {
                let (l, compiled) = s
                    .kernels
                    .lazy(k, knobs.compile, Build::of(spec), timeline)?;
                record_compile(rec, compiled);
                code.steps = StepCode::Lazy(l.steps());
                code.lazy = Some((l.kernel(), l.empty()));
                code.entries = l.entries();
            }
            _ => {
                let (loaded, cost) =
                    s.kernels
                        .get(KernelKey::of(cell), Build::of(spec), timeline)?;
                if let Some(cost) = cost {
                    record_compile(rec, cost.compile);
                    rec.module_load_ms = Some(cost.module_load_ms);
                }
                let func = loaded.func.clone();
                check_params(
                    &func,
                    &sizes(&spec.args, code.takes.as_deref()),
                    &loaded.entry,
                )?;
                if spec.shared_bytes > 48 * 1024 {
                    func.allow_shared_bytes(spec.shared_bytes)?;
                }
                code.entries = std::iter::once(loaded.entry.clone())
                    .chain(loaded.steps.iter().map(|(name, _)| name.clone()))
                    .collect();
                code.steps = StepCode::Loaded(loaded.steps.clone());
                code.func = Some(func);
            }
        }
        Ok(code)
    }

    /// Whether the kernel's module loads at its first launch, as a runtime-API program's.
    pub(super) fn loads_at_first_launch(&self) -> bool {
        self.lazy.is_some()
    }
}

/// A cell's inputs and buffers.
pub(super) struct Data {
    /// The kernel and point the inputs are drawn for, and the first set's seed: what the
    /// reference results are kept under.
    pub(super) point: String,
    pub(super) seed: u64,
    /// The first set's data: what the checked launch reads.
    pub(super) timed: HostInputs,
    /// One set of buffers per `rotate` set; the first is the checked one.
    pub(super) sets: Vec<Buffers>,
    /// `inputs = "fresh"`: data of two other draws, copied in turn before each timed launch.
    pub(super) fresh: Vec<HostInputs>,
    pub(super) poison: Poison,
    /// The cell's start reading (NVML's reads take milliseconds) and when it was taken:
    /// before the buffers are filled, so that no wait lies between the input copies and
    /// the first launch.
    pub(super) start_reading: (Instant, Option<Telemetry>),
}

impl Data {
    pub(super) fn prepare(s: &mut Session, cell: &Cell, code: &Code) -> Result<Data, Failure> {
        let spec = &cell.launch;
        // Nothing runs on the GPU before a lazy first launch, as in a runtime-API program.
        let poison = if code.loads_at_first_launch() {
            Poison::ByCopy
        } else {
            Poison::ByMemset
        };
        // Every variant and round at one point times the same inputs; further sets for
        // `rotate`, which the timed samples use in turn.
        let point = cell.point_key();
        let share = shares(cell);
        let (set_seeds, fresh_seeds) = seeds_of(cell);
        let mut draw = |seeds: Vec<u64>| -> Result<Vec<HostInputs>, Failure> {
            (seeds.into_iter())
                .map(|seed| s.inputs.get(&spec.args, seed, share))
                .collect()
        };
        let seed = set_seeds[0];
        let hosts = draw(set_seeds)?;
        let fresh = draw(fresh_seeds)?;
        s.timeline.mark("inputs");
        refuse_managed_beyond_free(&spec.args, hosts.len())?;
        let start_reading = (Instant::now(), s.sensor.read());
        s.timeline.mark("telemetry start");
        let timed = hosts[0].clone();
        let mut sets = Vec::with_capacity(hosts.len());
        for (i, host) in hosts.into_iter().enumerate() {
            // Nothing but the inputs' copy runs on the GPU before a lazy first launch.
            let stashed = (s.timed_stash.as_ref())
                .filter(|_| i == 0 && poison == Poison::ByMemset)
                .and_then(|st| st.copies_of(&host));
            let data: Vec<Option<&[u8]>> = host.iter().map(Option::as_deref).collect();
            let copies: Vec<Option<&DeviceBuffer>> = (stashed.unwrap_or_default().iter())
                .map(Option::as_ref)
                .collect();
            let buffers = Buffers::create(&spec.args, &data, poison, &copies)?;
            if i == 0 && stashed.is_none() && poison == Poison::ByMemset {
                let after = Stash::allocated_after(cell);
                let key = cell.draw_key();
                s.timed_stash = Stash::of_buffers((&key, after), &buffers, &host);
                if let Some(st) = &mut s.timed_stash {
                    st.seal(&mut s.kernels, &mut s.timeline, s.sample_seed)?;
                }
            }
            sets.push(buffers);
        }
        // Copies on the device return before they end: none runs into the first launch.
        cuda::synchronize()?;
        s.timeline.mark("buffers");
        Ok(Data {
            point,
            seed,
            timed,
            sets,
            fresh,
            poison,
            start_reading,
        })
    }
}
