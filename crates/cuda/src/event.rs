//! CUDA events: the GPU's own timestamps around enqueued work.

use super::error::{Check, CudaError};
use cudarc::driver::{result, sys};

/// A CUDA event with timing enabled, destroyed on drop.
pub struct Event(sys::CUevent);

impl Event {
    pub fn new() -> Result<Event, CudaError> {
        result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map(Event)
            .during("cuEventCreate")
    }

    /// Records the event on the legacy default stream.
    #[inline]
    pub fn record(&self) -> Result<(), CudaError> {
        // SAFETY: the event is live; the null stream is the legacy one.
        unsafe { result::event::record(self.0, std::ptr::null_mut()) }.during("cuEventRecord")
    }

    /// Records the event on `stream` as a node of the graph the stream is capturing (an
    /// external record: replays timestamp it).
    pub(super) fn record_as_node(&self, stream: sys::CUstream) -> Result<(), CudaError> {
        let external = sys::CUevent_record_flags::CU_EVENT_RECORD_EXTERNAL as u32;
        // SAFETY: the event is live; the stream is live and capturing.
        unsafe { sys::cuEventRecordWithFlags(self.0, stream, external) }
            .result()
            .during("cuEventRecordWithFlags(EXTERNAL)")
    }

    /// Whether the work before the event is done.
    #[inline]
    pub fn done(&self) -> bool {
        // SAFETY: the event is live.
        unsafe { result::event::query(self.0) }.is_ok()
    }

    #[inline]
    pub fn synchronize(&self) -> Result<(), CudaError> {
        // SAFETY: the event is live.
        unsafe { result::event::synchronize(self.0) }.during("cuEventSynchronize")
    }

    /// Milliseconds from `start` to this event, both recorded and done.
    #[inline]
    pub fn elapsed_ms_since(&self, start: &Event) -> Result<f32, CudaError> {
        // SAFETY: both events are live.
        unsafe { result::event::elapsed(start.0, self.0) }.during("cuEventElapsedTime")
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { result::event::destroy(self.0) };
    }
}
