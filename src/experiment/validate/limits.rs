//! Limits on the experiment file as a whole, before any table is read: every string and
//! key of bounded length, and a place for TOML's own refusals that come without one (a
//! key or value nested deeper than its reader follows).

use super::validator::Validator;
use crate::experiment::error::ConfigError;
use std::ops::Range;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// The longest string or key an experiment may hold, in bytes: a title, a description, a
/// name, an NVRTC option, an environment value.
pub const MAX_STRING_BYTES: usize = 4096;

impl Validator<'_> {
    /// Refuses a string or key longer than `MAX_STRING_BYTES`, at its place.
    pub(super) fn strings_within_limit(&self) -> Result<(), ConfigError> {
        // Where the document does not parse, the serde pass says why.
        let Ok(doc) = DeTable::parse(self.text) else {
            return Ok(());
        };
        match long_string(doc.get_ref()) {
            None => Ok(()),
            Some((span, len)) => Err(ConfigError::at(
                self.path,
                self.text,
                Some(span),
                format!("a string of {len} bytes, more than the {MAX_STRING_BYTES} the runner takes"),
            )
            .with_hint("shorten it: a longer title, description, option or value is a mistake (or belongs in a file of its own, as findings.md)")),
        }
    }
}

/// The first string or key too long, with its place and length.
fn long_string(table: &DeTable) -> Option<(Range<usize>, usize)> {
    table.iter().find_map(|(key, value)| {
        let len = key.get_ref().len();
        (len > MAX_STRING_BYTES)
            .then(|| (key.span(), len))
            .or_else(|| long_value(value))
    })
}

fn long_value(value: &Spanned<DeValue>) -> Option<(Range<usize>, usize)> {
    match value.get_ref() {
        DeValue::String(s) if s.len() > MAX_STRING_BYTES => Some((value.span(), s.len())),
        DeValue::Array(items) => items.iter().find_map(long_value),
        DeValue::Table(t) => long_string(t),
        _ => None,
    }
}

/// Where a TOML error without a place most likely lies: the line that nests deepest (the
/// most `.`, `[` and `{` before its value ends), as the reader's recursion limit meets it.
pub(super) fn deepest_line(text: &str) -> Option<Range<usize>> {
    let mut offset = 0;
    let mut deepest: Option<(usize, Range<usize>)> = None;
    for line in text.split_inclusive('\n') {
        let depth = line
            .chars()
            .filter(|c| matches!(c, '.' | '[' | '{'))
            .count();
        if depth > 0 && deepest.as_ref().is_none_or(|(d, _)| depth > *d) {
            deepest = Some((depth, offset..offset + line.trim_end().len()));
        }
        offset += line.len();
    }
    deepest.map(|(_, span)| span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_string_or_key_is_found_at_its_place() {
        let long = "x".repeat(MAX_STRING_BYTES + 1);
        let text = format!("a = 1\n[t]\nb = [\"ok\", \"{long}\"]\n");
        let doc = DeTable::parse(&text).unwrap();
        let (span, len) = long_string(doc.get_ref()).unwrap();
        assert_eq!(len, MAX_STRING_BYTES + 1);
        assert_eq!(&text[span.start..span.start + 2], "\"x");
        let text = format!("\"{long}\" = 1\n");
        let doc = DeTable::parse(&text).unwrap();
        assert!(long_string(doc.get_ref()).is_some());
        let ok = "a = \"x\"\n";
        assert!(long_string(DeTable::parse(ok).unwrap().get_ref()).is_none());
    }

    #[test]
    fn the_deepest_line_is_the_most_nested() {
        let text = "a = 1\n[x]\nb.c.d.e = 1\nf = 2\n";
        let span = deepest_line(text).unwrap();
        assert_eq!(&text[span], "b.c.d.e = 1");
    }
}
