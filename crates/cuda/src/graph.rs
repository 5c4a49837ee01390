//! CUDA graphs: a launch captured `count` times and replayed as one submission, each
//! captured launch with the next of the cell's buffer sets where it has several, or after an
//! L2 flush (so that a graph's launches can each find a cold cache), and where asked between
//! two event nodes that time it inside the replay.

use super::code::Function;
use super::error::{Check, CudaError};
use super::event::Event;
use super::launch::{Launch, Param};
use super::memory::{DeviceBuffer, Fill};
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

/// Buffers set before each launch of one buffer set (`reset`), and how.
pub type Resets<'b> = Vec<(&'b DeviceBuffer, Fill)>;

/// What a graph captures before each of its launches: the resets of the buffer set the
/// launch takes, then an L2 flush, so that every launch starts cold.
pub struct BeforeEachLaunch<'p, 'b> {
    /// Per buffer set, as launch `i` takes set `i % len` (empty: no resets).
    pub resets: &'p [Resets<'b>],
    pub flush: Option<Prelude<'p, 'b>>,
}

impl BeforeEachLaunch<'_, '_> {
    /// Nothing before the launches.
    pub fn nothing() -> Self {
        BeforeEachLaunch {
            resets: &[],
            flush: None,
        }
    }

    fn enqueue_on(&mut self, stream: sys::CUstream, i: usize) -> Result<(), CudaError> {
        if !self.resets.is_empty() {
            for (buf, fill) in &self.resets[i % self.resets.len()] {
                buf.fill_with_on(*fill, stream)?;
            }
        }
        match self.flush.as_mut() {
            Some(p) => p.enqueue_on(stream),
            None => Ok(()),
        }
    }
}

/// An L2 flush captured before each launch of a graph.
pub enum Prelude<'p, 'b> {
    /// Every byte of the buffer set to zero (the memset flush).
    Memset(&'b DeviceBuffer),
    /// A kernel's launch (the flush kernels).
    Launch(&'p mut Launch<'b>),
}

impl Prelude<'_, '_> {
    fn enqueue_on(&mut self, stream: sys::CUstream) -> Result<(), CudaError> {
        match self {
            Prelude::Memset(buf) => buf.fill_on(0, stream),
            Prelude::Launch(l) => l
                .enqueue_on(stream)
                .map_err(|e| CudaError::driver("launch during graph capture", e)),
        }
    }
}

/// Event nodes a graph records on each replay: they time its launches inside the replay,
/// where neither the host's submission nor anything queued before it counts.
#[derive(Clone, Copy)]
pub enum Marks<'b> {
    None,
    /// Launch i between the two nodes of pair i.
    EachLaunch(&'b [(Event, Event)]),
    /// All the launches (and their preludes) between the two nodes of one pair.
    Whole(&'b (Event, Event)),
    /// One node after the first launch: the first launch's time from the replay's start.
    AfterFirst(&'b Event),
}

impl<'b> Marks<'b> {
    /// The node recorded before launch `i` of `count`, and the one after it.
    fn around(self, i: usize, count: usize) -> (Option<&'b Event>, Option<&'b Event>) {
        match self {
            Marks::None => (None, None),
            Marks::EachLaunch(pairs) => pairs
                .get(i)
                .map_or((None, None), |(a, b)| (Some(a), Some(b))),
            Marks::Whole((a, b)) => ((i == 0).then_some(a), (i + 1 == count).then_some(b)),
            Marks::AfterFirst(e) => (None, (i == 0).then_some(e)),
        }
    }
}

impl<'b> Graph<'b> {
    /// Captures `count` launches, each after what `before` holds for it; launch `i`
    /// takes its parameters from `sets[i % len]` (one set: all alike), and `launch` is left
    /// with the first set's; `marks` places event nodes around them.
    pub fn capture(
        launch: &mut Launch<'b>,
        count: u64,
        sets: &[Vec<Param<'b>>],
        mut before: BeforeEachLaunch<'_, 'b>,
        marks: Marks<'b>,
    ) -> Result<Graph<'b>, CudaError> {
        if let Marks::EachLaunch(pairs) = marks {
            if (pairs.len() as u64) < count {
                return Err(CudaError::Library(format!(
                    "{} event pairs for a graph of {count} launches",
                    pairs.len()
                )));
            }
        }
        let func = launch.resolve()?;
        let captured = capture(count, |stream, i| {
            let (opening, closing) = marks.around(i, count as usize);
            before.enqueue_on(stream, i)?;
            if sets.len() > 1 {
                for (j, v) in sets[i % sets.len()].iter().enumerate() {
                    launch.set_param(j, *v);
                }
            }
            if let Some(b) = opening {
                b.record_as_node(stream)?;
            }
            launch
                .enqueue_on(stream)
                .map_err(|e| CudaError::driver("launch during graph capture", e))?;
            match closing {
                Some(a) => a.record_as_node(stream),
                None => Ok(()),
            }
        });
        if let Some(first) = sets.first().filter(|_| sets.len() > 1) {
            for (i, v) in first.iter().enumerate() {
                launch.set_param(i, *v);
            }
        }
        Graph::made(captured?, func)
    }

    /// Captures what `before` holds for `count` launches, without the launches: what a
    /// graph of such pairs spends besides its launches.
    pub fn capture_before(
        mut before: BeforeEachLaunch<'_, 'b>,
        count: u64,
    ) -> Result<Graph<'b>, CudaError> {
        let func = match &mut before.flush {
            Some(Prelude::Launch(l)) => l.resolve()?,
            Some(Prelude::Memset(_)) | None => None,
        };
        let captured = capture(count, |stream, i| before.enqueue_on(stream, i));
        Graph::made(captured?, func)
    }

    fn made(
        (graph, exec): (sys::CUgraph, sys::CUgraphExec),
        func: Option<Function>,
    ) -> Result<Graph<'b>, CudaError> {
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

/// Captures `count` calls of `each` (given the capturing stream and the call's index) on a
/// stream of its own, destroyed after (the legacy stream cannot be captured), and
/// instantiates the graph.
fn capture(
    count: u64,
    each: impl FnMut(sys::CUstream, usize) -> Result<(), CudaError>,
) -> Result<(sys::CUgraph, sys::CUgraphExec), CudaError> {
    let stream =
        result::stream::create(result::stream::StreamKind::NonBlocking).during("cuStreamCreate")?;
    let captured = capture_on(stream, count, each);
    // SAFETY: nothing uses the stream after the capture.
    let _ = unsafe { result::stream::destroy(stream) };
    captured
}

fn capture_on(
    stream: sys::CUstream,
    count: u64,
    mut each: impl FnMut(sys::CUstream, usize) -> Result<(), CudaError>,
) -> Result<(sys::CUgraph, sys::CUgraphExec), CudaError> {
    // SAFETY: the stream is live; the work enqueued on it only records into the graph.
    unsafe {
        result::stream::begin_capture(
            stream,
            sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        )
    }
    .during("cuStreamBeginCapture")?;
    for i in 0..count as usize {
        if let Err(e) = each(stream, i) {
            // SAFETY: the capture began on this stream above; ending it leaves the stream
            // ordinary again before it is destroyed, and the partial graph is discarded.
            if let Ok(g) = unsafe { result::stream::end_capture(stream) } {
                // SAFETY: g was just returned by the capture and is not used again.
                let _ = unsafe { result::graph::destroy(g) };
            }
            return Err(e);
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
