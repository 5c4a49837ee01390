//! Inputs kept on the device across a point's cells: a leaf, so that the session that holds
//! them and the stages that fill and read them each import it, not each other.

use super::buffers::Buffers;
use super::failure::{during, Failure};
use super::inputs::HostInputs;
use super::kernels::{KernelKey, Kernels};
use super::timeline::Timeline;
use crate::method::equal;
use cuda::DeviceBuffer;
use std::rc::Rc;

/// Inputs kept on the device and copied there into each later buffer that takes them: a
/// GiB of inputs crosses the host link once per draw and process, not once per cell and
/// check. The session keeps two: the audit's (made by a point's first weaker audit), and
/// the timed data's (made by the first cell of a draw key, read by the cells of that key
/// that follow it, whatever their kernel and point, and by every reference kernel's check
/// on that data).
pub(in crate::worker) struct Stash {
    /// What it is kept for: the audit's point (`Cell::point_key`), or the timed data's draw
    /// key (`Cell::draw_key`), which cells of other kernels and points may share.
    pub(super) key: String,
    /// The data the copies hold.
    pub(super) held: HostInputs,
    /// Per argument: a copy of its data, for inputs in device memory.
    pub(super) copies: Vec<Option<DeviceBuffer>>,
    /// Per copy, its checksum once taken (`seal`): a kernel that writes past its buffers
    /// into a copy would hand the cells after it other inputs than they were drawn.
    pub(super) sums: Vec<Option<u64>>,
}

/// A stash takes at most this share of the device's free memory, and leaves the rest of
/// what its cell allocates after it (see [`Stash::of_buffers`]) free besides.
const FREE_SHARE: f64 = 0.25;

impl Stash {
    /// The copies of `host`'s data, where this stash holds that very data (the same draw,
    /// not an equal one).
    pub(in crate::worker) fn copies_of(
        &self,
        host: &HostInputs,
    ) -> Option<&[Option<DeviceBuffer>]> {
        Rc::ptr_eq(&self.held, host).then_some(&self.copies[..])
    }

    /// The inputs `buffers` holds in device memory as uploaded from `host`, copied on the
    /// device; None where they would take more than [`FREE_SHARE`] of the free memory or
    /// leave less than `after` bytes (what the cell allocates later: its other sets, flush,
    /// reference kernel's buffers and audit's draws), or a copy cannot be made.
    pub(in crate::worker) fn of_buffers(
        (key, after): (&str, u64),
        buffers: &Buffers,
        host: &HostInputs,
    ) -> Option<Stash> {
        let kept = |i: usize| -> Option<&DeviceBuffer> {
            host[i].as_ref()?;
            buffers.buffer(i).filter(|b| b.in_device_memory())
        };
        let bytes: usize = (0..host.len()).filter_map(kept).map(|b| b.bytes()).sum();
        let (free, _) = cuda::memory_info().ok()?;
        let room = (free as u64).saturating_sub(after);
        if bytes == 0 || bytes as f64 > FREE_SHARE * free as f64 || bytes as u64 >= room {
            return None;
        }
        let mut copies = Vec::with_capacity(host.len());
        for i in 0..host.len() {
            copies.push(match kept(i) {
                Some(_) => Some(copy_of(buffers, i, None, "keeping the timed inputs").ok()??),
                None => None,
            });
        }
        Some(Stash {
            key: key.to_string(),
            held: Rc::clone(host),
            copies,
            sums: Vec::new(),
        })
    }

    /// Takes each copy's checksum under `key` (the run's secret seed), on the GPU.
    pub(in crate::worker) fn seal(
        &mut self,
        kernels: &mut Kernels,
        timeline: &mut Timeline,
        key: u64,
    ) -> Result<(), Failure> {
        self.sums = self.checksums(kernels, timeline, key)?;
        Ok(())
    }

    /// The first argument whose copy no longer holds what it held when sealed.
    pub(in crate::worker) fn changed(
        &self,
        kernels: &mut Kernels,
        timeline: &mut Timeline,
        key: u64,
    ) -> Result<Option<usize>, Failure> {
        let now = self.checksums(kernels, timeline, key)?;
        Ok((0..now.len()).find(|&i| now[i] != self.sums.get(i).copied().flatten()))
    }

    fn checksums(
        &self,
        kernels: &mut Kernels,
        timeline: &mut Timeline,
        key: u64,
    ) -> Result<Vec<Option<u64>>, Failure> {
        let compare = kernels.comparison(KernelKey::Checksum, timeline)?;
        (self.copies.iter())
            .map(|c| {
                c.as_ref()
                    .map(|c| equal::checksum(&compare, c, key))
                    .transpose()
            })
            .collect::<Result<_, _>>()
            .map_err(during("checking the inputs kept on the device"))
    }
}

/// A new device buffer the size of argument `index`'s, holding `host`'s bytes or else a
/// copy of the buffer's own; None where the argument is not in device memory or no copy
/// fits (its caller then works from the host).
pub(in crate::worker) fn copy_of(
    buffers: &Buffers,
    index: usize,
    host: Option<&[u8]>,
    what: &'static str,
) -> Result<Option<DeviceBuffer>, Failure> {
    let Some(buf) = buffers.buffer(index).filter(|b| b.in_device_memory()) else {
        return Ok(None);
    };
    let Ok(copy) = DeviceBuffer::alloc(buf.bytes()) else {
        return Ok(None);
    };
    match host {
        Some(bytes) => copy.upload(bytes),
        None => copy.copy_from(buf),
    }
    .map_err(during(what))?;
    Ok(Some(copy))
}
