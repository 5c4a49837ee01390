//! `.npy` files as a buffer's initial contents (`init = "npy(data/x.npy)"`): the header is
//! read when the experiment is checked (type and element count against the buffer's), the
//! data by the worker from the offset the header gives.

use super::error::BadValue;
use super::Dtype;

/// What a `.npy` header says: the element type, how many elements, where the data starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub dtype: Dtype,
    pub count: u64,
    pub offset: u64,
}

/// Reads the header of the file at `path`.
pub fn header(path: &std::path::Path) -> Result<Header, BadValue> {
    use std::io::Read;
    let mut f = crate::files::open(path)
        .map_err(|e| BadValue(format!("cannot read {}: {e}", path.display())))?;
    let mut head = vec![0u8; 12];
    f.read_exact(&mut head)
        .map_err(|_| BadValue(format!("{} is too short for a .npy file", path.display())))?;
    let (len, start) =
        parse_preamble(&head).map_err(|m| BadValue(format!("{}: {m}", path.display())))?;
    // The 12 bytes read hold the header's first bytes where its length took only 2.
    let mut text = head[start..].to_vec();
    let mut more = vec![0u8; len.saturating_sub(text.len())];
    f.read_exact(&mut more)
        .map_err(|_| BadValue(format!("{}: the header is cut short", path.display())))?;
    text.extend(more);
    let (dtype, count) = parse_dict(&String::from_utf8_lossy(&text))
        .map_err(|m| BadValue(format!("{}: {m}", path.display())))?;
    Ok(Header {
        dtype,
        count,
        offset: (start + len) as u64,
    })
}

/// The header's length and where it starts, from the magic string and version.
fn parse_preamble(head: &[u8]) -> Result<(usize, usize), BadValue> {
    if !head.starts_with(b"\x93NUMPY") {
        return Err(BadValue("not a .npy file (no \\x93NUMPY magic)".into()));
    }
    match head[6] {
        1 => Ok((u16::from_le_bytes([head[8], head[9]]) as usize, 10)),
        2 | 3 => Ok((
            u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize,
            12,
        )),
        v => Err(BadValue(format!(".npy version {v} is not known"))),
    }
}

/// The type and element count of a header's dictionary
/// (`{'descr': '<f4', 'fortran_order': False, 'shape': (32, 32), }`).
fn parse_dict(text: &str) -> Result<(Dtype, u64), BadValue> {
    let value = |key: &str| -> Result<&str, BadValue> {
        let at = text
            .find(&format!("'{key}'"))
            .ok_or_else(|| BadValue(format!("the header has no '{key}'")))?;
        let rest = text[at + key.len() + 2..].trim_start();
        Ok(rest.strip_prefix(':').unwrap_or(rest).trim_start())
    };
    let descr = value("descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or_else(|| BadValue("cannot read 'descr'".into()))?;
    // bf16 has no numpy type of its own: its bits are stored as '<u2'.
    let dtype = match descr {
        "<f2" => Dtype::F16,
        "<f4" => Dtype::F32,
        "<f8" => Dtype::F64,
        "|i1" => Dtype::I8,
        "|u1" => Dtype::U8,
        "<i2" => Dtype::I16,
        "<u2" => Dtype::U16,
        "<i4" => Dtype::I32,
        "<u4" => Dtype::U32,
        "<i8" => Dtype::I64,
        "<u8" => Dtype::U64,
        d => return Err(BadValue(format!("the element type '{d}' is not one the runner reads (little-endian numbers, or '<u2' for bf16 bits)"))),
    };
    if value("fortran_order")?.starts_with("True") {
        return Err(BadValue(
            "the array is in Fortran order; save it in C order".into(),
        ));
    }
    let shape = value("shape")?;
    let dims = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| BadValue("cannot read 'shape'".into()))?;
    let count = dims
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .try_fold(1u64, |n, d| {
            d.parse::<u64>()
                .ok()
                .and_then(|d| n.checked_mul(d))
                .ok_or_else(|| BadValue(format!("cannot read the shape ({dims})")))
        })?;
    Ok((dtype, count))
}

/// Whether a file of `file` elements can initialise a buffer of `buffer` elements.
pub fn fits(file: Dtype, buffer: Dtype) -> bool {
    file == buffer || (file == Dtype::U16 && buffer == Dtype::Bf16)
}

/// A version-1 .npy file of `values` (f32, shape `shape`), for tests.
#[cfg(test)]
pub fn npy_f32(shape: &str, values: &[f32]) -> Vec<u8> {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
    let mut header = dict.into_bytes();
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header);
    out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_gives_type_count_and_data_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        std::fs::write(&path, npy_f32("(2, 3)", &[1.0; 6])).unwrap();
        let h = header(&path).unwrap();
        assert_eq!((h.dtype, h.count, h.offset), (Dtype::F32, 6, 128));
        std::fs::write(&path, npy_f32("(5,)", &[1.0; 5])).unwrap();
        assert_eq!(header(&path).unwrap().count, 5);
        std::fs::write(&path, b"not numpy at all").unwrap();
        assert!(header(&path).unwrap_err().0.contains("magic"));
        let mut fortran = npy_f32("(2, 3)", &[1.0; 6]);
        let at = fortran.windows(5).position(|w| w == b"False").unwrap();
        fortran[at..at + 5].copy_from_slice(b"True ");
        std::fs::write(&path, &fortran).unwrap();
        let e = header(&path).unwrap_err();
        assert!(e.0.contains("Fortran"), "{e}");
        assert!(header(&dir.path().join("missing.npy")).is_err());
    }
}
