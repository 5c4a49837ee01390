//! The audit's data, drawn on the GPU (`kernels/audit.cu`): each audited region reads a draw
//! of its own, made from a seed the record keeps, so no cache of any size keyed by the
//! inputs can hit; a decoy's stage draws the held data again (the same kernel writing the
//! same bytes in the same time); a pause's stage runs one thread on the GPU as long as a
//! stage's work takes, writing nothing (`InputDraws::hold`), and, where the cell's reading
//! holds the host's launch, the empty kernels every stage launches through its wait
//! ([`KICK_EVERY`]). Every stage then
//! lasts the same time from its start, so the pause before every region is the same
//! whatever its stage did, and a pause leaves the GPU as a timed launch finds it (a kernel
//! of the runner's on every SM before it had slowed hot launches that followed by up to
//! 15%).
//!
//! Element i of an argument depends only on the seed, the argument's salt (its index among
//! the measured kernel's arguments) and i, and for a probe ([`PROBE`]) on the argument's
//! length: a reference kernel's buffer of the same length drawn with the measured argument's
//! salt holds the same data, and a verify pass finds the first element
//! a launch changed without anything crossing the host link.
//!
//! `input_draws::InputDraws` is a cell's set of them: what is drawn, what the kernel must
//! leave as it is, and what no draw reaches.

use crate::experiment::{ArgValue, Dtype, Init, Memory};
use crate::plan::audit_rounds::{STAGE_PER_DRAW, STAGE_SLACK_NS};
use crate::plan::Cell;
use crate::worker::buffers::Buffers;
use crate::worker::kernels::KernelKey;
use crate::worker::session::{DrawShape, Session};
use cuda::{CudaError, DeviceBuffer, Dims, Event, Function, Launch, Param};
use std::time::{Duration, Instant};

/// Threads per block of the draw.
const BLOCK: u32 = 256;
/// Blocks along x at most: enough to write at full bandwidth on any GPU.
const MOST_BLOCKS: u64 = 4096;
/// Bytes of one `AuditDraw` entry of the table (`kernels/audit.cu`).
const ENTRY_BYTES: usize = 56;
/// `audit_draw`'s modes, as bits (`kernels/audit.cu`): compare each verified draw with the draw
/// of one seed, and write the draw of another, in one pass where both.
const VERIFY: u32 = 1;
const WRITE: u32 = 2;
/// A seed with this bit draws a probe: the data of the same seed without it, but for 64-128
/// groups of 16 bytes of each argument (at least one, a sixteenth at most), picked and drawn
/// anew by the seed (`kernels/audit.cu`; every draw picks, so that a probe's stage takes what
/// any does). A kernel that tells data it has seen by sampling a few of its inputs finds most
/// of a probe's samples as they were, and keeps or skips: the probe's check then fails
/// wherever a changed input moves an output it did not compute again. Draws' own seeds never
/// have it (`among::seeds::seed_of`).
pub(super) const PROBE: u64 = 1 << 63;

/// One argument's draw, as the kernel's table holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Entry {
    address: u64,
    count: u64,
    salt: u64,
    a: f64,
    b: f64,
    dtype: u32,
    normal: bool,
    /// An input no launch may write: a verify compares it with a draw (the others it passes
    /// over).
    verified: bool,
    /// Where it lives: a draw into host memory the GPU reaches takes longer (not in the
    /// table, only in [`Draws::shape`]).
    memory: Memory,
}

impl Entry {
    /// Threads the draw takes: a float type's 16 bytes each (`audit_draw_float`), another
    /// type's an element each. A grid of a thread an element leaves three in four of a float
    /// draw's blocks with nothing to do, and small draws took time with the grid more than
    /// with the bytes: on an H200, alone from an idle queue, one 4 MiB f32 draw 20.7 µs and
    /// one of 16 MiB 23.5 µs on the same 4096 blocks; two 4 MiB ones 33.2 µs at fe97d65
    /// against 19.9 µs at f995848 (`benches/audit-kernels`, `--small`, which times both
    /// grids).
    fn threads(&self) -> u64 {
        let float = [Dtype::F16, Dtype::Bf16, Dtype::F32].map(Dtype::code);
        let per = match float.contains(&self.dtype) {
            true => 16 / Dtype::ALL[self.dtype as usize].size() as u64,
            false => 1,
        };
        self.count.div_ceil(per)
    }

    /// The draw of argument `arg` (of `args`) into `buffer`, where its `init` is a random
    /// distribution the GPU draws and the buffer is one a kernel reaches: device, managed,
    /// mapped or pinned memory (under unified addressing every page-locked allocation is
    /// the device's at its host address); None for constants, ranges, files, pointer
    /// chases and pageable memory.
    pub(super) fn of(args: &[ArgValue], arg: usize, buffer: &DeviceBuffer) -> Option<Entry> {
        let ArgValue::Buffer {
            dtype,
            init,
            memory,
            ..
        } = args.get(arg)?
        else {
            return None;
        };
        if *memory == Memory::Pageable {
            return None;
        }
        let (a, b, normal) = match *init {
            Init::Uniform(lo, hi) => (lo, hi, false),
            Init::Normal(mean, std) => (mean, std, true),
            _ => return None,
        };
        Some(Entry {
            address: buffer.address(),
            count: (buffer.bytes() / dtype.size()) as u64,
            salt: arg as u64,
            a,
            b,
            dtype: dtype.code(),
            normal,
            verified: false,
            memory: *memory,
        })
    }

    fn bytes(&self) -> [u8; ENTRY_BYTES] {
        let mut out = [0u8; ENTRY_BYTES];
        let fields: [[u8; 8]; 5] = [
            self.address.to_ne_bytes(),
            self.count.to_ne_bytes(),
            self.salt.to_ne_bytes(),
            self.a.to_ne_bytes(),
            self.b.to_ne_bytes(),
        ];
        for (i, f) in fields.iter().enumerate() {
            out[i * 8..(i + 1) * 8].copy_from_slice(f);
        }
        out[40..44].copy_from_slice(&self.dtype.to_ne_bytes());
        out[44..48].copy_from_slice(&u32::from(self.normal).to_ne_bytes());
        out[48..52].copy_from_slice(&u32::from(self.verified).to_ne_bytes());
        out
    }
}

/// A table of draws on the device, with the event that says when the last is done.
pub(super) struct Draws {
    /// The built-in `audit_draw`.
    pub(super) kernel: Function,
    /// The arguments drawn, in the table's order.
    pub(super) args: Vec<usize>,
    /// What each draw writes, in the table's order: what its time depends on.
    shape: Vec<DrawShape>,
    table: DeviceBuffer,
    /// Threads the longest draw takes (see [`Entry::threads`]).
    longest: u64,
    /// Where a verify lowers each draw's first differing element (kept: one allocation a
    /// cell, not one a region).
    first: DeviceBuffer,
    /// Recorded before a stage's work: when the GPU reached the stage.
    reached: Event,
    done: Event,
    /// Stages whose draw outlasted their pause.
    late: std::cell::Cell<u64>,
}

impl Draws {
    /// The table of `entries` (each with the argument it fills).
    pub(super) fn new(kernel: Function, entries: &[(usize, Entry)]) -> Result<Draws, CudaError> {
        let bytes: Vec<u8> = entries.iter().flat_map(|(_, e)| e.bytes()).collect();
        let table = DeviceBuffer::alloc(bytes.len().max(ENTRY_BYTES))?;
        if !bytes.is_empty() {
            table.upload(&bytes)?;
        }
        Ok(Draws {
            kernel,
            args: entries.iter().map(|(i, _)| *i).collect(),
            shape: (entries.iter())
                .map(|(_, e)| {
                    (
                        e.count,
                        e.dtype,
                        e.normal,
                        e.memory,
                        e.address % 16 == 0,
                        e.verified,
                    )
                })
                .collect(),
            table,
            longest: entries.iter().map(|(_, e)| e.threads()).max().unwrap_or(0),
            first: DeviceBuffer::alloc(8 * entries.len().max(1))?,
            reached: Event::new()?,
            done: Event::new()?,
            late: std::cell::Cell::new(0),
        })
    }

    /// The draws into `buffers`, argument i holding the draw of the measured kernel's
    /// argument `pick(i)` of `args` (its distribution, type and salt), where the GPU can
    /// draw that one (see [`Entry::of`]; None: not drawn).
    pub(super) fn of(
        kernel: Function,
        args: &[ArgValue],
        buffers: &Buffers,
        pick: impl Fn(usize) -> Option<usize>,
    ) -> Result<Draws, CudaError> {
        Draws::verifying(kernel, args, buffers, pick, |_| false)
    }

    /// As [`Draws::of`], argument i's draw verified (by [`Draws::verify_into`] and a stage's
    /// pass) where `verified(i)`: an input no launch may write.
    pub(super) fn verifying(
        kernel: Function,
        args: &[ArgValue],
        buffers: &Buffers,
        pick: impl Fn(usize) -> Option<usize>,
        verified: impl Fn(usize) -> bool,
    ) -> Result<Draws, CudaError> {
        let entry = |i: usize| {
            let drawn = Entry::of(args, pick(i)?, buffers.buffer(i)?)?;
            let verified = verified(i);
            Some((i, Entry { verified, ..drawn }))
        };
        let entries: Vec<(usize, Entry)> = (0..buffers.arguments()).filter_map(entry).collect();
        Draws::new(kernel, &entries)
    }

    /// What the table's draws write and verify (elements, type, distribution, memory,
    /// alignment and whether verified, of each), which their time on the GPU depends on, not where.
    pub(super) fn shape(&self) -> &[DrawShape] {
        &self.shape
    }

    /// Whether the table draws nothing.
    pub(super) fn is_empty(&self) -> bool {
        self.args.is_empty()
    }

    fn dims(&self) -> Dims {
        let blocks = self
            .longest
            .div_ceil(u64::from(BLOCK))
            .clamp(1, MOST_BLOCKS) as u32;
        Dims {
            grid: (blocks, self.args.len().max(1) as u32, 1),
            block: (BLOCK, 1, 1),
            shared_bytes: 0,
        }
    }

    /// Enqueues the draw's pass: with `verify` (a seed, and where each verified draw's
    /// first differing element is lowered) the verified draws compared with that seed's, then with
    /// `write` that seed's draw written.
    fn enqueue(
        &self,
        verify: Option<(u64, &DeviceBuffer)>,
        write: Option<u64>,
    ) -> Result<(), CudaError> {
        let mode = verify.map_or(0, |_| VERIFY) | write.map_or(0, |_| WRITE);
        let values = [
            Param::Buffer(&self.table),
            Param::bytes(&(self.args.len() as u32).to_ne_bytes()),
            Param::u64(write.unwrap_or(0)),
            Param::u64(verify.map_or(0, |(held, _)| held)),
            Param::bytes(&mode.to_ne_bytes()),
            // Never written without a verify: the table stands in.
            Param::Buffer(verify.map_or(&self.table, |(_, first)| first)),
        ];
        Launch::new(&self.kernel, self.dims(), &values).enqueue()
    }

    /// Writes the draw of `seed` into the table's buffers (enqueued).
    pub(super) fn write(&self, seed: u64) -> Result<(), CudaError> {
        if self.is_empty() {
            return Ok(());
        }
        self.enqueue(None, Some(seed))
    }

    /// A stage's work in one pass (enqueued): the verified draws compared with the draw of `held`
    /// (lowering each one's first differing element in `lowest`, as [`Draws::verify_into`]),
    /// and the draw of `seed` written; each 16 bytes read and written once (two passes read
    /// a 512 MiB input's twice on an H200, 440 µs against 378 µs: `benches/audit-kernels`).
    pub(super) fn verify_then_write(
        &self,
        held: u64,
        seed: u64,
        lowest: &DeviceBuffer,
    ) -> Result<(), CudaError> {
        if self.is_empty() {
            return Ok(());
        }
        self.enqueue(Some((held, lowest)), Some(seed))
    }

    /// How long `work` (a write or a verify of this table's draws) takes on the GPU, in ns
    /// (it is enqueued, and done).
    pub(super) fn timed(
        &self,
        work: impl FnOnce(&Draws) -> Result<(), CudaError>,
    ) -> Result<f64, CudaError> {
        let start = Event::new()?;
        start.record()?;
        work(self)?;
        self.done.record()?;
        self.done.synchronize()?;
        Ok(f64::from(self.done.elapsed_ms_since(&start)?) * 1e6)
    }

    /// A region's stage: `work` enqueued (the draw of a seed, or nothing), then the host
    /// waits until `wait` after the GPU reached the stage, whatever the work took; a stage
    /// whose work outlasted `wait` is counted late (its region follows a longer pause).
    /// With `kick` (an empty kernel), the host launches it through the wait (see
    /// [`kicks_now`]).
    pub(super) fn stage(
        &self,
        work: impl FnOnce(&Draws) -> Result<(), CudaError>,
        wait: Duration,
        kick: Option<&Function>,
    ) -> Result<(), CudaError> {
        let mut kick = kick.map(|f| Launch::new(f, Dims::ONE, &[]));
        self.reached.record()?;
        work(self)?;
        self.done.record()?;
        // The pause counts from when the GPU reaches the stage, a pause's as a draw's: after
        // a region of many launches the next one ran 30-50 µs after the host enqueued it on
        // an H200, against 15 µs after one launch (`benches/late-stages`), which a pause
        // counted from the enqueue spent, leaving the draws of a graph's stages late. The host
        // sees the stage's end, then takes off what the GPU took from reaching it: seen as
        // it was reached, a stage with a draw behind it was seen some µs later than a pause
        // (its launch under way), and its region followed a longer gap (a median 68.2 µs
        // against 61.7 µs in `trust`'s hot cells at 5b009a1).
        let enqueued = Instant::now();
        while !self.done.done() {
            if enqueued.elapsed() > END_PATIENCE {
                // Not done, or an error the query does not say: the synchronize says it.
                self.done.synchronize()?;
                break;
            }
            std::hint::spin_loop();
        }
        let seen = Instant::now();
        let took = Duration::from_secs_f64(
            f64::from(self.done.elapsed_ms_since(&self.reached)?.max(0.0)) * 1e-3,
        );
        if took > wait {
            self.late.set(self.late.get() + 1);
        }
        let began = seen.checked_sub(took).unwrap_or(seen);
        let mut last = seen;
        while began.elapsed() < wait {
            if let Some(k) = kick.as_mut() {
                if kicks_now(last.elapsed(), began.elapsed(), wait) {
                    k.enqueue()?;
                    last = Instant::now();
                }
            }
            std::hint::spin_loop();
        }
        Ok(())
    }

    /// The first element of each verified draw that differs from the draw of `seed`, as
    /// (argument, element), in the table's order; None where all equal.
    pub(super) fn first_change(&self, seed: u64) -> Result<Option<(usize, u64)>, CudaError> {
        if self.is_empty() {
            return Ok(None);
        }
        self.first.fill(0xFF)?;
        self.verify_into(seed, &self.first)?;
        self.first_in(&self.first)
    }

    /// Enqueues a verify of the verified draws against the draw of `seed`, lowering each one's
    /// first differing element in `lowest` (8 bytes a draw, in the table's order, set to all
    /// ones before the first verify into it: verifies into it add up; a draw not verified stays
    /// all ones).
    pub(super) fn verify_into(&self, seed: u64, lowest: &DeviceBuffer) -> Result<(), CudaError> {
        match self.is_empty() {
            true => Ok(()),
            false => self.enqueue(Some((seed, lowest)), None),
        }
    }

    /// The first differing element the verifies into `lowest` found, as (argument, element).
    pub(super) fn first_in(
        &self,
        lowest: &DeviceBuffer,
    ) -> Result<Option<(usize, u64)>, CudaError> {
        if self.is_empty() {
            return Ok(None);
        }
        let found = lowest.download()?;
        Ok((found.chunks_exact(8).zip(&self.args))
            .map(|(b, &arg)| (arg, u64::from_ne_bytes(b.try_into().expect("8 bytes"))))
            .find(|&(_, at)| at != u64::MAX))
    }

    /// Stages whose draw outlasted the pause after it, so far.
    pub(super) fn late(&self) -> u64 {
        self.late.get()
    }
}

/// How often a stage launches its empty kernel, where the cell's reading holds the host's
/// launch: on an H200, events around a 145 µs copy read it 0.6 µs slow after 175 µs of the
/// host spinning and 2.0 µs after 600 µs, and -0.3 to +0.2 µs with an empty kernel
/// launched every 10 µs meanwhile (the path a launch takes cools while the host launches nothing).
/// An empty kernel touches no memory, and a kernel timing its own gaps sees none of them.
const KICK_EVERY: Duration = Duration::from_micros(10);
/// No kick this close to a stage's end: the region starts on an idle queue, as a timed one
/// does after its sample's synchronize.
const KICK_QUIET: Duration = Duration::from_micros(20);

/// The empty kernel a cell's stages launch through their waits, where its reading holds the
/// host's launch (see [`KICK_EVERY`]) and no CUPTI collector records every launch; None
/// elsewhere.
pub(super) fn kick(s: &mut Session, cell: &Cell) -> Result<Option<Function>, CudaError> {
    let knobs = &cell.knobs;
    match knobs.queue.reading_holds_launch_time(knobs.timer) && !knobs.cupti_collect.on {
        true => Ok(Some(s.kernels.function(KernelKey::Empty, &mut s.timeline)?)),
        false => Ok(None),
    }
}

/// Whether a stage launches its empty kernel now (once its work is done): `since` the stage
/// began or its last kick, `elapsed` of `wait`. A kick decided just before the quiet runs
/// in its first microseconds; the region's synchronize still starts it on an idle queue.
fn kicks_now(since: Duration, elapsed: Duration, wait: Duration) -> bool {
    since >= KICK_EVERY && elapsed + KICK_QUIET < wait
}

/// How long a stage waits for the GPU to end it before the synchronize says why not (the
/// queue is idle when a stage begins: tens of µs, and its draw a few ms at most).
const END_PATIENCE: Duration = Duration::from_secs(1);

/// How long every stage lasts once the GPU reaches it, from the time a stage's work (the held
/// data's verify and a draw of all the inputs) took (`audit_rounds::STAGE_PER_DRAW` says why).
pub(super) fn wait_ns(stage_ns: f64) -> u64 {
    (STAGE_PER_DRAW * stage_ns.max(0.0)).ceil() as u64 + STAGE_SLACK_NS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_kicks_every_ten_microseconds_and_not_in_its_last_twenty() {
        let us = Duration::from_micros;
        assert!(kicks_now(us(10), us(100), us(300)));
        assert!(!kicks_now(us(9), us(100), us(300)), "ten apart");
        assert!(kicks_now(us(12), us(279), us(300)));
        assert!(!kicks_now(us(12), us(280), us(300)), "quiet at the end");
        assert!(
            !kicks_now(us(30), us(5), us(20)),
            "a wait of 20 µs is all quiet"
        );
    }

    #[test]
    fn an_entry_is_laid_out_as_the_kernel_reads_it() {
        let e = Entry {
            address: 0x1000,
            count: 7,
            salt: 3,
            a: -1.0,
            b: 2.5,
            dtype: 2,
            normal: true,
            verified: true,
            memory: Memory::Device,
        };
        let b = e.bytes();
        assert_eq!(u64::from_ne_bytes(b[0..8].try_into().unwrap()), 0x1000);
        assert_eq!(u64::from_ne_bytes(b[8..16].try_into().unwrap()), 7);
        assert_eq!(u64::from_ne_bytes(b[16..24].try_into().unwrap()), 3);
        assert_eq!(f64::from_ne_bytes(b[24..32].try_into().unwrap()), -1.0);
        assert_eq!(f64::from_ne_bytes(b[32..40].try_into().unwrap()), 2.5);
        assert_eq!(u32::from_ne_bytes(b[40..44].try_into().unwrap()), 2);
        assert_eq!(u32::from_ne_bytes(b[44..48].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(b[48..52].try_into().unwrap()), 1);
        assert_eq!(b[52..56], [0; 4]);
    }

    #[test]
    fn a_float_draw_takes_a_thread_per_16_bytes_another_a_thread_an_element() {
        let entry = |dtype: Dtype, count: u64| Entry {
            address: 0,
            count,
            salt: 0,
            a: 0.0,
            b: 1.0,
            dtype: dtype.code(),
            normal: false,
            verified: false,
            memory: Memory::Device,
        };
        assert_eq!(entry(Dtype::F32, 1 << 20).threads(), 1 << 18);
        assert_eq!(entry(Dtype::F32, 7).threads(), 2);
        assert_eq!(entry(Dtype::F16, 17).threads(), 3);
        assert_eq!(entry(Dtype::Bf16, 16).threads(), 2);
        assert_eq!(entry(Dtype::F64, 5).threads(), 5);
        assert_eq!(entry(Dtype::U8, 33).threads(), 33);
    }

    #[test]
    fn type_codes_follow_the_kernels_switch() {
        let codes: Vec<u32> = Dtype::ALL.iter().map(|d| d.code()).collect();
        assert_eq!(codes, (0..12).collect::<Vec<u32>>());
        // The kernel's switch names the types in this order.
        let names: Vec<&str> = Dtype::ALL.iter().map(|d| d.key()).collect();
        let source = include_str!("../../../kernels/audit.cu");
        assert!(source.contains(&names.join(" ")));
    }

    #[test]
    fn the_pause_outlasts_the_draw_with_room_to_enqueue() {
        assert_eq!(wait_ns(0.0), 20_000);
        assert_eq!(wait_ns(20_000.0), 45_000);
        assert!(wait_ns(1e6) > 1_250_000);
    }
}
