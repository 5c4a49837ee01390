//! How a cell fails: the message a step gives, and whether the CUDA context survived it.
//! Its own file so that every step of the cell can use it without importing the cell.

use crate::cuda::CudaError;

/// A cell's failure, and whether it broke the context.
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

/// A CUDA error of one step of the cell, named.
pub(super) fn during(what: &'static str) -> impl Fn(CudaError) -> Failure {
    move |e| Failure::from(e).during(what)
}
