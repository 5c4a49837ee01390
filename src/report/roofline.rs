//! A roofline where kernels declare both bytes and FLOPs: each trusted cell at its
//! arithmetic intensity (declared FLOPs over declared bytes) and its FLOP rate, under the
//! roofs of the device's DRAM and of each FLOP type the kernels count against. A point on a
//! slanted roof is bound by DRAM, on a flat one by its unit; far below both, by neither.

use super::plots::{self, Line, XScale};
use crate::analysis::Analysis;

/// The roofline plot's title and SVG; None where no kernel declares both bytes and FLOPs, no
/// cell of one is trusted, or the device's peaks are unknown.
pub fn plot(a: &Analysis) -> Result<Option<(String, String)>, plots::PlotError> {
    let exp = &a.run.experiment;
    let Some((peaks, dram)) = a.peaks.as_ref().and_then(|p| Some((p, p.dram?))) else {
        return Ok(None);
    };
    let variants = &exp.variants;
    let mut lines = Vec::new();
    let mut types = Vec::new();
    for (k, kernel) in exp.timed_kernels() {
        for v in variants {
            let mut points: Vec<(f64, f64)> = (kernel.points.iter().enumerate())
                .filter_map(|(i, p)| {
                    let launch = kernel.launches.get(i)?;
                    let (flops, bytes) = (launch.flops?, launch.bytes?);
                    let ns = a.sound_median_at(k, p, &v.name)?;
                    // A log axis holds no point of zero work.
                    (bytes > 0.0 && flops > 0.0)
                        .then(|| (flops / bytes, flops / (ns * 1e-9) / 1e12))
                })
                .collect();
            if points.is_empty() {
                continue;
            }
            points.sort_by(|x, y| x.0.total_cmp(&y.0));
            let name = match variants.len() {
                1 => kernel.name.clone(),
                _ => format!("{} {}", kernel.name, v.name),
            };
            lines.push(Line::plain(name, points));
            types.push(kernel.counted_as());
        }
    }
    let intensities = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let (lo, hi) = intensities.fold((f64::INFINITY, 0f64), |(a, b), x| (a.min(x), b.max(x)));
    if lines.is_empty() || lo.is_nan() || lo <= 0.0 {
        return Ok(None);
    }
    // The roofs span the points and their ridges, a factor of 4 beyond.
    types.sort_by(|x, y| x.name().cmp(y.name()));
    types.dedup();
    for t in types {
        let Some(peak) = peaks.flops(&t) else {
            continue;
        };
        let ridge = peak / dram;
        let (x0, x1) = (lo.min(ridge) / 4.0, hi.max(ridge) * 4.0);
        let roof = |x: f64| (x, (x * dram).min(peak) / 1e12);
        let name = format!("roof: DRAM, {}", t.name());
        lines.push(Line::plain(name, vec![roof(x0), roof(ridge), roof(x1)]));
    }
    let title = "roofline: each trusted cell's FLOP rate against its intensity".to_string();
    let x = "arithmetic intensity (declared FLOP per declared byte)";
    let svg = plots::lines(&title, x, "TFLOP/s", &lines, XScale::Log)?;
    Ok((!svg.is_empty()).then_some((title, svg)))
}
