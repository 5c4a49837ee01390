//! The bootstrap's seed for a cell. The units and their interval are `statistics`'; the seed
//! hashes with `system`, which that leaf, importing nothing of the runner, cannot.

/// The bootstrap's seed from a text (a cell's id), so a report renders the same twice.
pub fn seed_of(text: &str) -> u64 {
    u64::from_str_radix(&crate::system::sha256_hex(text.as_bytes())[..16], 16).unwrap_or(0)
}
