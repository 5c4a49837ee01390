//! CUDA graphs: a launch captured `count` times and replayed as one submission, each
//! captured launch with the next of the cell's buffer sets where it has several (so that a
//! graph's launches can each find a cold cache).

use super::error::{Check, CudaError};
use super::launch::{Function, Launch, Param};
use super::memory::DeviceBuffer;
use cudarc::driver::{result, sys};
use std::marker::PhantomData;

/// `count` launches captured in a CUDA graph, instantiated once; replays go on the legacy
/// default stream like every other launch. It borrows the launch's buffers.
pub struct Graph<'b> {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    _func: Option<Function>,
    _buffers: PhantomData<&'b DeviceBuffer>,
}

impl<'b> Graph<'b> {
    /// Captures `count` launches; launch `i` takes its parameters from `sets[i % len]`
    /// (one set: all alike), and `launch` is left with the first set's.
    pub fn capture(
        launch: &mut Launch<'b>,
        count: u64,
        sets: &[Vec<Param<'b>>],
    ) -> Result<Graph<'b>, CudaError> {
        let func = launch.resolve()?;
        // The legacy stream cannot be captured; a stream of its own is, then destroyed.
        let stream = result::stream::create(result::stream::StreamKind::NonBlocking)
            .during("cuStreamCreate")?;
        let captured = capture_on(stream, launch, count, sets);
        if let Some(first) = sets.first().filter(|_| sets.len() > 1) {
            for (i, v) in first.iter().enumerate() {
                launch.set_param(i, *v);
            }
        }
        // SAFETY: nothing uses the stream after the capture.
        let _ = unsafe { result::stream::destroy(stream) };
        let (graph, exec) = captured?;
        Ok(Graph {
            graph,
            exec,
            _func: func,
            _buffers: PhantomData,
        })
    }

    /// Replays the graph on the legacy default stream.
    #[inline]
    pub fn launch(&self) -> Result<(), CudaError> {
        // SAFETY: exec is a live instantiated graph whose buffers are borrowed for 'b.
        unsafe { result::graph::launch(self.exec, std::ptr::null_mut()) }.during("cuGraphLaunch")
    }
}

fn capture_on<'b>(
    stream: sys::CUstream,
    launch: &mut Launch<'b>,
    count: u64,
    sets: &[Vec<Param<'b>>],
) -> Result<(sys::CUgraph, sys::CUgraphExec), CudaError> {
    // SAFETY: the stream is live; the launches only record into the graph.
    unsafe {
        result::stream::begin_capture(
            stream,
            sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        )
    }
    .during("cuStreamBeginCapture")?;
    for i in 0..count as usize {
        if sets.len() > 1 {
            for (j, v) in sets[i % sets.len()].iter().enumerate() {
                launch.set_param(j, *v);
            }
        }
        if let Err(e) = launch.enqueue_on(stream) {
            // SAFETY: the capture began on this stream above; ending it leaves the stream
            // ordinary again before it is destroyed, and the partial graph is discarded.
            if let Ok(g) = unsafe { result::stream::end_capture(stream) } {
                // SAFETY: g was just returned by the capture and is not used again.
                let _ = unsafe { result::graph::destroy(g) };
            }
            return Err(CudaError::driver("launch during graph capture", e));
        }
    }
    // SAFETY: the capture began on this stream above.
    let graph = unsafe { result::stream::end_capture(stream) }.during("cuStreamEndCapture")?;
    // SAFETY: graph is the complete graph just captured.
    match unsafe { result::graph::instantiate(graph, sys::CUgraphInstantiate_flags(0)) } {
        Ok(exec) => Ok((graph, exec)),
        Err(e) => {
            // SAFETY: graph was created above and is not used again.
            let _ = unsafe { result::graph::destroy(graph) };
            Err(CudaError::driver("cuGraphInstantiate", e))
        }
    }
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        // SAFETY: both were created in `capture` and are destroyed once.
        unsafe {
            let _ = result::graph::exec_destroy(self.exec);
            let _ = result::graph::destroy(self.graph);
        }
    }
}
