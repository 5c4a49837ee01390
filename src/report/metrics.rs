//! Derived metrics (`[[report.metric]]`): per kernel, each cell's median turned into the
//! number the experiment asks for (ns per access, bytes per cycle), a column per variant.

use super::format;
use crate::analysis::Analysis;
use crate::experiment::{metric_value, point_label};
use serde::Serialize;

#[derive(Serialize)]
pub struct MetricTable {
    pub metric: String,
    pub unit: String,
    pub formula: String,
    pub kernel: String,
    pub parameters: String,
    pub columns: Vec<String>,
    pub rows: Vec<MetricRow>,
}

#[derive(Serialize)]
pub struct MetricRow {
    pub point: String,
    pub values: Vec<String>,
}

/// One table per metric and kernel; `–` where a cell did not give a median or the
/// expression no number.
pub fn build(a: &Analysis) -> Vec<MetricTable> {
    let exp = &a.run.experiment;
    let mut tables = Vec::new();
    for m in &exp.report.metrics {
        for (k, kernel) in exp.kernels.iter().enumerate() {
            let rows = kernel
                .points
                .iter()
                .zip(&kernel.launches)
                .map(|(p, launch)| MetricRow {
                    point: point_label(p),
                    values: exp
                        .variants
                        .iter()
                        .map(|v| {
                            a.median_at(k, p, &v.name)
                                .and_then(|ns| metric_value(m, p, &exp.facts, ns, launch).ok())
                                .map_or("–".into(), format::number)
                        })
                        .collect(),
                })
                .collect();
            tables.push(MetricTable {
                metric: m.name.clone(),
                unit: m.unit.clone(),
                formula: m.value.clone(),
                kernel: kernel.name.clone(),
                parameters: exp.parameter_names(k),
                columns: exp.variants.iter().map(|v| v.name.clone()).collect(),
                rows,
            });
        }
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::format;

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(format::number(1234.5), "1234");
        assert_eq!(format::number(12.345), "12.35");
        assert_eq!(format::number(0.0012345), "0.001234");
        assert_eq!(format::number(f64::NAN), "–");
    }
}
