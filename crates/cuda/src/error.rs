//! A CUDA failure, typed, so that callers decide on it (a lost context ends the worker)
//! instead of rediscovering it from a message.

use cudarc::driver::{result::DriverError, sys};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CudaError {
    /// A driver API call failed with this code.
    #[error("{call}: {}", described(*.code))]
    Driver { call: String, code: sys::CUresult },
    /// NVRTC, CUPTI or a missing library: the message says what and how to fix it.
    #[error("{0}")]
    Library(String),
}

impl CudaError {
    pub fn driver(call: impl Into<String>, e: DriverError) -> Self {
        CudaError::Driver {
            call: call.into(),
            code: e.0,
        }
    }

    /// Whether the device ran out of memory.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(
            self,
            CudaError::Driver {
                code: sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY,
                ..
            }
        )
    }

    /// Whether the error leaves the context unusable, so the process must not go on.
    pub fn is_sticky(&self) -> bool {
        use sys::CUresult::*;
        matches!(
            self,
            CudaError::Driver {
                code: CUDA_ERROR_ILLEGAL_ADDRESS
                    | CUDA_ERROR_LAUNCH_FAILED
                    | CUDA_ERROR_ILLEGAL_INSTRUCTION
                    | CUDA_ERROR_MISALIGNED_ADDRESS
                    | CUDA_ERROR_INVALID_ADDRESS_SPACE
                    | CUDA_ERROR_INVALID_PC
                    | CUDA_ERROR_HARDWARE_STACK_ERROR
                    | CUDA_ERROR_ASSERT
                    | CUDA_ERROR_LAUNCH_TIMEOUT
                    | CUDA_ERROR_CONTEXT_IS_DESTROYED,
                ..
            }
        )
    }
}

/// A driver's result code by its name and the driver's words: `CUDA_ERROR_X (what)`.
fn described(code: sys::CUresult) -> String {
    let e = DriverError(code);
    let text = |s: Result<&std::ffi::CStr, DriverError>| {
        s.map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    format!("{} ({})", text(e.error_name()), text(e.error_string()))
}

/// Turns a driver result into a typed error naming the call.
pub trait Check<T> {
    fn during(self, call: &str) -> Result<T, CudaError>;
}

impl<T> Check<T> for Result<T, DriverError> {
    fn during(self, call: &str) -> Result<T, CudaError> {
        self.map_err(|e| CudaError::driver(call, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_are_sticky_and_a_bad_value_is_not() {
        let fault = CudaError::Driver {
            call: "launch".into(),
            code: sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
        };
        assert!(fault.is_sticky());
        let bad = CudaError::Driver {
            call: "launch".into(),
            code: sys::CUresult::CUDA_ERROR_INVALID_VALUE,
        };
        assert!(!bad.is_sticky());
        assert!(!CudaError::Library("nvrtc".into()).is_sticky());
    }
}
