//! Findings about cells: those not trusted, those of kernels written to be caught, those
//! flagged for their clocks, and, where no other rule speaks, each kernel's range.

use super::finding::{Finding, NamedCell, Range, Reading, Trusted};
use crate::analysis::facts::Facts;
use crate::analysis::trust::Verdict;
use crate::experiment::Experiment;
use crate::plan::Cell;

/// The longest reason a finding quotes, in characters; the trust table has it whole.
const MAX_REASON: usize = 140;

/// `reason` up to its first `;`, at most [`MAX_REASON`] characters.
fn short(reason: &str) -> String {
    clipped(reason.split(';').next().unwrap_or("").trim(), MAX_REASON)
}

/// `text` whole where it has at most `room` characters, else cut at a space within them,
/// ending `…`.
pub fn clipped(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_string();
    }
    let cut: String = text.chars().take(room.saturating_sub(1)).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{}…", cut.trim_end_matches([',', ':', ';']))
}

/// The cell's id without its kernel: `n=512/hot`.
fn short_id(c: &Cell) -> String {
    (c.id.strip_prefix(&format!("{}/", c.kernel_name)))
        .unwrap_or(&c.id)
        .to_string()
}

/// Per kernel and verdict, the cells that did not end as their kernel expects, in plan
/// order; `verdicts`: each measured cell's.
pub fn untrusted(exp: &Experiment, verdicts: &[(&Cell, &Verdict)]) -> Vec<Finding> {
    let caught = |c: &Cell| c.kernel.is_some_and(|k| exp.kernels[k].expect_caught);
    let mut out: Vec<Finding> = Vec::new();
    for (c, v) in verdicts {
        if v.as_expected(caught(c)) != Some(false) {
            continue;
        }
        let word = match v {
            Verdict::Ok => "passed",
            v => v.word(),
        };
        let same = |f: &&mut Finding| matches!(f, Finding::Untrusted { kernel, word: w, .. } if *kernel == c.kernel_name && *w == word);
        match out.iter_mut().find(|f| same(f)) {
            Some(Finding::Untrusted { cells, .. }) => cells.push(short_id(c)),
            _ => out.push(Finding::Untrusted {
                kernel: c.kernel_name.clone(),
                word,
                cells: vec![short_id(c)],
                of: (verdicts.iter())
                    .filter(|(x, _)| x.kernel_name == c.kernel_name)
                    .count(),
                reason: v
                    .reason_after_word()
                    .map_or_else(|| "the kernel was written to be caught".into(), short),
            }),
        }
    }
    out
}

/// Where the experiment has kernels written to be caught: how many of their cells were,
/// by verdict.
pub fn caught(exp: &Experiment, verdicts: &[(&Cell, &Verdict)]) -> Option<Finding> {
    let theirs: Vec<&Verdict> = (verdicts.iter())
        .filter(|(c, _)| c.kernel.is_some_and(|k| exp.kernels[k].expect_caught))
        .map(|(_, v)| *v)
        .collect();
    let words = ["failed", "suspect", "impossible"];
    let caught: Vec<(&'static str, usize)> = (words.into_iter())
        .map(|w| (w, theirs.iter().filter(|v| v.word() == w).count()))
        .filter(|(_, n)| *n > 0)
        .collect();
    (!caught.is_empty()).then(|| Finding::Caught {
        kernels: exp.kernels.iter().filter(|k| k.expect_caught).count(),
        cells: theirs.len(),
        caught,
    })
}

/// A trusted cell's flags: its clocks' (the SM clock moved or strayed, the GPU throttled)
/// and a wait kernel too short for its timed regions; and the lowest SM clock it ran at.
pub fn flags(a: &Facts, c: &Cell) -> (Vec<String>, Option<u32>) {
    let clocks = a.clocks.get(&c.index).cloned().unwrap_or_default();
    let mut flags = clocks.flags;
    let records = a.records.get(&c.index).map_or(&[][..], Vec::as_slice);
    flags.extend(crate::protocol::QueueRecord::flag(
        records.iter().filter_map(|r| r.queue.as_ref()),
    ));
    (flags, clocks.sm_mhz.map(|(lo, _)| lo))
}

/// The trusted cells with flags, of all trusted cells; `flags`: each trusted cell's id,
/// flags and lowest SM clock. The example is the flagged cell with the most flags, the
/// lowest clock breaking a tie (the first where none).
pub fn flagged(flags: &[(String, Vec<String>, Option<u32>)]) -> Option<Finding> {
    let cells: Vec<_> = flags.iter().filter(|(_, f, _)| !f.is_empty()).collect();
    let rank = |c: &&&(String, Vec<String>, Option<u32>)| {
        (c.1.len(), std::cmp::Reverse(c.2.unwrap_or(u32::MAX)))
    };
    let example = (cells.iter().rev()).max_by_key(rank)?;
    Some(Finding::Flagged {
        cells: cells.iter().map(|(id, _, _)| id.clone()).collect(),
        of: flags.len(),
        example: (example.0.clone(), example.1.clone()),
    })
}

/// The trusted cells the per-cell budget stopped before their sample count (a stop the
/// experiment asked for, `stop = {...}`, is no news), with the first run's reason.
pub fn stopped(a: &Facts, trusted: &[&Cell]) -> Option<Finding> {
    let cells: Vec<(String, String)> = (trusted.iter())
        .filter_map(|c| {
            let records = a.records.get(&c.index)?;
            let why = (records.iter())
                .filter_map(|r| r.stopped.as_ref())
                .find(|s| s.by_budget())?;
            Some((c.id.clone(), why.to_string()))
        })
        .collect();
    let of = trusted.len();
    (!cells.is_empty()).then_some(Finding::Stopped { cells, of })
}

/// Per kernel with trusted cells: its range under the first variant that has any.
pub fn ranges(t: &Trusted) -> Vec<Finding> {
    let exp = t.exp;
    let mut out = Vec::new();
    for (k, kernel) in exp.kernels.iter().enumerate() {
        let cells = t.cells(k);
        let Some(&(_, first, _)) = cells.first() else {
            continue;
        };
        let reading = |(p, v, ns): &(&crate::experiment::Point, &str, f64)| Reading {
            at: NamedCell::new(&kernel.name, p, v),
            ns: *ns,
            against_ns: None,
        };
        let under: Vec<Reading> = (cells.iter())
            .filter(|c| c.1 == first)
            .map(reading)
            .collect();
        let fastest = (under.iter()).min_by(|x, y| x.ns.total_cmp(&y.ns));
        let slowest = (under.iter()).max_by(|x, y| x.ns.total_cmp(&y.ns));
        let last = cells.last().map(|c| c.0);
        let at_last: Vec<Reading> = (cells.iter())
            .filter(|c| Some(c.0) == last)
            .map(reading)
            .collect();
        let variants = (at_last.len() > 1).then(|| {
            let by = |x: &&Reading, y: &&Reading| x.ns.total_cmp(&y.ns);
            let (lo, hi) = (at_last.iter().min_by(by), at_last.iter().max_by(by));
            (lo.cloned(), hi.cloned())
        });
        if let (Some(fastest), Some(slowest)) = (fastest, slowest) {
            out.push(Finding::Range(Range {
                cells: under.len(),
                fastest: fastest.clone(),
                slowest: slowest.clone(),
                variants: variants.and_then(|(lo, hi)| lo.zip(hi)),
            }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{experiment, fake, with};
    use super::*;
    use crate::plan::Plan;

    #[test]
    fn untrusted_cells_are_grouped_by_kernel_and_verdict_and_caught_ones_counted() {
        let exp = experiment(
            "n = [1, 2]",
            &[("k", ""), ("cheat", "expect = \"caught\"")],
            &[("hot", "")],
            "",
        );
        let plan = Plan::new(&exp).unwrap();
        let long = format!("C: max abs error 1.5e1; {}", "x ".repeat(100));
        let (failed, ok) = (Verdict::Failed(long), Verdict::Ok);
        let suspect = Verdict::Suspect("suspect: 30x".into());
        let verdicts: Vec<(&Cell, &Verdict)> = vec![
            (&plan.cells[0], &failed),
            (&plan.cells[1], &failed),
            (&plan.cells[2], &suspect),
            (&plan.cells[3], &ok),
        ];
        let found = untrusted(&exp, &verdicts);
        assert_eq!(
            found,
            [
                Finding::Untrusted {
                    kernel: "k".into(),
                    word: "failed",
                    cells: vec!["n=1/hot".into(), "n=2/hot".into()],
                    of: 2,
                    reason: "C: max abs error 1.5e1".into(),
                },
                Finding::Untrusted {
                    kernel: "cheat".into(),
                    word: "passed",
                    cells: vec!["n=2/hot".into()],
                    of: 2,
                    reason: "the kernel was written to be caught".into(),
                }
            ]
        );
        assert_eq!(
            caught(&exp, &verdicts),
            Some(Finding::Caught {
                kernels: 1,
                cells: 2,
                caught: vec![("suspect", 1)],
            })
        );
        // Cut at a space, `…` included: within MAX_REASON.
        let cut = short(&format!("{} tail", "a ".repeat(80)));
        assert!(cut.ends_with("a…"), "{cut}");
        assert_eq!(cut.chars().count(), 138);
    }

    #[test]
    fn the_flagged_example_has_the_most_flags_then_the_lowest_clock() {
        let flags = vec![
            ("a".to_string(), vec![], Some(1980)),
            (
                "b".to_string(),
                vec!["SM clock moved".to_string()],
                Some(1700),
            ),
            (
                "c".to_string(),
                vec!["SM clock moved".to_string()],
                Some(1500),
            ),
            (
                "d".to_string(),
                vec!["wait kernel too short".to_string()],
                None,
            ),
        ];
        let Some(Finding::Flagged { cells, of, example }) = flagged(&flags) else {
            panic!()
        };
        assert_eq!((cells.len(), of, example.0.as_str()), (3, 4, "c"));
        assert_eq!(flagged(&flags[..1]), None);
    }

    #[test]
    fn a_range_spans_the_first_variant_and_the_variants_at_the_last_point() {
        let exp = experiment(
            "n = [1, 2, 3]",
            &[("k", "")],
            &[("hot", ""), ("cold", "cache = \"flush\"")],
            "",
        );
        let f = fake(&[
            ("k/n=1/hot", 5.0),
            ("k/n=2/hot", 3.0),
            ("k/n=3/hot", 9.0),
            ("k/n=3/cold", 12.0),
        ]);
        let found = with(&exp, &f, ranges);
        let [Finding::Range(r)] = found.as_slice() else {
            panic!()
        };
        assert_eq!((r.cells, r.fastest.ns, r.slowest.ns), (3, 3.0, 9.0));
        let (lo, hi) = r.variants.clone().unwrap();
        assert_eq!((lo.at.variant.as_str(), hi.ns), ("hot", 12.0));
    }

    #[test]
    fn a_text_is_whole_where_it_fits_and_cut_at_a_space_where_not() {
        assert_eq!(clipped("pauses read 12 µs", 40), "pauses read 12 µs");
        let cut = clipped("pauses read 374.752 µs, timed launches 340.496 µs", 30);
        assert_eq!(cut, "pauses read 374.752 µs…");
        assert!(cut.chars().count() <= 30);
    }
}
