//! `--only key=pattern,...`: run or plan a part of an experiment. Keys are `kernel`,
//! `variant` and the sweep parameters; patterns are globs (`*`, `?`), a clause keeps the
//! cells that match any of its patterns, and all clauses must hold. A run records its
//! clauses, so a resume or a re-render plans the same cells.

use super::cell::Cell;
use super::Plan;
use anyhow::{bail, Result};

/// One `--only` clause: a key and the patterns any of which a cell's value must match.
#[derive(Debug, Clone, PartialEq)]
struct Clause {
    key: String,
    patterns: Vec<String>,
}

fn parse(text: &str) -> Result<Clause> {
    let Some((key, values)) = text.split_once('=') else {
        bail!("--only {text}: write key=pattern[,pattern...], e.g. --only variant=events* or --only n=512,1024");
    };
    let patterns: Vec<String> = values
        .split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    if key.trim().is_empty() || patterns.is_empty() {
        bail!("--only {text}: write key=pattern[,pattern...], e.g. --only kernel=matmul");
    }
    Ok(Clause {
        key: key.trim().to_string(),
        patterns,
    })
}

/// Whether `text` matches the glob `pattern` (`*` any run of characters, `?` one).
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // Classic two-pointer match with backtracking to the last star.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < t.len() {
        if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

/// A cell's value for `key`, where it has one.
fn value_of(cell: &Cell, key: &str) -> Option<String> {
    match key {
        "kernel" => Some(cell.kernel_name.clone()),
        "variant" => Some(cell.variant.clone()),
        _ => cell
            .point
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.to_string()),
    }
}

impl Plan {
    /// Keeps the cells every clause of `only` matches, numbered anew; an unknown key or a
    /// selection that keeps nothing is an error that lists what there is.
    pub fn select(mut self, only: &[String]) -> Result<Plan> {
        if only.is_empty() {
            return Ok(self);
        }
        let clauses = only.iter().map(|t| parse(t)).collect::<Result<Vec<_>>>()?;
        let mut keys = vec!["kernel".to_string(), "variant".to_string()];
        for c in &self.cells {
            for (k, _) in &c.point {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
        if let Some(c) = clauses.iter().find(|c| !keys.contains(&c.key)) {
            bail!(
                "--only {}=...: no such key; the experiment's are {}",
                c.key,
                keys.join(", ")
            );
        }
        self.cells.retain(|cell| {
            clauses.iter().all(|c| {
                value_of(cell, &c.key).is_some_and(|v| c.patterns.iter().any(|p| glob(p, &v)))
            })
        });
        if self.cells.is_empty() {
            bail!(
                "--only {}: no cell matches; `runner plan EXPERIMENT` lists them",
                only.join(" --only ")
            );
        }
        Ok(self.renumbered())
    }

    /// Its cells numbered anew from 0, after some were left out.
    pub(super) fn renumbered(mut self) -> Plan {
        for (i, c) in self.cells.iter_mut().enumerate() {
            c.index = i;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_stars_and_single_characters() {
        assert!(glob("events*", "events-hot"));
        assert!(glob("events*", "events"));
        assert!(!glob("events*", "graph-events"));
        assert!(glob("*hot*", "graph-100-hot-x"));
        assert!(glob("n?", "n1"));
        assert!(!glob("n?", "n12"));
        assert!(glob("512", "512"));
        assert!(!glob("512", "5120"));
        assert!(glob("*a", "*ba"), "a star in the text is no special case");
    }

    #[test]
    fn clauses_need_a_key_and_a_pattern() {
        assert_eq!(
            parse("n=512, 1024").unwrap(),
            Clause {
                key: "n".into(),
                patterns: vec!["512".into(), "1024".into()]
            }
        );
        assert!(parse("n").is_err());
        assert!(parse("=512").is_err());
        assert!(parse("n=").is_err());
    }
}
