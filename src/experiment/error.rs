//! Errors in an experiment file, located by file, line and column so the user can fix them.

use std::ops::Range;
use std::path::{Path, PathBuf};

/// A mistake in an experiment file: where it is, what is wrong, and what would be valid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{}: {message}{}", .path.display(), place(*.position), hint_line(.hint))]
pub struct ConfigError {
    pub path: PathBuf,
    /// 1-based line and column; `None` when the mistake has no single place (a missing key).
    pub position: Option<(usize, usize)>,
    pub message: String,
    pub hint: Option<String>,
}

impl ConfigError {
    /// An error at a byte span of `text` (the file's contents).
    pub fn at(
        path: &Path,
        text: &str,
        span: Option<Range<usize>>,
        message: impl Into<String>,
    ) -> Self {
        ConfigError {
            path: path.to_path_buf(),
            position: span.map(|s| line_col(text, s.start)),
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// `:line:col` after a [`ConfigError`]'s file, where it has a place.
fn place(position: Option<(usize, usize)>) -> String {
    position.map_or_else(String::new, |(line, col)| format!(":{line}:{col}"))
}

/// A [`ConfigError`]'s hint on a line of its own, where it has one.
fn hint_line(hint: &Option<String>) -> String {
    hint.as_ref()
        .map_or_else(String::new, |h| format!("\n  hint: {h}"))
}

/// What is wrong with a value of the file, found by code that does not know where the value
/// sits (an expression, a type, an init, a sweep axis, a `.npy` header); the message names
/// the fix. The caller, which holds the value's span, makes it a [`ConfigError`] there.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct BadValue(pub String);

/// The message of the [`ConfigError`] that places it (`ConfigError::at` and the
/// validators' `err` take their message as `impl Into<String>`).
impl From<BadValue> for String {
    fn from(e: BadValue) -> String {
        e.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 9), (2, 4));
    }

    #[test]
    fn display_names_file_line_column_and_hint() {
        let e =
            ConfigError::at(Path::new("x.toml"), "a\nbc", Some(3..4), "bad").with_hint("do this");
        assert_eq!(e.to_string(), "x.toml:2:2: bad\n  hint: do this");
    }
}
