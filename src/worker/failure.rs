//! How a cell fails: the message a step gives, which step it was, and whether the CUDA
//! context survived it. Its own file so that every step of the cell can use it without
//! importing the cell. The worker's other work (opening the device, the GPU warm-up) fails
//! with it too.

use crate::method::flush::FlushError;
use crate::protocol::FailureKind;
use cuda::CudaError;

/// A cell's failure (or the worker's), and whether it broke the context.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) message: String,
    pub(super) context_lost: bool,
    /// The kind of the step that failed, once a step of the cell says (see [`of_kind`]).
    pub(super) kind: Option<FailureKind>,
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
            kind: None,
        }
    }
}

impl From<CudaError> for Failure {
    fn from(e: CudaError) -> Self {
        Failure {
            context_lost: e.is_sticky(),
            message: e.to_string(),
            kind: None,
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

/// Marks a step's failures as of `kind`, unless a step within it marked them first: the
/// check inside the sampling is a check, the audit's re-check an audit.
pub(super) fn of_kind(kind: FailureKind) -> impl Fn(Failure) -> Failure {
    move |f| Failure {
        kind: f.kind.or(Some(kind)),
        ..f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_innermost_step_that_says_names_the_kind_and_the_message_stays() {
        let f = Failure::from("output `y` was not written".to_string());
        assert_eq!(f.kind, None);
        let checked = of_kind(FailureKind::Check)(f);
        let sampled = of_kind(FailureKind::Launch)(checked);
        assert_eq!(sampled.kind, Some(FailureKind::Check));
        assert_eq!(sampled.message, "output `y` was not written");
        // A step's name before the message keeps the kind.
        let audited = of_kind(FailureKind::Audit)(Failure::from("stale".to_string()));
        let named = audited.during("audit on new inputs");
        assert_eq!(named.kind, Some(FailureKind::Audit));
        assert_eq!(named.message, "audit on new inputs: stale");
    }
}
