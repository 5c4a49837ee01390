//! A buffer's contents read back to the host, as every check reads them: the CPU references
//! (`reference/`), and the comparison of two outputs (`agreement.rs`), which a Python
//! reference calls too, so it sits above both.

use crate::experiment::Dtype;
use crate::worker::buffers::POISON;

/// A buffer's contents on the host, read back from the device.
pub struct HostBuffer<'a> {
    pub name: &'a str,
    pub dtype: Dtype,
    pub bytes: &'a [u8],
}

impl HostBuffer<'_> {
    pub(in crate::worker) fn f64_at(&self, i: usize) -> f64 {
        let s = self.dtype.size();
        self.dtype.read(&self.bytes[i * s..(i + 1) * s])
    }

    /// Element `i` of an integer buffer, exactly; None for floats.
    pub(in crate::worker) fn int_at(&self, i: usize) -> Option<i128> {
        let s = self.dtype.size();
        self.dtype.read_int(&self.bytes[i * s..(i + 1) * s])
    }

    /// Element `i` as written in a message: an integer exactly.
    pub(in crate::worker) fn show(&self, i: usize) -> String {
        match self.int_at(i) {
            Some(v) => v.to_string(),
            None => self.f64_at(i).to_string(),
        }
    }

    pub(in crate::worker) fn len(&self) -> usize {
        self.bytes.len() / self.dtype.size()
    }

    /// Whether elements `range` hold the same bytes as `other`'s, and so equal values: none
    /// a NaN (which equals nothing, itself included).
    pub(in crate::worker) fn identical(
        &self,
        other: &HostBuffer,
        range: &std::ops::Range<usize>,
    ) -> bool {
        let s = self.dtype.size();
        let span = range.start * s..range.end * s;
        let mine = self.bytes.get(span.clone());
        let same = mine.is_some() && mine == other.bytes.get(span);
        same && !(self.dtype.is_float() && range.clone().any(|i| self.f64_at(i).is_nan()))
    }

    /// Whether element `i` still holds the poison its buffer was filled with before the
    /// checked launch: the kernel never wrote it.
    pub(in crate::worker) fn poisoned(&self, i: usize) -> bool {
        let s = self.dtype.size();
        self.bytes[i * s..(i + 1) * s].iter().all(|b| *b == POISON)
    }

    /// The account of an output the kernel left (partly) unwritten: `count` of the `of`
    /// elements compared still hold the poison, the first at `first`.
    pub(in crate::worker) fn unwritten(&self, count: usize, of: usize, first: usize) -> String {
        format!(
            "output `{}` was not written: {count} of {of} elements compared still hold the poison, the first {}[{first}]",
            self.name, self.name
        )
    }
}
