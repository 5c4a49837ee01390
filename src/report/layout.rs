//! Tables laid out for a page: one wider than a line may be is split by its columns into
//! parts, each repeating the leading key columns (the sweep point), or, with one row only,
//! turned on its side, so that no line of a report runs past [`MAX_LINE`] characters however
//! many variants an experiment has.

use super::format::MAX_LINE;
use serde::Serialize;

/// One part of a table: its header and its rows, each as long as the header.
#[derive(Serialize)]
pub struct Part {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// `header` and `rows` split into parts whose lines fit [`MAX_LINE`], the first `keys`
/// columns in every part; a column too wide to share a line takes a part of its own.
pub fn split(header: Vec<String>, rows: Vec<Vec<String>>, keys: usize) -> Vec<Part> {
    let lines: Vec<&Vec<String>> = std::iter::once(&header).chain(&rows).collect();
    // A line `| a | b |` takes each cell's width plus 3, plus 1.
    let cell = |line: &Vec<String>, c: usize| line[c].chars().count() + 3;
    let keys = keys.min(header.len());
    let base: Vec<usize> = (lines.iter())
        .map(|l| 1 + (0..keys).map(|c| cell(l, c)).sum::<usize>())
        .collect();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut used = base.clone();
    for c in keys..header.len() {
        let fits = (lines.iter().zip(&used)).all(|(l, u)| u + cell(l, c) <= MAX_LINE);
        match groups.last_mut() {
            Some(g) if fits => g.push(c),
            _ => {
                groups.push(vec![c]);
                used.clone_from(&base);
            }
        }
        for (u, l) in used.iter_mut().zip(&lines) {
            *u += cell(l, c);
        }
    }
    if groups.is_empty() {
        groups.push(Vec::new());
    }
    // One row too wide for a line (a single sweep point under many variants) reads better
    // turned on its side: a line per column.
    if let ([row], true) = (&rows[..], groups.len() > 1) {
        let pairs = (1..header.len()).map(|c| vec![header[c].clone(), row[c].clone()]);
        return vec![Part {
            header: vec![header[0].clone(), row[0].clone()],
            rows: pairs.collect(),
        }];
    }
    let pick = |row: &[String], g: &[usize]| -> Vec<String> {
        (0..keys)
            .chain(g.iter().copied())
            .map(|c| row[c].clone())
            .collect()
    };
    groups
        .iter()
        .map(|g| Part {
            header: pick(&header, g),
            rows: rows.iter().map(|r| pick(r, g)).collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(cells: &[String]) -> usize {
        format!("| {} |", cells.join(" | ")).chars().count()
    }

    #[test]
    fn a_wide_table_splits_by_columns_and_repeats_its_keys() {
        let header: Vec<String> = std::iter::once("n".to_string())
            .chain((0..30).map(|i| format!("variant-{i}")))
            .collect();
        let rows: Vec<Vec<String>> = (0..4)
            .map(|r| {
                std::iter::once(format!("{}", 256 << r))
                    .chain((0..30).map(|_| "1234 µs".to_string()))
                    .collect()
            })
            .collect();
        let parts = split(header, rows, 1);
        assert!(parts.len() > 1);
        let columns: usize = parts.iter().map(|p| p.header.len() - 1).sum();
        assert_eq!(columns, 30, "every column in exactly one part");
        for p in &parts {
            assert_eq!(p.header[0], "n");
            assert_eq!(p.rows[3][0], "2048");
            assert!(std::iter::once(&p.header)
                .chain(&p.rows)
                .all(|r| line(r) <= MAX_LINE));
        }
    }

    #[test]
    fn one_row_too_wide_turns_on_its_side() {
        let header: Vec<String> = std::iter::once("n".to_string())
            .chain((0..30).map(|i| format!("variant-{i}")))
            .collect();
        let row: Vec<String> = std::iter::once("1024".to_string())
            .chain((0..30).map(|i| format!("{i}.000 ms")))
            .collect();
        let parts = split(header, vec![row], 1);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].header, ["n", "1024"]);
        assert_eq!(parts[0].rows[29], ["variant-29", "29.000 ms"]);
    }

    #[test]
    fn a_narrow_table_stays_whole() {
        let parts = split(
            vec!["n".into(), "hot".into()],
            vec![vec!["1".into(), "2 µs".into()]],
            1,
        );
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].header, ["n", "hot"]);
    }
}
