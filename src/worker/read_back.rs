//! Buffers read back to the host for a check, into host memory kept from one check to the
//! next. Checks read back the same sizes again and again (a point's outputs, each audited
//! region's draw, a Python reference's answer), and on a virtual machine's host a fresh
//! 64 MiB cost 40 ms of page faults where the copy itself took 4 ms.

use crate::worker::failure::Failure;
use cuda::DeviceBuffer;
use std::io::Read;
use std::ops::Deref;
use std::path::Path;
use std::sync::Mutex;

/// The most host memory kept for the next read, in bytes: a few of the largest outputs.
const KEPT_BYTES: usize = 1 << 30;

static KEPT: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// Bytes read back, whose memory is kept for the next read once they are dropped.
pub struct ReadBack(Vec<u8>);

impl Deref for ReadBack {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for ReadBack {
    fn drop(&mut self) {
        keep(std::mem::take(&mut self.0));
    }
}

impl From<Vec<u8>> for ReadBack {
    fn from(bytes: Vec<u8>) -> ReadBack {
        ReadBack(bytes)
    }
}

/// `buffer`'s bytes, read back into kept memory where some is large enough.
pub fn read_back(buffer: &DeviceBuffer) -> Result<ReadBack, Failure> {
    let mut out = take(buffer.bytes());
    buffer.download_into(&mut out).map_err(Failure::message)?;
    Ok(ReadBack(out))
}

/// The file at `path`, of `len` bytes, read into kept memory; its size where it holds
/// another number of bytes.
pub fn read_file(path: &Path, len: usize) -> std::io::Result<Result<ReadBack, u64>> {
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size != len as u64 {
        return Ok(Err(size));
    }
    let mut out = take(len);
    out.resize(len, 0);
    file.read_exact(&mut out)?;
    Ok(Ok(ReadBack(out)))
}

/// The smallest kept memory that holds `bytes` and no more than twice them (a small read
/// that took a large one would hold it from the next large read), else none (empty).
fn take(bytes: usize) -> Vec<u8> {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let fits = (kept.iter().enumerate())
        .filter(|(_, v)| v.capacity() >= bytes && v.capacity() / 2 <= bytes)
        .min_by_key(|(_, v)| v.capacity())
        .map(|(i, _)| i);
    fits.map(|i| kept.swap_remove(i)).unwrap_or_default()
}

/// Keeps `memory` for the next read; the largest go first past [`KEPT_BYTES`].
fn keep(memory: Vec<u8>) {
    if memory.capacity() == 0 {
        return;
    }
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    kept.push(memory);
    kept.sort_by_key(Vec::capacity);
    while kept.iter().map(Vec::capacity).sum::<usize>() > KEPT_BYTES {
        kept.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_given_back_is_taken_again_by_a_read_that_fits() {
        let bytes = vec![7u8; 3 << 20];
        let address = bytes.as_ptr();
        drop(ReadBack::from(bytes));
        // The smallest that fits: the 3 MiB, not a larger one kept beside it.
        drop(ReadBack::from(vec![0u8; 5 << 20]));
        let again = take(2 << 20);
        assert_eq!(again.as_ptr(), address);
        // Not for a read of a few bytes: it would hold the 5 MiB from the next large read.
        assert_eq!(take(16).capacity(), 0);
    }

    #[test]
    fn a_file_of_another_size_is_told_by_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        std::fs::write(&path, [1u8, 2, 3, 4]).unwrap();
        assert_eq!(read_file(&path, 4).unwrap().unwrap()[..], [1, 2, 3, 4]);
        assert!(matches!(read_file(&path, 2).unwrap(), Err(4)));
        assert!(matches!(read_file(&path, 8).unwrap(), Err(4)));
    }
}
