//! `[report] fit = true`: each kernel's median time against the bytes it declares, fitted as
//! `time = a + bytes / b` (`analysis::fit`), worded: a is the time a launch costs however
//! little it moves, b the bandwidth it reaches when large.

use super::format;
use crate::analysis::fit::Scope;
use crate::analysis::Analysis;
use crate::experiment::knobs::cache::bytes_text;
use crate::experiment::Unit;
use serde::Serialize;

#[derive(Serialize)]
pub struct FitRow {
    pub kernel: String,
    pub variant: String,
    pub scope: String,
    pub points: usize,
    pub overhead: String,
    pub bandwidth: String,
    pub worst: String,
}

/// A row per fit the analysis made; overheads in one unit.
pub fn build(a: &Analysis) -> Vec<FitRow> {
    let exp = &a.run.experiment;
    let unit = format::unit_for(a.fits.iter().map(|f| f.overhead_ns), Unit::Auto);
    (a.fits.iter())
        .map(|f| FitRow {
            kernel: exp.kernels[f.kernel].name.clone(),
            variant: exp.variants[f.variant].name.clone(),
            scope: match f.scope {
                Scope::Every => "every point".to_string(),
                Scope::WithinL2(l2) => format!("bytes within L2 ({})", bytes_text(l2)),
            },
            points: f.points,
            overhead: format::time(f.overhead_ns, unit),
            bandwidth: format!("{} GB/s", format::number(f.bandwidth)),
            worst: format!("{:.1}%", f.worst_pct),
        })
        .collect()
}
