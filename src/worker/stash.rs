//! The audit's inputs kept on the device across a point's cells: a leaf, so that the session
//! that holds them and the audit that fills them each import it, not each other.

use cuda::DeviceBuffer;

/// The audit's inputs at one point, kept on the device by the point's first weaker audit
/// and copied into each later one's buffers there: a GiB of inputs crosses the host link
/// once per point and process, not once per cell.
pub(in crate::worker) struct Stash {
    pub(super) point: String,
    /// Per argument: a copy of its audit data, for inputs in device memory.
    pub(super) copies: Vec<Option<DeviceBuffer>>,
}
