//! `timer = "cupti"`: each kernel's (and copy's) own start and end on the GPU, from CUPTI's
//! activity records (one launch, one record, no replay), with the launch's queued and
//! submitted timestamps where CUPTI gives them. libcupti is loaded at run time like the
//! driver.

use super::error::CudaError;
use super::memory::Direction;
use cudarc::cupti::{result::activity, result::CuptiError, sys};
use std::alloc::{alloc, dealloc, Layout};
use std::ffi::CStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// One kernel execution (or copy, named by [`Direction::record_name`]) as CUPTI saw it, in
/// CUPTI's nanosecond clock.
#[derive(Debug, Clone)]
pub struct Span {
    pub name: String,
    pub start: u64,
    pub end: u64,
    /// When the launch was queued and submitted to the GPU; 0 where CUPTI does not say.
    pub queued: u64,
    pub submitted: u64,
}

/// The environment variable that names libcupti's full path.
pub const LIBRARY_VAR: &str = "RUNNER_CUPTI";

/// Where libcupti usually is, tried in order after `RUNNER_CUPTI`.
const USUAL_PLACES: &[&str] = &[
    "/usr/local/cuda/extras/CUPTI/lib64",
    "/usr/local/cuda/lib64",
    "/usr/local/cuda/targets/x86_64-linux/lib",
    "/usr/lib/x86_64-linux-gnu",
];

const BUFFER_BYTES: usize = 8 << 20;
const BUFFER_ALIGN: usize = 8;

/// Kernel records delivered so far, in completion order.
static SPANS: Mutex<Vec<Span>> = Mutex::new(Vec::new());
/// Records CUPTI dropped since the collector started, over every flush: a look between two
/// samples ([`Collector::so_far`]) must not hide a drop from [`Collector::finish`].
static DROPPED: AtomicUsize = AtomicUsize::new(0);
/// Whether the library loaded and the callbacks are registered (or why not).
static READY: OnceLock<Result<(), CudaError>> = OnceLock::new();

/// Record buffers CUPTI handed back, kept (as addresses) for its next request with their
/// pages mapped. A look at the records between two samples (`Collector::so_far`) hands the
/// buffer back, and CUPTI asks for a new one at the next launch: freshly allocated, its
/// 8 MiB were mapped page by page as they were first written. On an H200 (`bandwidth` at
/// bc06e8e) the sample after such a look held the host 665 µs against 149 µs, and the
/// region after it followed a gap of 964 µs on the GPU against its pause's 327 µs.
static SPARE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// Buffers a collector's start makes ready: one for CUPTI to fill, one for after a look.
const SPARE_AT_START: usize = 2;

fn layout() -> Layout {
    Layout::from_size_align(BUFFER_BYTES, BUFFER_ALIGN).expect("valid layout")
}

/// A buffer, null where none could be allocated.
fn new_buffer() -> *mut u8 {
    // SAFETY: the layout's size is not zero.
    unsafe { alloc(layout()) }
}

/// A spare buffer, or a new one (pages unmapped: CUPTI asks at a launch, maybe a timed one,
/// where writing all 8 MiB would cost more than the pages it writes).
fn take_buffer() -> *mut u8 {
    let spare = SPARE.lock().ok().and_then(|mut s| s.pop());
    spare.map_or_else(new_buffer, |address| address as *mut u8)
}

/// Keeps `buffer` for the next request; frees it where the spares cannot be reached.
fn give_back(buffer: *mut u8) {
    match SPARE.lock() {
        Ok(mut spare) => spare.push(buffer as usize),
        // SAFETY: allocated by `new_buffer` with the same layout, and no longer used.
        Err(_) => unsafe { dealloc(buffer, layout()) },
    }
}

/// Tops the spares up to [`SPARE_AT_START`], each written once so that its pages are mapped,
/// before any timed launch.
fn ready_spares() {
    let have = SPARE.lock().map_or(SPARE_AT_START, |s| s.len());
    for _ in have..SPARE_AT_START {
        let buffer = new_buffer();
        if !buffer.is_null() {
            // SAFETY: a fresh allocation of BUFFER_BYTES, used by nothing else yet.
            unsafe { std::ptr::write_bytes(buffer, 0, BUFFER_BYTES) };
            give_back(buffer);
        }
    }
}

extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    // SAFETY: CUPTI passes valid out-pointers; the buffer comes back in `buffer_completed`.
    unsafe {
        *buffer = take_buffer();
        *size = if (*buffer).is_null() { 0 } else { BUFFER_BYTES };
        *max_records = 0;
    }
}

extern "C" fn buffer_completed(
    _ctx: cudarc::driver::sys::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    let mut spans = Vec::new();
    let mut record: *mut sys::CUpti_Activity = std::ptr::null_mut();
    // SAFETY: CUPTI hands back a buffer it filled with `valid` bytes of records.
    while unsafe { activity::get_next_record(buffer, valid, &mut record) }.is_ok() {
        // SAFETY: `record` points at a record of the buffer; its kind says its layout.
        let kind = unsafe { (*record).kind };
        if kind == sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL {
            // Every kernel record version shares this prefix up to `submitted`.
            // SAFETY: a CONCURRENT_KERNEL record has the kernel record's layout.
            let k = unsafe { &*(record as *const sys::CUpti_ActivityKernel10) };
            let name = if k.name.is_null() {
                String::new()
            } else {
                // SAFETY: CUPTI's kernel names are NUL-terminated and live with the context.
                unsafe { CStr::from_ptr(k.name) }
                    .to_string_lossy()
                    .into_owned()
            };
            spans.push(Span {
                name,
                start: k.start,
                end: k.end,
                queued: k.queued,
                submitted: k.submitted,
            });
        } else if kind == sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY {
            // Every memcpy record version shares this prefix up to `end`.
            // SAFETY: a MEMCPY record has the memcpy record's layout.
            let m = unsafe { &*(record as *const sys::CUpti_ActivityMemcpy) };
            // CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD.
            let direction = match m.copyKind {
                1 => Some(Direction::HostToDevice),
                2 => Some(Direction::DeviceToHost),
                8 => Some(Direction::DeviceToDevice),
                _ => None,
            };
            spans.push(Span {
                name: direction.map_or("memcpy (other)".into(), |d| d.record_name(m.bytes)),
                start: m.start,
                end: m.end,
                queued: 0,
                submitted: 0,
            });
        }
    }
    if let Ok(mut all) = SPANS.lock() {
        all.extend(spans);
    }
    give_back(buffer);
}

fn cupti_err(what: &str, e: CuptiError) -> CudaError {
    CudaError::Library(format!("{what}: CUPTI error {:?}", e.0))
}

/// Loads libcupti (from `RUNNER_CUPTI`, then the usual places, then the loader's path)
/// and registers the record buffers, once per process.
fn ready() -> Result<(), CudaError> {
    READY
        .get_or_init(|| {
            preload();
            // SAFETY: only tries to dlopen the library.
            if !unsafe { sys::is_culib_present() } {
                return Err(CudaError::Library(format!(
                    "libcupti cannot be loaded: install the CUDA toolkit's CUPTI (or the \
                     nvidia-cuda-cupti wheel) and put its folder on LD_LIBRARY_PATH, or set \
                     {LIBRARY_VAR} to the library's path"
                )));
            }
            activity::register_callbacks(Some(buffer_requested), Some(buffer_completed))
                .map_err(|e| cupti_err("cuptiActivityRegisterCallbacks", e))?;
            // Without this, kernel records carry no queued and submitted timestamps.
            activity::enable_latency_timestamps(1)
                .map_err(|e| cupti_err("cuptiActivityEnableLatencyTimestamps", e))
        })
        .clone()
}

/// Opens libcupti by full path, so that the loader finds it by name afterwards.
fn preload() {
    let named = std::env::var(LIBRARY_VAR)
        .ok()
        .map(std::path::PathBuf::from);
    let found = USUAL_PLACES.iter().find_map(|dir| {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libcupti.so"))
            })
            .collect();
        entries.sort();
        entries.into_iter().next()
    });
    for path in named.into_iter().chain(found) {
        let Ok(c) = std::ffi::CString::new(path.to_string_lossy().as_bytes()) else {
            continue;
        };
        // SAFETY: dlopen of a library by path; it stays loaded for the process.
        let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if !handle.is_null() {
            return;
        }
    }
}

fn poisoned() -> CudaError {
    CudaError::Library("CUPTI records lock poisoned".into())
}

/// Collects kernel (and copy) records between `start` and `finish`.
pub struct Collector {
    copies: bool,
}

impl Collector {
    /// Starts recording every kernel launched from now on, and with `copies` every copy.
    pub fn start(copies: bool) -> Result<Collector, CudaError> {
        ready()?;
        ready_spares();
        SPANS.lock().map_err(|_| poisoned())?.clear();
        DROPPED.store(0, Ordering::Relaxed);
        activity::enable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            .map_err(|e| cupti_err("cuptiActivityEnable(CONCURRENT_KERNEL)", e))?;
        // Dropped with a failure below, the collector disables what it enabled.
        let collector = Collector { copies };
        if copies {
            activity::enable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY)
                .map_err(|e| cupti_err("cuptiActivityEnable(MEMCPY)", e))?;
        }
        Ok(collector)
    }

    /// Stops recording and returns the spans of the last `count` launches of the kernels
    /// named `entries`, in launch order (recording starts before the warm-up, so that the
    /// warm-up, not a timed launch, absorbs CUPTI's start-up). A launch of several kernels
    /// (a kernel and its steps, enqueued in order) spans from the first's start to the
    /// last's end.
    pub fn finish(self, entries: &[String], count: usize) -> Result<Spans, CudaError> {
        flush()?;
        let all = std::mem::take(&mut *SPANS.lock().map_err(|_| poisoned())?);
        last_launches(all, entries, count)
    }

    /// What [`Collector::finish`] would return now, while recording goes on: a look at the
    /// timed launches so far between two of them. Call it with the GPU idle, so that every
    /// launch's record is complete and delivered (a record a forced flush hands over not yet
    /// complete is left out, here and in `finish`).
    pub fn so_far(&self, entries: &[String], count: usize) -> Result<Spans, CudaError> {
        flush()?;
        let all = SPANS.lock().map_err(|_| poisoned())?.clone();
        last_launches(all, entries, count)
    }
}

/// Delivers every record CUPTI holds, of buffers not yet full too; an error where it
/// dropped any since the collector started.
fn flush() -> Result<(), CudaError> {
    // FLUSH_FORCED also delivers records of buffers that are not full.
    let forced = 1u32;
    activity::flush_all(forced).map_err(|e| cupti_err("cuptiActivityFlushAll", e))?;
    let mut dropped = 0usize;
    // SAFETY: a null context asks for the records dropped anywhere.
    let _ = unsafe { activity::get_num_dropped_records(std::ptr::null_mut(), 0, &mut dropped) };
    match DROPPED.fetch_add(dropped, Ordering::Relaxed) + dropped {
        0 => Ok(()),
        all => Err(CudaError::Library(format!(
            "CUPTI dropped {all} kernel or copy records"
        ))),
    }
}

/// Of the records `all`, the spans of the last `count` launches of the kernels named
/// `entries`, in launch order.
fn last_launches(all: Vec<Span>, entries: &[String], count: usize) -> Result<Spans, CudaError> {
    let (named, others): (Vec<Span>, Vec<Span>) =
        all.into_iter().partition(|s| entries.contains(&s.name));
    // A record not complete (a forced flush may hand one over) is left out: sorted first, it
    // would shift every launch after it by one. Its launch is then missing, unless CUPTI
    // delivered it again whole.
    let (mut spans, partial): (Vec<Span>, Vec<Span>) = named
        .into_iter()
        .partition(|s| s.start > 0 && s.end >= s.start);
    spans.sort_by_key(|s| s.start);
    let per = entries.len().max(1);
    if spans.len() < count * per {
        return Err(CudaError::Library(format!(
            "CUPTI delivered {} whole records of {} ({} not complete) for {count} timed launches of {per} kernel(s) or copies; {}",
            spans.len(),
            entries.join(", "),
            partial.len(),
            other_names(&others)
        )));
    }
    let last = spans.split_off(spans.len() - count * per);
    Ok(Spans {
        launches: last.chunks(per).map(merge).collect(),
        kernels: (per > 1).then_some(last),
    })
}

/// The records that named none of the expected kernels, counted by name: where the
/// expected ones are missing, these say what ran instead.
fn other_names(others: &[Span]) -> String {
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for s in others {
        *counts.entry(&s.name).or_default() += 1;
    }
    match counts.is_empty() {
        true => "no other records".into(),
        false => {
            let named: Vec<String> = (counts.iter().take(8))
                .map(|(name, n)| format!("{n} of `{name}`"))
                .collect();
            format!("other records: {}", named.join(", "))
        }
    }
}

/// The timed launches' spans, and where a launch runs several kernels, each kernel's.
pub struct Spans {
    pub launches: Vec<Span>,
    /// In start order; None for launches of one kernel.
    pub kernels: Option<Vec<Span>>,
}

/// One span from the first one's start to the last one's end.
fn merge(group: &[Span]) -> Span {
    let mut span = group[0].clone();
    span.end = group.iter().map(|s| s.end).max().unwrap_or(span.end);
    span
}

impl Drop for Collector {
    /// Recording stops with the cell, also when it failed half-way or only collected.
    fn drop(&mut self) {
        // Records still buffered are delivered and dropped, so none reaches the next cell.
        let _ = activity::flush_all(1);
        let _ = activity::disable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        if self.copies {
            let _ = activity::disable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY);
        }
        if let Ok(mut spans) = SPANS.lock() {
            spans.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_handed_back_is_the_next_one_handed_out_and_a_start_readies_two() {
        ready_spares();
        assert!(SPARE.lock().unwrap().len() >= SPARE_AT_START);
        let first = take_buffer();
        assert!(!first.is_null());
        // SAFETY: a buffer of BUFFER_BYTES, written whole by `ready_spares`.
        assert_eq!(unsafe { *first.add(BUFFER_BYTES - 1) }, 0);
        give_back(first);
        assert_eq!(
            take_buffer(),
            first,
            "the one just handed back, its pages mapped"
        );
        give_back(first);
    }
}
