//! Everything that touches CUDA: the driver, NVRTC and CUPTI through cudarc, behind safe
//! types. All of the runner's `unsafe` lives here, each block with its SAFETY comment; the
//! rest of the runner handles no raw CUDA handle. Errors are typed ([`CudaError`]).

mod bare;
mod code;
pub mod cupti;
mod device;
mod error;
mod event;
mod graph;
mod host_flag;
mod launch;
mod memory;
pub mod nvrtc;

pub use bare::events_loop as bare_events_loop;
pub use code::{release_free_heap, Attributes, Function, LazyFunction, LazyModule, Module};
pub use device::{
    device_count, driver_present, nvrtc_version, query, synchronize, Gpu, LaunchLimits, Queried,
    CONTEXT, DRIVER_INIT,
};
pub use error::CudaError;
pub use event::Event;
pub use graph::{BeforeEachLaunch, Graph, Marks, Prelude, Resets};
pub use host_flag::HostFlag;
pub use launch::{release_l2, set_aside_l2, AccessWindow, Dims, Launch, Param};
pub use memory::{memory_info, DeviceBuffer, Fill};

/// What a machine without the CUDA driver is told.
pub const NO_DRIVER: &str = "no CUDA driver: libcuda could not be loaded, so nothing can run on a GPU here.\n  \
`runner plan EXPERIMENT` shows what a run would do, and `runner report DIR` renders a stored run, without a GPU.";
