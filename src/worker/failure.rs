//! How a cell fails: the message a step gives, and whether the CUDA context survived it.
//! Its own file so that every step of the cell can use it without importing the cell. The
//! worker's other work (opening the device, the GPU warm-up) fails with it too.

use crate::method::flush::FlushError;
use cuda::CudaError;

/// A cell's failure (or the worker's), and whether it broke the context.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) message: String,
    pub(super) context_lost: bool,
}

impl Failure {
    /// The same failure, its message prefixed (which step of the cell it was).
    pub(super) fn during(self, what: &str) -> Failure {
        Failure {
            message: format!("{what}: {}", self.message),
            ..self
        }
    }
}

impl Failure {
    /// A failure of a step that leaves judging the context to the steps after it (the
    /// clock probe, reading an output back for its check): its message alone.
    pub(super) fn message(e: impl std::fmt::Display) -> Failure {
        Failure::from(e.to_string())
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure {
            message,
            context_lost: false,
        }
    }
}

impl From<CudaError> for Failure {
    fn from(e: CudaError) -> Self {
        Failure {
            context_lost: e.is_sticky(),
            message: e.to_string(),
        }
    }
}

/// A flush that cannot be made breaks nothing: its buffer did not fit, or its kernel is
/// missing.
impl From<FlushError> for Failure {
    fn from(e: FlushError) -> Self {
        Failure::message(e)
    }
}

/// A CUDA error of one step of the cell, named.
pub(super) fn during(what: &'static str) -> impl Fn(CudaError) -> Failure {
    move |e| Failure::from(e).during(what)
}
