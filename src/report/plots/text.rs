//! How wide a plot's text is drawn: an SVG names its font ("sans-serif") and leaves its
//! widths to the viewer, so a legend's room is measured against a wide common face.

/// Advance widths of DejaVu Sans (the usual "sans-serif" on Linux, wider than Arial or
/// Helvetica) for the printable ASCII characters, from the space on, in 1/2048 em.
#[rustfmt::skip]
const ASCII_WIDTHS: [u16; 95] = [
    // ' ' to '/'
    651, 821, 942, 1716, 1303, 1946, 1597, 563, 799, 799, 1024, 1716, 651, 739, 651, 690,
    // '0' to '?'
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690, 690, 1716, 1716, 1716, 1087,
    // '@' to 'O'
    2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604, 604, 1343, 1141, 1767, 1532, 1612,
    // 'P' to '_'
    1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799, 690, 799, 1716, 1024,
    // '`' to 'o'
    1024, 1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569, 569, 1186, 569, 1995, 1298, 1253,
    // 'p' to '~'
    1300, 1300, 842, 1067, 803, 1298, 1212, 1675, 1212, 1212, 1075, 1303, 690, 1303, 1716,
];

/// The width of `c` in 1/2048 em: its own where it is ASCII, a digit's for other letters of
/// the Latin alphabets (µ, é), a whole em for the rest (CJK, symbols).
fn char_width(c: char) -> u32 {
    match c as u32 {
        code @ 32..=126 => u32::from(ASCII_WIDTHS[(code - 32) as usize]),
        0..=0x24f => 1303,
        _ => 2048,
    }
}

/// plotters' SVG writes a font of size `s` as `font-size` `s / 1.24`.
const SVG_FONT_SCALE: f64 = 1.24;

/// How many pixels `text` takes in an SVG plotters draws it in at font size `size`, in a wide
/// sans-serif face: no less than a viewer draws it, so what is placed by it is not cut off.
pub(super) fn width(text: &str, size: u32) -> u32 {
    let units: u32 = text.chars().map(char_width).sum();
    (f64::from(units) * f64::from(size) / SVG_FONT_SCALE / 2048.0).ceil() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_measured_as_a_wide_sans_serif_draws_it() {
        // Size 31 is drawn at 25 px: DejaVu Sans's "m" 24.4 px, "i" 7.0 px.
        assert_eq!(width("m", 31), 25);
        assert_eq!(width("i", 31), 7);
        assert_eq!(width("", 14), 0);
        // The longest phase's name at size 14 (11.3 px): 234 px, rounded up; a legend column
        // of 240 px less its 30 px of swatch did not hold it.
        let phase = "compiled image (from an earlier process)";
        assert_eq!(width(phase, 14), 235);
        assert_eq!(width("µé", 10), width("00", 10));
        assert_eq!(width("漢", 31), 25);
    }
}
