//! The numbers a person's `notes.md` and `findings.md` quote, checked against the run they
//! are about, so that notes cannot go stale silently (an older run's numbers left beside a
//! new run's tables). Each number written with a unit of a reading (a time, `%`, a ratio
//! `x`, GB/s, TFLOP/s, MHz, W, °C, cycles, B/cycle/SM; sizes are the experiment's, not
//! readings) must appear in the run: in its report or `cells.md` (the notes themselves left
//! out) or among its statistics (`summary.csv`), in the same or another unit of its kind,
//! equal as rounded where the quote is written (`19 µs` is 18.98 µs; `2.79 TB/s` is 2794
//! GB/s), or without a unit where a table gives the unit in its heading. A percentage or a
//! ratio may also be the difference or the ratio of two values on one line of the report (a
//! table row) or in the rows of one sweep point, or a table column's spread, and a time the
//! difference of two such values. Not checked: numbers in code spans (settings), bounds
//! (`within 1%`, `max(1%, 0.5 µs)`), and a number with a footnote (`1.09 µs[^earlier]`, the
//! footnote saying where it comes from: another run, a bench, the post).

use super::scan::{column_spreads, durations, numbers, Kind};
use std::collections::HashMap;

/// A quote no value of the run matches.
#[derive(Debug, Clone, PartialEq)]
pub struct Stale {
    pub file: &'static str,
    pub line: usize,
    pub quote: String,
}

/// The quotes of `notes` (as (file name, text)) that the run's `report` text (the notes left
/// out), `cells` page and statistics `stats_ns` (every statistic of every cell, in ns) do
/// not show.
pub fn check(
    notes: &[(&'static str, &str)],
    report: &str,
    cells: &str,
    stats_ns: &[f64],
) -> Vec<Stale> {
    let shown = Shown::of(report, cells, stats_ns);
    let mut stale = Vec::new();
    // A footnote may be defined in either of the notes.
    let footnotes: String = notes.iter().map(|(_, t)| *t).collect::<Vec<_>>().join("\n");
    for (file, text) in notes {
        for q in numbers(text, true, &footnotes) {
            let Some((kind, scale)) = q.unit else {
                continue;
            };
            let digits = q
                .text
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.');
            let significant = digits
                .filter(char::is_ascii_digit)
                .skip_while(|c| *c == '0')
                .count();
            if !q.unchecked && !shown.has(q.value, q.decimals, significant, kind, scale) {
                stale.push(Stale {
                    file,
                    line: q.line,
                    quote: q.text,
                });
            }
        }
    }
    stale
}

/// The report's warning about stale quotes: each with its file and line.
pub fn warning(stale: &[Stale]) -> String {
    let listed: Vec<String> = (stale.iter())
        .map(|s| format!("{} ({}:{})", s.quote, s.file, s.line))
        .collect();
    format!(
        "The notes quote {} number(s) that this run's tables and statistics do not show, stale or from elsewhere: {}. Correct them against this run, or give a number from elsewhere a footnote saying where it comes from (`1.2 µs[^a]`, `[^a]: ...`).",
        stale.len(),
        listed.join(", ")
    )
}

/// What the run shows, each list sorted (absolute values): values with a unit by kind (in
/// base units), values without one, and the relative differences (%), ratios and time
/// differences of two values of one kind on one line.
struct Shown {
    by_kind: HashMap<Kind, Vec<f64>>,
    bare: Vec<f64>,
    percents: Vec<f64>,
    ratios: Vec<f64>,
    time_differences: Vec<f64>,
}

/// A line (or a point's rows) with more values than this is not searched for pairs: the
/// pairs would match almost any percentage.
const MAX_ROW_VALUES: usize = 40;

impl Shown {
    /// What `report` and `cells` show; pairs are taken in the report's rows, and in the rows
    /// of `cells.md` with six values at most (a comparison's or a phase's, not the statistics' eight).
    fn of(report: &str, cells: &str, stats_ns: &[f64]) -> Shown {
        let mut by_kind: HashMap<Kind, Vec<f64>> = HashMap::new();
        by_kind.insert(Kind::Time, stats_ns.to_vec());
        let (mut bare, mut percents, mut ratios, mut time_differences) = <_>::default();
        let mut rows: Vec<Vec<(Option<Kind>, f64)>> = Vec::new();
        for (text, paired) in [(report, true), (cells, false)] {
            let before = rows.len();
            let lines: Vec<&str> = text.lines().collect();
            // The rows of every table that share a first cell (a sweep point) form one row
            // too: two kernels' medians at one point, in two tables.
            let mut points: HashMap<&str, Vec<(Option<Kind>, f64)>> = HashMap::new();
            let mut line = 0;
            for n in numbers(text, false, "").into_iter().chain(durations(text)) {
                if n.line != line || rows.is_empty() {
                    rows.push(Vec::new());
                    line = n.line;
                }
                let kind = n.unit.map(|(kind, _)| kind);
                let value = n.value * n.unit.map_or(1.0, |(_, scale)| scale);
                match kind {
                    Some(kind) => by_kind.entry(kind).or_default().push(value),
                    None => Vec::push(&mut bare, value),
                }
                rows.last_mut().expect("pushed above").push((kind, value));
                let point = lines[n.line - 1]
                    .strip_prefix("| ")
                    .and_then(|l| l.split(" |").next());
                if let Some(point) = point.filter(|_| kind.is_some()) {
                    points.entry(point).or_default().push((kind, value));
                }
            }
            match paired {
                true => rows.extend(points.into_values()),
                // `cells.md`'s comparison rows pair this run with the earlier one; its
                // statistics rows (a median beside its spread) pair nothing.
                false => {
                    let kept: Vec<_> = rows.drain(before..).filter(|r| r.len() <= 6).collect();
                    rows.extend(kept);
                }
            }
            // A column's spread: its largest value over its smallest (`within 0.3% across
            // block sizes`), one pair per column of each table.
            for (kind, lo, hi) in column_spreads(text).into_iter().filter(|_| paired) {
                rows.push(vec![(Some(kind), lo), (Some(kind), hi)]);
            }
        }
        for row in rows.iter().filter(|r| r.len() <= MAX_ROW_VALUES) {
            for (ka, a) in row {
                for (kb, b) in row {
                    if ka != kb || a == b || *b == 0.0 {
                        continue;
                    }
                    Vec::push(&mut percents, ((a - b) / b * 100.0).abs());
                    Vec::push(&mut ratios, (a / b).abs());
                    if *ka == Some(Kind::Time) {
                        Vec::push(&mut time_differences, (a - b).abs());
                    }
                }
            }
        }
        let sorted = |mut v: Vec<f64>| {
            v.iter_mut().for_each(|x| *x = x.abs());
            v.sort_by(f64::total_cmp);
            v
        };
        Shown {
            by_kind: by_kind.into_iter().map(|(k, v)| (k, sorted(v))).collect(),
            bare: sorted(bare),
            percents: sorted(percents),
            ratios: sorted(ratios),
            time_differences: sorted(time_differences),
        }
    }

    /// Whether `value` (written with `decimals` and `significant` digits in a unit of
    /// `kind`, `scale` base units each) is shown.
    fn has(&self, value: f64, decimals: i32, significant: usize, kind: Kind, scale: f64) -> bool {
        let half = 0.5 * 10f64.powi(-decimals) * (1.0 + 1e-9);
        let within = |v: &[f64], scale: f64| {
            let lo = v.partition_point(|x| *x < (value - half) * scale);
            v.get(lo).is_some_and(|x| *x <= (value + half) * scale)
        };
        let pairs = match kind {
            Kind::Percent => within(&self.percents, 1.0),
            Kind::Ratio => within(&self.ratios, 1.0),
            Kind::Time => within(&self.time_differences, scale),
            _ => false,
        };
        // A table whose heading gives the unit shows its values bare (`| 1350–1980 | 403 |`
        // under `SM MHz` and `power W`, SM cycles, derived metrics); a bare value stands for
        // a quote of such a kind, or of three significant digits or more, which a number of
        // another kind meets by chance too rarely to matter.
        let bare_kind = matches!(
            kind,
            Kind::Clock | Kind::Power | Kind::Temperature | Kind::Cycles | Kind::BytesPerCycle
        );
        pairs
            || ((bare_kind || significant >= 3) && within(&self.bare, 1.0))
            || (self.by_kind.get(&kind)).is_some_and(|v| within(v, scale))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stale(notes: &str, report: &str) -> Vec<String> {
        check(&[("notes.md", notes)], report, "", &[])
            .into_iter()
            .map(|s| s.quote)
            .collect()
    }

    #[test]
    fn a_quote_matches_as_rounded_in_any_unit_of_its_kind() {
        let report =
            "| 256 | 18.98 µs | 25.54 µs |\n| its | 2794 GB/s (83%) |\nwall time | 9m 42s 312ms |";
        assert!(stale("hot 18.98 µs, or 19 µs, or 0.019 ms; 2.79 TB/s", report).is_empty());
        assert!(stale("the run took 9.7 min", report).is_empty());
        // The l2-flush notes before they were corrected: an older run's numbers.
        assert_eq!(
            stale("16.96 vs 23.92 µs at n = 256", report),
            ["16.96 µs", "23.92 µs"]
        );
        assert_eq!(stale("18.9 µs", report), ["18.9 µs"], "rounded as written");
    }

    #[test]
    fn a_difference_or_ratio_of_two_values_on_a_row_is_shown() {
        let report = "| 512 | 225.2 µs | 61.89 µs | 48.99 µs |";
        // (225.2 - 48.99) / 48.99 = +359.7%; 225.2 / 48.99 = 4.60x; 225.2 - 61.89 = 163.3 µs.
        assert!(stale("+360%, 4.6x faster, 163 µs of loading", report).is_empty());
        // A column's spread: (2481 - 2474) / 2474 = 0.28%.
        let column = "| 64 | 2480 GB/s |\n| 512 | 2481 GB/s |\n| 1024 | 2474 GB/s |";
        assert!(stale("within 0.3% across block sizes", column).is_empty());
        // Two kernels' tables, one point: 21.52 / 15.22 = 1.41x.
        let tables = "| 4096 | 192.0 MiB | 21.52 ms |\n\n| 4096 | 192.0 MiB | 15.22 ms |";
        assert!(stale("1.41x faster", tables).is_empty());
        assert_eq!(stale("+12%", report), ["12%"]);
    }

    #[test]
    fn unitless_table_cells_statistics_and_footnotes() {
        let report = "| cell | SM MHz | power W | runs |\n| a | 1350–1980 | 403 | 10 |";
        assert!(stale("the clock fell to 1350 MHz at 403 W", report).is_empty());
        assert_eq!(
            stale("10 s later", report),
            ["10 s"],
            "a count is not a time"
        );
        let stats = [786_548.26];
        assert!(check(&[("n", "786.5 µs")], "", "", &stats).is_empty());
        assert!(stale(
            "1.09 µs[^before] in the pair before\n\n[^before]: 5350eea, 3.3 µs",
            ""
        )
        .is_empty());
    }
}
