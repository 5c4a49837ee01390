//! Files a run's worker processes share in the run's cache folder (drawn inputs, reference
//! results): each is written whole by the first process that needs it and renamed into
//! place, so a later process reads a complete file or none.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The hash that names `parts` (each length-prefixed, so the cut between them counts).
pub fn key(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().into()
}

/// The file for `parts` in `dir`, named by their hash, with `extension`.
pub fn file(dir: Option<&Path>, parts: &[&[u8]], extension: &str) -> Option<PathBuf> {
    let key: String = key(parts).iter().map(|b| format!("{b:02x}")).collect();
    Some(dir?.join(format!("{key}.{extension}")))
}

/// The file's bytes where another process stored exactly `len` of them.
pub fn read(file: Option<&Path>, len: usize) -> Option<Vec<u8>> {
    let bytes = std::fs::read(file?).ok()?;
    (bytes.len() == len).then_some(bytes)
}

/// The file's bytes cut into pieces of `lens`, where another process stored exactly that
/// many; read straight into each piece (inputs reach gigabytes).
pub fn read_pieces(file: Option<&Path>, lens: &[usize]) -> Option<Vec<Vec<u8>>> {
    use std::io::Read;
    let mut f = std::fs::File::open(file?).ok()?;
    let total: usize = lens.iter().sum();
    if f.metadata().ok()?.len() != total as u64 {
        return None;
    }
    lens.iter()
        .map(|&l| {
            let mut piece = vec![0u8; l];
            f.read_exact(&mut piece).ok().map(|_| piece)
        })
        .collect()
}

/// Stores bytes for later processes; a failure only costs them the work again.
pub fn write(file: Option<&Path>, bytes: &[u8]) {
    write_pieces(file, &[bytes]);
}

/// Stores `pieces` one after another, as [`read_pieces`] reads them: written each in turn,
/// never joined (inputs reach gigabytes, and nothing is copied where there is no file).
pub fn write_pieces(file: Option<&Path>, pieces: &[&[u8]]) {
    // A failed write leaves nothing behind: later processes do the work again.
    if let Some(file) = file {
        let _ = crate::files::write_pieces(file, pieces);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_file_is_read_back_only_at_its_length() {
        let dir = tempfile::tempdir().unwrap();
        let f = file(Some(dir.path()), &[b"a", b"bc"], "bin").unwrap();
        assert_ne!(
            Some(&f),
            file(Some(dir.path()), &[b"ab", b"c"], "bin").as_ref()
        );
        assert_eq!(read(Some(&f), 3), None);
        write(Some(&f), b"xyz");
        assert_eq!(read(Some(&f), 3).as_deref(), Some(&b"xyz"[..]));
        assert_eq!(read(Some(&f), 4), None, "a torn or other file is not used");
        assert_eq!(
            read_pieces(Some(&f), &[1, 2]),
            Some(vec![b"x".to_vec(), b"yz".to_vec()])
        );
        assert_eq!(read_pieces(Some(&f), &[1, 1]), None);
        assert!(file(None, &[b"a"], "bin").is_none());
    }
}
