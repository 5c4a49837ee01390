//! The methodology table: a row per variant with what sets it apart, and what every variant
//! shares said once above it.

use super::layout::{self, Part};
use crate::analysis::Analysis;
use crate::experiment::Aspect;
use serde::Serialize;

#[derive(Serialize)]
pub struct Methodology {
    /// What every variant shares, in a sentence.
    shared: String,
    /// The variant, then each aspect in which some variant differs (split into parts where
    /// a row would be too long for a line).
    parts: Vec<Part>,
    /// Where no variant differs from another in anything said: each variant's name and
    /// description, listed without a table.
    listed: Vec<String>,
}

pub fn build(a: &Analysis) -> Methodology {
    let exp = &a.run.experiment;
    // Per variant, per column: its phrases.
    let phrases: Vec<Vec<Vec<String>>> = (exp.variants.iter())
        .map(|v| {
            let k = &v.knobs[0];
            let shows = match (k.samples_per_run(), k.process.fresh) {
                (0, Some(_)) => "first launches (median over processes)",
                (0, None) => "the first launch",
                _ => "steady samples (median)",
            };
            (Aspect::ALL.iter())
                .map(|aspect| v.describe(&exp.points, *aspect))
                .chain([vec![shows.to_string()]])
                .collect()
        })
        .collect();
    let titles: Vec<&str> = (Aspect::ALL.iter())
        .map(|a| a.title())
        .chain(["table shows"])
        .collect();
    let shared: Vec<Vec<String>> = (0..titles.len())
        .map(|c| {
            let first = phrases.first().map_or(&[][..], |p| &p[c][..]);
            (first.iter())
                .filter(|s| phrases.iter().all(|p| p[c].contains(s)))
                .cloned()
                .collect()
        })
        .collect();
    let own = |p: &[Vec<String>], c: usize| -> String {
        let own: Vec<&str> = (p[c].iter())
            .filter(|s| !shared[c].contains(s))
            .map(String::as_str)
            .collect();
        own.join("; ")
    };
    let kept: Vec<usize> = (0..titles.len())
        .filter(|&c| phrases.iter().any(|p| !own(p, c).is_empty()))
        .collect();
    let header = std::iter::once("variant".to_string())
        .chain(kept.iter().map(|&c| titles[c].to_string()))
        .collect();
    let rows: Vec<Vec<String>> = (exp.variants.iter().zip(&phrases))
        .map(|(v, p)| {
            let name = match v.description.is_empty() {
                true => format!("**{}**", v.name),
                false => format!("**{}**: {}", v.name, v.description),
            };
            std::iter::once(name)
                .chain(kept.iter().map(|&c| own(p, c)))
                .collect()
        })
        .collect();
    let last = titles.len() - 1;
    let said: Vec<String> = (0..last)
        .flat_map(|c| shared[c].clone())
        .chain(shared[last].first().map(|s| format!("tables show {s}")))
        .collect();
    let (parts, listed) = match kept.is_empty() {
        true => (Vec::new(), rows.into_iter().map(|r| r.concat()).collect()),
        false => (layout::split(header, rows, 1), Vec::new()),
    };
    Methodology {
        shared: match said.is_empty() {
            true => String::new(),
            false => format!("Every variant: {}.", said.join("; ")),
        },
        parts,
        listed,
    }
}
