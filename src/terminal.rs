//! What the runner says on the terminal beside its results: warnings and progress, on
//! standard error. A line that cannot be written (`2>/dev/full`, a reader gone from a pipe)
//! is dropped, never a panic: the exit status still says how the command ended. Control
//! characters are shown escaped, since text in a line may come from a run folder or another
//! program: it must not move the cursor, clear the screen, retitle the window or forge a
//! line of its own.

use std::borrow::Cow;
use std::io::Write;

/// Writes `text` and a newline to standard error, its control characters escaped.
pub fn tell(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{}", visible(text));
}

/// `text` with its control characters (but newlines and tabs) written as `\u{1b}`.
pub fn visible(text: &str) -> Cow<'_, str> {
    let shown = |c: char| !c.is_control() || c == '\n' || c == '\t';
    match text.chars().all(shown) {
        true => Cow::Borrowed(text),
        false => Cow::Owned(
            text.chars()
                .map(|c| match shown(c) {
                    true => c.to_string(),
                    false => c.escape_unicode().to_string(),
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert_eq!(visible("plain\n\tline"), "plain\n\tline");
        let title = "pid 7 \u{1b}]0;owned\u{7} \u{1b}[2J\rpid 1";
        assert_eq!(
            visible(title),
            "pid 7 \\u{1b}]0;owned\\u{7} \\u{1b}[2J\\u{d}pid 1"
        );
        assert_eq!(visible("\u{9b}31m"), "\\u{9b}31m");
    }
}
