//! A cell's buffers: allocated where the experiment puts them (device, managed, mapped,
//! pinned or pageable memory), inputs uploaded, outputs poisoned so only the kernel can make the check
//! pass.

use super::failure::Failure;
use super::inputs::HostInputs;
use super::read_back::{read_back, ReadBack};
use crate::experiment::{managed_bytes, ArgValue, Init, Memory};
use cuda::{self, CudaError, DeviceBuffer, Fill, Param, Resets};

/// The byte every output is filled with before a checked launch: all bits set, NaN in
/// every float type, so that an element the kernel never writes fails the check.
pub const POISON: u8 = 0xFF;

/// How outputs are poisoned before the kernel writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Poison {
    /// A memset on the GPU.
    ByMemset,
    /// A copy from the host, as the inputs are filled: nothing runs on the GPU.
    ByCopy,
}

/// Refuses a cell whose managed buffers (`sets` sets of them) would not fit in the device's
/// free memory now: managed memory beyond it is evicted and refaulted, which can stall a
/// shared GPU. Checked for all sets before the first is made, since managed memory may not
/// count as used until it is touched.
pub(super) fn refuse_managed_beyond_free(args: &[ArgValue], sets: usize) -> Result<(), CudaError> {
    let managed = managed_bytes(args).saturating_mul(sets as u128);
    if managed == 0 {
        return Ok(());
    }
    let (free, _) = cuda::memory_info()?;
    if managed > free as u128 {
        return Err(CudaError::Library(format!(
            "refusing {managed} bytes of managed memory: the device has {free} bytes free, and managed memory beyond it would be evicted and refaulted (on a shared GPU, a stall for everyone); make the buffers smaller or use fewer rotate sets"
        )));
    }
    Ok(())
}

/// Work done to a set of buffers before it is used: an audited region's stage, a
/// reference kernel's inputs drawn on the GPU.
pub(super) type Prepare<'a> = &'a dyn Fn(&Buffers) -> Result<(), Failure>;

/// A cell's device buffers, and what each holds.
pub struct Buffers {
    device: Vec<Option<DeviceBuffer>>,
    /// By argument: whether input data was uploaded into it.
    filled: Vec<bool>,
    /// By argument: whether the kernel writes it as it likes (`init = "scratch"`): never
    /// poisoned, never checked.
    scratch: Vec<bool>,
    /// The buffers set before every launch (`reset`), by argument index, and how.
    resets: Vec<(usize, Fill)>,
}

/// Whether `copy` can be copied into `buf` on the device: both device memory, one size.
fn same_place(copy: &DeviceBuffer, buf: &DeviceBuffer) -> bool {
    copy.bytes() == buf.bytes() && copy.in_device_memory() && buf.in_device_memory()
}

impl Buffers {
    /// Allocates every buffer argument, uploads the inputs (`data`, by argument; those
    /// `copies` holds on the device, of the same bytes, copied from there instead) and
    /// poisons the outputs; scratch buffers are left as allocated.
    pub fn create(
        args: &[ArgValue],
        data: &[Option<&[u8]>],
        poison: Poison,
        copies: &[Option<&DeviceBuffer>],
    ) -> Result<Buffers, CudaError> {
        refuse_managed_beyond_free(args, 1)?;
        let mut device = Vec::new();
        let mut resets = Vec::new();
        let scratch: Vec<bool> = (args.iter())
            .map(|a| {
                matches!(
                    a,
                    ArgValue::Buffer {
                        init: Init::Scratch,
                        ..
                    }
                )
            })
            .collect();
        for ((a, data), scratch) in args.iter().zip(data).zip(&scratch) {
            match a {
                ArgValue::Buffer {
                    dtype,
                    len,
                    memory,
                    init,
                } => {
                    let bytes = len * dtype.size();
                    let buf = match memory {
                        Memory::Device => DeviceBuffer::alloc(bytes)?,
                        Memory::Managed => DeviceBuffer::alloc_managed(bytes)?,
                        Memory::Mapped => DeviceBuffer::alloc_mapped(bytes)?,
                        Memory::Pinned => DeviceBuffer::alloc_pinned(bytes)?,
                        Memory::Pageable => DeviceBuffer::alloc_pageable(bytes),
                    };
                    let copy = (copies.get(device.len()).copied().flatten())
                        .filter(|c| same_place(c, &buf));
                    match (data, copy, poison) {
                        (Some(_), Some(copy), _) => buf.copy_from(copy)?,
                        (Some(data), None, _) => buf.upload(data)?,
                        (None, _, _) if *scratch => {}
                        (None, _, Poison::ByMemset) => buf.fill(POISON)?,
                        (None, _, Poison::ByCopy) => buf.fill_by_copy(POISON)?,
                    }
                    if let Init::Reset(value) = init {
                        let (unit, each) = crate::experiment::reset_memset(*dtype, *value)
                            .map_err(|e| CudaError::Library(e.0))?;
                        let fill = Fill::new(unit, each).ok_or_else(|| {
                            CudaError::Library(format!("a memset of {unit}-byte units"))
                        })?;
                        resets.push((device.len(), fill));
                    }
                    device.push(Some(buf));
                }
                ArgValue::Scalar { .. } => device.push(None),
            }
        }
        Ok(Buffers {
            device,
            filled: data.iter().map(Option::is_some).collect(),
            scratch,
            resets,
        })
    }

    /// Enqueues the resets (`reset = ...`) of these buffers on the legacy stream, ahead of
    /// anything enqueued after them; nothing when there are none.
    pub fn reset(&self) -> Result<(), CudaError> {
        for (buf, fill) in self.reset_list() {
            buf.fill_with_async(fill)?;
        }
        Ok(())
    }

    /// The buffers set before every launch and how, as a graph captures them.
    pub fn reset_list(&self) -> Resets<'_> {
        self.resets
            .iter()
            .filter_map(|&(i, fill)| Some((self.device[i].as_ref()?, fill)))
            .collect()
    }

    /// Whether any buffer is set before every launch.
    pub fn resets(&self) -> bool {
        !self.resets.is_empty()
    }

    /// The arguments that hold input data (their initial contents drawn or read).
    pub fn inputs(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.device.len()).filter(|&i| self.device[i].is_some() && self.filled[i])
    }

    /// How many arguments the set is for, buffers or not.
    pub fn arguments(&self) -> usize {
        self.device.len()
    }

    /// Argument `index`'s buffer, where it is one.
    pub fn buffer(&self, index: usize) -> Option<&DeviceBuffer> {
        self.device.get(index)?.as_ref()
    }

    /// The first byte of input `index` that differs from `data` (its bytes as uploaded),
    /// read back now: where a kernel wrote into a buffer it was given to read.
    pub fn first_change(&self, index: usize, data: &[u8]) -> Result<Option<usize>, Failure> {
        let now = self.download(index)?;
        Ok(now.iter().zip(data).position(|(a, b)| a != b))
    }

    /// Argument `index`'s buffer, read back (into memory kept for the next read).
    pub fn download(&self, index: usize) -> Result<ReadBack, Failure> {
        read_back(self.device[index].as_ref().ok_or_else(not_a_buffer)?)
    }

    /// Argument `index`'s buffer, with only the byte `ranges` read back (the rest zero).
    pub fn download_ranges(
        &self,
        index: usize,
        ranges: &[std::ops::Range<usize>],
    ) -> Result<ReadBack, Failure> {
        let buffer = self.device[index].as_ref().ok_or_else(not_a_buffer)?;
        let bytes = buffer.download_ranges(ranges).map_err(Failure::message)?;
        Ok(ReadBack::from(bytes))
    }

    /// Copies other input data (drawn as `host` was) into these buffers: from `copies` on
    /// the device where it holds the argument's data, else from the host.
    pub fn refill_from(
        &self,
        copies: &[Option<DeviceBuffer>],
        host: &HostInputs,
    ) -> Result<(), CudaError> {
        for (i, (d, h)) in self.device.iter().zip(host.iter()).enumerate() {
            match (d, h, copies.get(i).and_then(Option::as_ref)) {
                (Some(buf), Some(_), Some(copy)) => buf.copy_from(copy)?,
                (Some(buf), Some(data), None) => buf.upload(data)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Copies other input data (drawn as `host` was) into these buffers.
    pub fn refill(&self, host: &HostInputs) -> Result<(), CudaError> {
        let data: Vec<Option<&[u8]>> = host.iter().map(|h| h.as_deref()).collect();
        self.upload(&data)
    }

    /// Uploads `data` (by argument; None: left as it is) into these buffers.
    pub fn upload(&self, data: &[Option<&[u8]>]) -> Result<(), CudaError> {
        self.upload_from(data, &[])
    }

    /// As [`Buffers::upload`], each that `copies` holds (by argument: `data`'s bytes, on the
    /// device) copied from there instead.
    pub fn upload_from(
        &self,
        data: &[Option<&[u8]>],
        copies: &[Option<&DeviceBuffer>],
    ) -> Result<(), CudaError> {
        for (i, (d, h)) in self.device.iter().zip(data).enumerate() {
            let copy = copies.get(i).copied().flatten();
            match (d, h, copy) {
                (Some(buf), Some(_), Some(copy)) if same_place(copy, buf) => buf.copy_from(copy)?,
                (Some(buf), Some(data), _) => buf.upload(data)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The kernel's parameters: these buffers, and the scalars' bytes.
    pub fn params<'b>(&'b self, args: &[ArgValue]) -> Vec<Param<'b>> {
        args.iter()
            .zip(&self.device)
            .map(|(a, d)| match (a, d) {
                (_, Some(buf)) => Param::Buffer(buf),
                (ArgValue::Scalar { bytes, .. }, None) => Param::bytes(bytes),
                (ArgValue::Buffer { .. }, None) => {
                    unreachable!("every buffer argument has a device buffer")
                }
            })
            .collect()
    }

    /// Outputs are poisoned (all bits set: NaN for floats) so an unwritten element fails the check.
    pub fn poison_outputs(&self) -> Result<(), CudaError> {
        self.fill_outputs(POISON)
    }

    /// Sets every byte of the outputs (the buffers no input data fills), scratch ones left.
    pub fn fill_outputs(&self, byte: u8) -> Result<(), CudaError> {
        for (i, d) in self.device.iter().enumerate() {
            if let (Some(buf), false, false) = (d, self.filled[i], self.scratch[i]) {
                buf.fill(byte)?;
            }
        }
        Ok(())
    }
}

/// A check that names an argument without a buffer for its output.
pub(super) fn not_a_buffer() -> Failure {
    Failure::from("the checked output is not a buffer".to_string())
}
